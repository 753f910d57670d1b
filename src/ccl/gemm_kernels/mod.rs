//! The tiled GEMM kernels of the fused matrix operations (`ccl::all_gather_matmul`, ..),
//! also what `examples/gemm.rs` and tests/matrix.rs run:
//! - [`staged_kernels`] (`staged.rs`): `mma` on the matrix units (`mma.sync` on NVIDIA,
//!   MFMA on AMD), 128 x 128 tiles of C, B as `k x n`;
//! - [`warpgroup_kernels`] (`warpgroup.rs`): Hopper's warpgroup matrix operations (`wgmma`),
//!   128 x 256 tiles, B given transposed (`n x k`, a `torch.nn.Linear` weight);
//!
//! each as a plain GEMM and as its two fused forms (A's rows gathered from every rank as
//! the blocks read them; each tile of a partial product stored straight into the rank
//! that owns its rows), and the all-gather GEMM's copy-ahead form for ranks on separate
//! devices ([`ahead`], `copy_ahead.rs`). Also the order in which blocks take their tiles
//! ([`grouped`]), and B's transpose into the layout of the device's kernel
//! ([`transpose_kernels`], `transpose.rs`).

/// Grouped tile order for L2.
#[iris::device]
pub mod grouped {
    use iris::prelude::*;

    /// The first row and column of this block's `128 x width` tile of C (`width` 128 or
    /// 256, `n` a multiple of it): blocks go through the tiles in groups of eight block
    /// rows, down each column of a group before the next, so the blocks running at once
    /// read a few of B's column blocks (kept in L2) rather than all of them.
    pub fn block_tile(n: u32, width: u32) -> [u32; 2] {
        tile_of(block_idx_x(), grid_dim_x() / (n / width), n, width)
    }

    /// [`block_tile`]'s tile for task `id` of `blocks_m * (n / width)`.
    pub fn tile_of(id: u32, blocks_m: u32, n: u32, width: u32) -> [u32; 2] {
        let blocks_n = n / width;
        let per_group = 8 * blocks_n;
        let first = (id / per_group) * 8;
        let rows = min(blocks_m - first, 8u32);
        let within = id % per_group;
        [(first + within % rows) * 128, (within / rows) * width]
    }
}

// After the library: its units use it.
#[macro_use]
mod copy_ahead;
mod staged;
mod transpose;
mod warpgroup;

pub use copy_ahead::ahead;
pub use staged::staged_kernels;
pub use transpose::transpose_kernels;
pub use warpgroup::warpgroup_kernels;
