//! B in the other layout: the fused GEMMs' kernel for a device takes B one way
//! (`warpgroup_256` on Hopper: Bᵀ; `staged_128` on other GPUs: `k x n`), and a B given
//! the other way is transposed into the communicator's workspace first.

/// The transpose kernel.
#[iris::kernels]
pub mod transpose_kernels {
    use iris::prelude::*;

    /// `dst` (`cols x rows`, row-major) = `src` (`rows x cols`, row-major) transposed,
    /// through shared memory a 32 x 32 tile a block (a padded row of 33, so that the
    /// column reads fall in different banks): each thread reads four elements along a
    /// row of `src` and writes four along a row of `dst`. Launch with 256 threads and
    /// `rows / 32 · cols / 32` blocks; `rows` and `cols` multiples of 32.
    #[kernel(instances(T = [bf16, f16]))]
    pub fn transpose_32<T: MmaElement>(src: *const T, dst: *mut T, rows: u32, cols: u32) {
        let across = cols / 32;
        let (r0, c0) = (block_idx_x() / across * 32, block_idx_x() % across * 32);
        let tile = shared_array::<T, 1056>(); // 32 rows x 33
        let (x, y) = (thread_idx_x() % 32, thread_idx_x() / 32);
        for i in 0..4 {
            let r = y + i as u32 * 8;
            let at = (r0 + r) as u64 * cols as u64 + (c0 + x) as u64;
            unsafe { *tile.add((r * 33 + x) as usize) = *src.add(at as usize) };
        }
        sync_threads();
        for i in 0..4 {
            let r = y + i as u32 * 8;
            let at = (c0 + r) as u64 * rows as u64 + (r0 + x) as u64;
            unsafe { *dst.add(at as usize) = *tile.add((x * 33 + r) as usize) };
        }
    }
}
