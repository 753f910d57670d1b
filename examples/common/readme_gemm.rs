//! The guide's matrix example (docs/guide/06-matrix-units.md; the README held it before),
//! one definition for `tests/matrix.rs` and `benches/cpu_blocks.rs`.

#[iris::kernels]
pub mod readme {
    use iris::prelude::*;

    /// The guide's example: one 32 x 32 block of C per warp, a 2 x 2 array of
    /// accumulators.
    #[kernel(instances(T = [bf16, f16]))]
    pub fn readme_gemm<T: MmaElement>(
        a: *const T,
        b: *const T,
        c: *mut f32,
        m: u32,
        n: u32,
        k: u32,
    ) {
        let warp = (block_idx_x() * block_dim_x() + thread_idx_x()) / warp_size();
        let (r0, c0) = ((warp / (n / 32)) * 32, (warp % (n / 32)) * 32);
        if r0 < m {
            let mut acc = [[mma_zero(); 2]; 2];
            let mut k0 = 0;
            while k0 < k {
                for i in 0..2 {
                    let fa = mma_load_a(
                        unsafe { a.add(((r0 + 16 * i as u32) * k + k0) as usize) },
                        k,
                    );
                    for j in 0..2 {
                        let fb =
                            mma_load_b(unsafe { b.add((k0 * n + c0 + 16 * j as u32) as usize) }, n);
                        acc[i][j] = mma(fa, fb, acc[i][j]);
                    }
                }
                k0 += 16;
            }
            for i in 0..2 {
                for j in 0..2 {
                    let at = ((r0 + 16 * i as u32) * n + c0 + 16 * j as u32) as usize;
                    mma_store(unsafe { c.add(at) }, n, acc[i][j]);
                }
            }
        }
    }
}
