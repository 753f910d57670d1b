//! Thread, block and grid coordinates, per target.

use super::super::super::kernel_ir::{Dim, Intrinsic};
use super::builder::FnBuilder;
use super::intrinsics::not_in_family;
use crate::abi::TargetKind;

/// Which coordinate.
#[derive(Clone, Copy, Debug)]
pub(super) enum Coord {
    /// `threadIdx`.
    ThreadIdx,
    /// `blockIdx`.
    BlockIdx,
    /// `blockDim`.
    BlockDim,
    /// `gridDim`.
    GridDim,
}

impl FnBuilder<'_> {
    /// `thread_idx_x()` .. `grid_dim_z()`.
    pub(super) fn lower_ids(&mut self, op: &Intrinsic) -> Result<String, String> {
        match op {
            Intrinsic::ThreadIdx(d) => self.coord(Coord::ThreadIdx, *d),
            Intrinsic::BlockIdx(d) => self.coord(Coord::BlockIdx, *d),
            Intrinsic::BlockDim(d) => self.coord(Coord::BlockDim, *d),
            Intrinsic::GridDim(d) => self.coord(Coord::GridDim, *d),
            other => Err(not_in_family(other)),
        }
    }

    pub(super) fn coord(&mut self, coord: Coord, dim: Dim) -> Result<String, String> {
        match self.arch().kind() {
            TargetKind::Amdgpu => Ok(self.amdgpu_coord(coord, dim)),
            TargetKind::Nvptx => Ok(self.ptx_coord(coord, dim)),
            TargetKind::Cpu => self.cpu_coord(coord, dim),
        }
    }
}
