//! The order in which the GEMM kernels of `examples/gemm.rs` take their tiles of C, a
//! device library shared by their units (`staged_gemm.rs`, `warpgroup_gemm.rs`).

/// Grouped tile order for L2.
#[iris::device]
pub mod grouped {
    use iris::prelude::*;

    /// The first row and column of this block's `128 x width` tile of C (`width` 128 or
    /// 256, `n` a multiple of it): blocks go through the tiles in groups of eight block
    /// rows, down each column of a group before the next, so the blocks running at once
    /// read a few of B's column blocks (kept in L2) rather than all of them.
    pub fn block_tile(n: u32, width: u32) -> [u32; 2] {
        let blocks_n = n / width;
        let blocks_m = grid_dim_x() / blocks_n;
        let id = block_idx_x();
        let per_group = 8 * blocks_n;
        let first = (id / per_group) * 8;
        let rows = min(blocks_m - first, 8u32);
        let within = id % per_group;
        [(first + within % rows) * 128, (within / rows) * width]
    }
}
