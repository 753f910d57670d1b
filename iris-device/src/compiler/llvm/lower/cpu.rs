//! CPU specifics: coordinates and the barrier come from the launch context
//! (`abi::CpuLaunchContext`, passed to every function as `%ctx`).

use super::super::super::kernel_ir::Dim;
use super::builder::FnBuilder;
use super::ids::Coord;

/// Offset of `shared` in `CpuLaunchContext`.
pub(super) const SHARED_OFFSET: u32 = 48;
/// Offset of `barrier`.
const BARRIER_OFFSET: u32 = 56;
/// Offset of `barrier_state`.
const BARRIER_STATE_OFFSET: u32 = 64;
/// Offset of `now_ns`.
const NOW_NS_OFFSET: u32 = 72;
/// Offset of `sleep_ns`.
const SLEEP_NS_OFFSET: u32 = 80;

impl FnBuilder<'_> {
    /// The launch context pointer (an error outside the CPU target).
    pub fn cpu_ctx(&self) -> Result<String, String> {
        self.ctx
            .clone()
            .ok_or_else(|| "the CPU launch context is missing".to_string())
    }

    /// A field of the launch context at `offset`.
    pub fn cpu_ctx_field(&mut self, ty: &str, offset: u32, align: u32) -> Result<String, String> {
        let ctx = self.cpu_ctx()?;
        let p = self.def(&format!(
            "getelementptr inbounds i8, ptr {ctx}, i64 {offset}"
        ));
        Ok(self.def(&format!("load {ty}, ptr {p}, align {align}")))
    }

    /// A coordinate: `[3 x u32]` arrays in the order thread, block, block size, grid size.
    pub fn cpu_coord(&mut self, coord: Coord, dim: Dim) -> Result<String, String> {
        let group = match coord {
            Coord::ThreadIdx => 0,
            Coord::BlockIdx => 1,
            Coord::BlockDim => 2,
            Coord::GridDim => 3,
        };
        self.cpu_ctx_field("i32", (group * 3 + dim.index() as u32) * 4, 4)
    }

    /// `ctx->now_ns()`.
    pub fn cpu_now_ns(&mut self) -> Result<String, String> {
        let f = self.cpu_ctx_field("ptr", NOW_NS_OFFSET, 8)?;
        Ok(self.def(&format!("call i64 {f}()")))
    }

    /// `ctx->sleep_ns(ns)`, `ns` an `i32`.
    pub fn cpu_sleep_ns(&mut self, ns: &str) -> Result<(), String> {
        let f = self.cpu_ctx_field("ptr", SLEEP_NS_OFFSET, 8)?;
        let wide = self.def(&format!("zext i32 {ns} to i64"));
        self.inst(&format!("call void {f}(i64 {wide})"));
        Ok(())
    }

    /// `ctx->barrier(ctx->barrier_state)`.
    pub fn cpu_barrier(&mut self) -> Result<(), String> {
        let f = self.cpu_ctx_field("ptr", BARRIER_OFFSET, 8)?;
        let state = self.cpu_ctx_field("ptr", BARRIER_STATE_OFFSET, 8)?;
        self.inst(&format!("call void {f}(ptr {state})"));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::abi::CpuLaunchContext;
    use std::mem::offset_of;

    #[test]
    fn offsets_match_the_launch_context() {
        assert_eq!(offset_of!(CpuLaunchContext, shared), SHARED_OFFSET as usize);
        assert_eq!(
            offset_of!(CpuLaunchContext, barrier),
            BARRIER_OFFSET as usize
        );
        assert_eq!(
            offset_of!(CpuLaunchContext, barrier_state),
            BARRIER_STATE_OFFSET as usize
        );
        assert_eq!(offset_of!(CpuLaunchContext, now_ns), NOW_NS_OFFSET as usize);
        assert_eq!(
            offset_of!(CpuLaunchContext, sleep_ns),
            SLEEP_NS_OFFSET as usize
        );
        use super::super::warp::{
            WARP_BALLOT_OFFSET, WARP_MMA_OFFSET, WARP_OFFSET, WARP_SHUFFLE_OFFSET,
        };
        assert_eq!(
            offset_of!(CpuLaunchContext, warp_mma),
            WARP_MMA_OFFSET as usize
        );
        assert_eq!(offset_of!(CpuLaunchContext, warp), WARP_OFFSET as usize);
        assert_eq!(
            offset_of!(CpuLaunchContext, warp_shuffle),
            WARP_SHUFFLE_OFFSET as usize
        );
        assert_eq!(
            offset_of!(CpuLaunchContext, warp_ballot),
            WARP_BALLOT_OFFSET as usize
        );
    }
}
