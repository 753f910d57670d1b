//! Thread and block coordinates, as in CUDA and HIP.

use super::device_only;

macro_rules! coordinate {
    ($($name:ident: $doc:literal),* $(,)?) => {
        $(
            #[doc = $doc]
            #[inline(always)]
            pub fn $name() -> u32 {
                device_only(stringify!($name))
            }
        )*
    };
}

coordinate! {
    thread_idx_x: "Index of this thread within its block, x dimension (`threadIdx.x`).",
    thread_idx_y: "Index of this thread within its block, y dimension (`threadIdx.y`).",
    thread_idx_z: "Index of this thread within its block, z dimension (`threadIdx.z`).",
    block_idx_x: "Index of this block within the grid, x dimension (`blockIdx.x`).",
    block_idx_y: "Index of this block within the grid, y dimension (`blockIdx.y`).",
    block_idx_z: "Index of this block within the grid, z dimension (`blockIdx.z`).",
    block_dim_x: "Threads per block, x dimension (`blockDim.x`).",
    block_dim_y: "Threads per block, y dimension (`blockDim.y`).",
    block_dim_z: "Threads per block, z dimension (`blockDim.z`).",
    grid_dim_x: "Blocks in the grid, x dimension (`gridDim.x`).",
    grid_dim_y: "Blocks in the grid, y dimension (`gridDim.y`).",
    grid_dim_z: "Blocks in the grid, z dimension (`gridDim.z`).",
}

/// Waits until every thread of the block has reached this point, and makes their
/// block-shared and global writes before it visible to each other (`__syncthreads`).
#[inline(always)]
pub fn sync_threads() {
    device_only("sync_threads")
}
