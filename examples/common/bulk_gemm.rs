//! The `mma` GEMM kernel of `examples/gemm.rs` whose copies go through Hopper's copy
//! engine (`bulk_128`), in its own file so that tests/matrix.rs checks the same code on
//! every backend.

/// `staged_128` with its copies made by the copy engine (`copy_bulk`): a row of A or B
/// per instruction, counted on a shared barrier per buffer, instead of 16-byte
/// `copy_async`s that share the threads' memory pipeline with `ldmatrix`. Without a copy
/// engine (sm_80, AMD, the CPU) the rows are copied at once and the waits are block
/// barriers. 105 KiB of dynamic shared memory per block, as `staged_128`.
#[iris::kernels]
pub mod bulk_kernels {
    use iris::prelude::*;

    /// One 128 x 128 block of C per four warps (each a 64 x 64 quarter, a 4 x 4 array of
    /// accumulators), k in steps of 64 through three shared buffers filled two steps
    /// ahead by bulk copies: each of the first 128 threads copies a row of A's slice, each
    /// of the first 64 a row of B's, and each buffer's barrier counts the step's 32 KiB.
    /// A step waits for its buffer's barrier, then for the block (every warp is done with
    /// the buffer the next copies overwrite); the copies go out after the first k slice's
    /// products, and each warp loads the fragments of its next k slice of 16 while it
    /// multiplies the current one. Blocks take their tiles in groups of eight block rows
    /// (for L2). Launch with 4 x warp-size
    /// threads and `m / 128 * (n / 128)` blocks; `n` a multiple of 128, `k` of 64. Rows
    /// `row0..` of C get the result, in the copies of `peers` ranks from `me` on: one
    /// rank's own C, or (GEMM + all-scatter) every rank's.
    #[kernel(instances(T = [bf16]))]
    pub fn bulk_128<T: MmaElement>(
        a: *const T,
        b: *const T,
        c: Symmetric<f32>,
        n: u32,
        k: u32,
        row0: u32,
        me: u32,
        peers: u32,
        world: u32,
    ) {
        let sa = shared_array::<T, 27648>(); // 3 buffers x 128 rows x 72 (64 + 8 padding)
        let sb = shared_array::<T, 26112>(); // 3 buffers x 64 rows x 136 (128 + 8 padding)
        let bars = shared_array::<u64, 3>(); // one per buffer
        let tile = block_tile(n);
        let (br, bc) = (tile[0], tile[1]);
        let warp = thread_idx_x() / warp_size();
        let (wr, wc) = ((warp / 2) * 64, (warp % 2) * 64);
        let mut acc = [[mma_zero(); 4]; 4];
        let steps = k / 64;
        if thread_idx_x() == 0 {
            for i in 0..3 {
                bulk_barrier_init(unsafe { bars.add(i) });
            }
        }
        sync_threads();
        for first in 0..2 {
            let first = first as u32;
            if first < steps {
                bulk_step(a, b, sa, sb, bars, first, br, bc, n, k);
            }
        }
        let mut s = 0u32;
        while s < steps {
            // Buffer s % 3 holds steps s % 3, + 3, + 6, ..: its barrier's phase s / 3.
            bulk_wait(unsafe { bars.add((s % 3) as usize) }, (s / 3) % 2);
            // Every warp is done with step s - 1's buffer, which takes step s + 2 (its
            // copies go out after the first k slice's products).
            sync_threads();
            let cur = s % 3;
            let ta = unsafe { sa.add((cur * 9216 + wr * 72) as usize) } as *const T;
            let tb = unsafe { sb.add((cur * 8704 + wc) as usize) } as *const T;
            let mut fa = [mma_load_a(ta, 72); 4];
            let mut fb = [mma_load_b(tb, 136); 4];
            for i in 1..4 {
                fa[i] = mma_load_a(unsafe { ta.add((16 * i * 72) as usize) }, 72);
                fb[i] = mma_load_b(unsafe { tb.add((16 * i) as usize) }, 136);
            }
            for kk in 0..4 {
                let kk = kk as u32;
                // The next slice's fragments load while this one multiplies.
                let mut na = fa;
                let mut nb = fb;
                if kk < 3 {
                    let ra = unsafe { ta.add((16 * (kk + 1)) as usize) };
                    let rb = unsafe { tb.add((16 * (kk + 1) * 136) as usize) };
                    for i in 0..4 {
                        na[i] = mma_load_a(unsafe { ra.add((16 * i * 72) as usize) }, 72);
                        nb[i] = mma_load_b(unsafe { rb.add((16 * i) as usize) }, 136);
                    }
                }
                for i in 0..4 {
                    for j in 0..4 {
                        acc[i][j] = mma(fa[i], fb[j], acc[i][j]);
                    }
                }
                if kk == 0 && s + 2 < steps {
                    bulk_step(a, b, sa, sb, bars, s + 2, br, bc, n, k);
                }
                fa = na;
                fb = nb;
            }
            s += 1;
        }
        for p in 0..peers {
            let peer = (me + p) % world;
            for i in 0..4 {
                for j in 0..4 {
                    let row = row0 + br + wr + 16 * i as u32;
                    let at = (row * n + bc + wc + 16 * j as u32) as usize;
                    mma_store_peer(c.add(at), n, acc[i][j], peer);
                }
            }
        }
    }

    /// The first row and column of this block's 128 x 128 tile of C: blocks go through
    /// the tiles in groups of eight block rows, down each column of a group before the
    /// next, so the blocks running at once read a few of B's column blocks (kept in L2).
    fn block_tile(n: u32) -> [u32; 2] {
        let blocks_n = n / 128;
        let blocks_m = grid_dim_x() / blocks_n;
        let id = block_idx_x();
        let per_group = 8 * blocks_n;
        let first = (id / per_group) * 8;
        let rows = min(blocks_m - first, 8u32);
        let within = id % per_group;
        [(first + within % rows) * 128, (within / rows) * 128]
    }

    /// Starts copying step `step`'s slices into buffer `step % 3`, counted on that buffer's
    /// barrier: the 128 x 64 slice of A at column `64 step` of block row `br` (a row of
    /// 128 bytes per thread of the first 128), and the 64 x 128 slice of B at row `64 step`
    /// of block column `bc` (a row of 256 bytes per thread of the first 64).
    fn bulk_step<T: MmaElement>(
        a: *const T,
        b: *const T,
        sa: *mut T,
        sb: *mut T,
        bars: *mut u64,
        step: u32,
        br: u32,
        bc: u32,
        n: u32,
        k: u32,
    ) {
        let buf = step % 3;
        let bar = unsafe { bars.add(buf as usize) };
        let t = thread_idx_x();
        if t == 0 {
            // (128 x 64 + 64 x 128) elements of 2 bytes (bf16, f16).
            bulk_expect(bar, 32768);
        }
        if t < 128 {
            copy_bulk(
                unsafe { sa.add((buf * 9216 + t * 72) as usize) } as *mut [T; 64],
                unsafe { a.add(((br + t) * k + step * 64) as usize) } as *const [T; 64],
                bar,
            );
        }
        if t < 64 {
            copy_bulk(
                unsafe { sb.add((buf * 8704 + t * 136) as usize) } as *mut [T; 128],
                unsafe { b.add(((step * 64 + t) * n + bc) as usize) } as *const [T; 128],
                bar,
            );
        }
    }
}
