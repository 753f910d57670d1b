//! The `mma` GEMM kernels: `staged_128` (threads' copies), `tiles_128` (the copy
//! engine's), and `staged_128`'s two fused forms.

use super::{ahead, grouped};

/// The `mma` (`mma.sync` on NVIDIA) kernels with a three-stage copy pipeline: 105 KiB
/// (`staged_128`) and 96 KiB (`tiles_128`) of dynamic shared memory per block, which
/// Ampere and Hopper GPUs give a block (and AMD's gfx950; gfx90a and gfx942 give 64 KiB,
/// and the runtime refuses the module load there, naming the sizes).
#[iris::kernels(uses(grouped, ahead, crate::ccl::barrier))]
pub mod staged_kernels {
    use iris::prelude::*;

    /// One 128 x 128 block of C per four warps (each a 64 x 64 quarter, a 4 x 4 array of
    /// accumulators), k in steps of 64 through three shared buffers filled two steps
    /// ahead with `copy_async`, one barrier a step. The copies of a step are unrolled at
    /// offsets computed once per thread and go out after the first k slice's products,
    /// and each warp loads the fragments of its next k slice of 16 (`ldmatrix` on
    /// NVIDIA) while it multiplies the current one. Blocks
    /// take their tiles in groups of eight block rows (for L2). Launch with 4 x warp-size
    /// threads and `m / 128 * (n / 128)` blocks; `n` a multiple of 128, `k` of 64. Rows
    /// `row0..` of C get the result, in the copies of `peers` ranks from `me` on: one
    /// rank's own C, or (GEMM + all-scatter) every rank's.
    #[kernel(instances(T = [bf16, f16]))]
    pub fn staged_128<T: MmaElement>(
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
        let tile = block_tile(n, 128);
        let (br, bc) = (tile[0], tile[1]);
        let sa = shared_array::<T, 27648>(); // 3 buffers x 128 rows x 72 (64 + 8 padding)
        let sb = shared_array::<T, 26112>(); // 3 buffers x 64 rows x 136 (128 + 8 padding)
        staged_block(sa, sb, a, br, b, bc, n, k, c, row0 + br, me, peers, world);
    }

    /// `staged_128` over ranks' rows of A where they are (all-gather then GEMM, fused):
    /// rows `s·m..` of C (`W·m x n`, this rank's) are rank `s`'s `m` rows of A (`m x k`
    /// on each rank, read through A's peer table). The launch covers steps `first..`, as
    /// many as its blocks make (`m / 128 · n / 128` blocks a step); step `i` is rank `(me
    /// + i) % W`'s rows, so step 0 is this rank's own (read before its peers' A is
    /// known to be written). `m` a multiple of 128. With `done` non-zero the launch holds
    /// the split barrier (`ccl_grid_arrive` / `ccl_grid_wait` on `signals`, the wait
    /// bounded by `timeout_ns`).
    #[kernel(instances(T = [bf16, f16]))]
    pub fn gather_staged<T: MmaElement>(
        a: Symmetric<T>,
        b: *const T,
        c: Symmetric<f32>,
        m: u32,
        n: u32,
        k: u32,
        me: u32,
        world: u32,
        first: u32,
        signals: Symmetric<u64>,
        done: u32,
        timeout_ns: u64,
    ) {
        ccl_grid_arrive(signals, done, me, world);
        let tile = block_tile(n, 128);
        let (br, bc) = (tile[0], tile[1]);
        let source = (me + first + br / m) % world;
        let rows = a.peer_ptr(source) as *const T;
        let sa = shared_array::<T, 27648>(); // 3 buffers x 128 rows x 72 (64 + 8 padding)
        let sb = shared_array::<T, 26112>(); // 3 buffers x 64 rows x 136 (128 + 8 padding)
        let (row, c_row) = (br % m, source * m + br % m);
        staged_block(sa, sb, rows, row, b, bc, n, k, c, c_row, me, 1, world);
        ccl_grid_wait(signals, done, me, world, timeout_ns);
    }

    /// `staged_128` over the peers' rows of A, copied ahead (all-gather then GEMM, fused,
    /// for ranks on separate devices; this rank's own rows, step 0, are `gather_staged`'s
    /// launch before): the rows of rank `me + s` are copied into this rank's `gathered`
    /// (`W·m x k`, at row `(me + s) % W · m`) by the tasks before step `s`'s tiles, 128
    /// rows a task, each setting its flag in `work` to `epoch`; a tile waits for its
    /// rows' flag and reads them there (see `copy_ahead.rs`). `work` holds the task counter (0 between
    /// launches), then `W · m / 128` flags below `epoch`. Launch with 4 x warp-size
    /// threads and `ahead::task_count(world, m / 128, m / 128 * (n / 128))` blocks.
    #[kernel(instances(T = [bf16, f16]))]
    pub fn gather_ahead_staged<T: MmaElement>(
        a: Symmetric<T>,
        gathered: *mut T,
        b: *const T,
        c: Symmetric<f32>,
        work: Symmetric<u64>,
        m: u32,
        n: u32,
        k: u32,
        me: u32,
        world: u32,
        epoch: u64,
    ) {
        let sa = shared_array::<T, 27648>(); // 3 buffers x 128 rows x 72 (64 + 8 padding)
        let sb = shared_array::<T, 26112>(); // 3 buffers x 64 rows x 136 (128 + 8 padding)
        let slot = shared_array::<u32, 1>();
        let t = take_task(a, gathered, work, m, n, k, me, world, epoch, 128, slot);
        if t[0] == 1 {
            let (source, br, bc) = (t[1], t[2], t[3]);
            let rows = unsafe { gathered.add((source * m * k) as usize) } as *const T;
            staged_block(
                sa,
                sb,
                rows,
                br,
                b,
                bc,
                n,
                k,
                c,
                source * m + br,
                me,
                1,
                world,
            );
        }
    }

    /// `staged_128` with its product scattered to the ranks that own its rows (the GEMM of
    /// a GEMM + reduce-scatter): this rank's `M x k` A times B is its partial product;
    /// rows `o·part..` belong to rank `o` (the owner), and each tile goes straight into
    /// slot `me` of the owner's `staging` (`W` slots of `part x n`), where the owner adds
    /// the slots once every rank's GEMM is done. The launch covers steps `first..`, as
    /// many as its blocks make (`part / 128 · n / 128` blocks a step); step `i` is owner
    /// `(me + i) % W`'s rows, so step 0 stores into this rank's own `staging`. Nothing
    /// is stored where the communicator (`signals`) is broken: a barrier before it gave up.
    /// The split barrier inside the launch where `done` is non-zero, as `gather_staged`.
    #[kernel(instances(T = [bf16, f16]))]
    pub fn scatter_staged<T: MmaElement>(
        a: *const T,
        b: *const T,
        staging: Symmetric<f32>,
        signals: Symmetric<u64>,
        part: u32,
        n: u32,
        k: u32,
        me: u32,
        world: u32,
        first: u32,
        done: u32,
        timeout_ns: u64,
    ) {
        ccl_grid_arrive(signals, done, me, world);
        // After a barrier that gave up, nothing goes into a peer's staging.
        if ccl_block_broken(signals, shared_array::<u32, 1>(), me) {
            ccl_grid_wait(signals, done, me, world, timeout_ns);
            return;
        }
        let tile = block_tile(n, 128);
        let (br, bc) = (tile[0], tile[1]);
        let (owner, row) = ((me + first + br / part) % world, br % part);
        let sa = shared_array::<T, 27648>(); // 3 buffers x 128 rows x 72 (64 + 8 padding)
        let sb = shared_array::<T, 26112>(); // 3 buffers x 64 rows x 136 (128 + 8 padding)
        staged_block(
            sa,
            sb,
            a,
            owner * part + row,
            b,
            bc,
            n,
            k,
            staging,
            me * part + row,
            owner,
            1,
            world,
        );
        ccl_grid_wait(signals, done, me, world, timeout_ns);
    }

    /// One 128 x 128 tile of C: rows `a_row..` of A (`k` columns) times columns `bc..` of
    /// B (`k x n`), stored at rows `c_row..`, columns `bc..` of `c` (`n` columns) in the
    /// copies of `peers` ranks from `me` on. Every thread of the block calls it; inlined
    /// into each kernel (out of line, its shared-memory pointers would be generic ones).
    #[inline(always)]
    fn staged_block<T: MmaElement>(
        sa: *mut T,
        sb: *mut T,
        a: *const T,
        a_row: u32,
        b: *const T,
        bc: u32,
        n: u32,
        k: u32,
        c: Symmetric<f32>,
        c_row: u32,
        me: u32,
        peers: u32,
        world: u32,
    ) {
        let br = a_row;
        let warp = thread_idx_x() / warp_size();
        let (wr, wc) = ((warp / 2) * 64, (warp % 2) * 64);
        let mut acc = [[mma_zero(); 4]; 4];
        let steps = k / 64;
        // One commit group per step (empty past the end): at the top of step s, "step s
        // landed" is "at most one group pending".
        for first in 0..2 {
            let first = first as u32;
            if first < steps {
                stage_step(a, b, sa, sb, first, first, br, bc, n, k);
            }
            copy_async_commit();
        }
        let mut s = 0u32;
        while s < steps {
            copy_async_wait(1);
            // Step s's slices are in, and every warp is done with step s - 1's buffer,
            // which takes step s + 2 (its copies go out after the first k slice's
            // products, so the matrix units start right after the barrier).
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
                if kk == 0 {
                    if s + 2 < steps {
                        stage_step(a, b, sa, sb, (s + 2) % 3, s + 2, br, bc, n, k);
                    }
                    copy_async_commit();
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
                    let row = c_row + wr + 16 * i as u32;
                    let at = (row * n + bc + wc + 16 * j as u32) as usize;
                    mma_store_peer(c.add(at), n, acc[i][j], peer);
                }
            }
        }
    }

    /// `staged_128` with its tiles brought by the copy engine: per step, one `copy_tile`
    /// of A's 128 x 64 box and two of B's 64 x 64 halves (thread 0 issues them; the tile
    /// maps `a_map` and `b_map` come from `Iris::tile_map` with 128 and 64 box rows),
    /// landing in the 128-byte swizzle, which the fragment loads read
    /// (`mma_load_a_swizzled`, `mma_load_b_swizzled`). No padding and no thread copies:
    /// the threads' memory pipeline is left to `ldmatrix`. Three buffers of 32 KiB, each
    /// counted on its barrier, filled two steps ahead. Launch as `staged_128`.
    #[kernel(instances(T = [bf16]))]
    pub fn tiles_128<T: MmaElement>(
        a_map: *const u64,
        b_map: *const u64,
        c: Symmetric<f32>,
        n: u32,
        k: u32,
        row0: u32,
        me: u32,
        peers: u32,
        world: u32,
    ) {
        // 3 buffers x (A 128 x 64, then B's two 64 x 64 halves), each box 128-byte rows.
        let tiles = shared_array::<T, 49152>();
        let bars = shared_array::<u64, 3>();
        let tile = block_tile(n, 128);
        let (br, bc) = (tile[0], tile[1]);
        let warp = thread_idx_x() / warp_size();
        let (wr, wc) = ((warp / 2) * 64, (warp % 2) * 64);
        let mut acc = [[mma_zero(); 4]; 4];
        let steps = k / 64;
        let first_thread = thread_idx_x() == 0;
        if first_thread {
            for i in 0..3 {
                bulk_barrier_init(unsafe { bars.add(i) });
            }
        }
        sync_threads();
        if first_thread {
            for first in 0..2 {
                let first = first as u32;
                if first < steps {
                    tile_step(a_map, b_map, tiles, bars, first, br, bc);
                }
            }
        }
        let mut s = 0u32;
        while s < steps {
            // Buffer s % 3 holds steps s % 3, + 3, + 6, ..: its barrier's phase s / 3.
            bulk_wait(unsafe { bars.add((s % 3) as usize) }, (s / 3) % 2);
            // Every warp is done with step s - 1's buffer, which takes step s + 2.
            sync_threads();
            let ta = unsafe { tiles.add(((s % 3) * 16384) as usize) } as *const T;
            let tb = unsafe { ta.add((8192 + (wc / 64) * 4096) as usize) };
            let mut fa = [mma_load_a_swizzled(ta, wr, 0); 4];
            let mut fb = [mma_load_b_swizzled(tb, 0, 0); 4];
            for i in 1..4 {
                fa[i] = mma_load_a_swizzled(ta, wr + 16 * i as u32, 0);
                fb[i] = mma_load_b_swizzled(tb, 0, 16 * i as u32);
            }
            for kk in 0..4 {
                let kk = kk as u32;
                // The next slice's fragments load while this one multiplies.
                let mut na = fa;
                let mut nb = fb;
                if kk < 3 {
                    for i in 0..4 {
                        let iu = i as u32;
                        na[i] = mma_load_a_swizzled(ta, wr + 16 * iu, 16 * (kk + 1));
                        nb[i] = mma_load_b_swizzled(tb, 16 * (kk + 1), 16 * iu);
                    }
                }
                for i in 0..4 {
                    for j in 0..4 {
                        acc[i][j] = mma(fa[i], fb[j], acc[i][j]);
                    }
                }
                if kk == 0 && first_thread && s + 2 < steps {
                    tile_step(a_map, b_map, tiles, bars, s + 2, br, bc);
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

    /// Starts step `step`'s boxes into buffer `step % 3`, counted on its barrier: A's
    /// 128 x 64 box at column `64 step`, row `br`; B's two 64 x 64 halves at columns `bc`
    /// and `bc + 64`, row `64 step` (32 KiB of `bf16`, `f16`).
    fn tile_step<T: MmaElement>(
        a_map: *const u64,
        b_map: *const u64,
        tiles: *mut T,
        bars: *mut u64,
        step: u32,
        br: u32,
        bc: u32,
    ) {
        let buf = step % 3;
        let bar = unsafe { bars.add(buf as usize) };
        let at = unsafe { tiles.add((buf * 16384) as usize) };
        bulk_expect(bar, 32768);
        copy_tile(at, a_map, step * 64, br, bar);
        copy_tile(unsafe { at.add(8192) }, b_map, bc, step * 64, bar);
        copy_tile(unsafe { at.add(12288) }, b_map, bc + 64, step * 64, bar);
    }

    /// Starts copying step `step`'s slices into buffer `buf`: the 128 x 64 slice of A at
    /// column `64 step` of block row `br`, and the 64 x 128 slice of B at row `64 step` of
    /// block column `bc`.
    fn stage_step<T: MmaElement>(
        a: *const T,
        b: *const T,
        sa: *mut T,
        sb: *mut T,
        buf: u32,
        step: u32,
        br: u32,
        bc: u32,
        n: u32,
        k: u32,
    ) {
        let threads = 4 * warp_size();
        let from_a = unsafe { a.add((br * k + step * 64) as usize) };
        let from_b = unsafe { b.add((step * 64 * n + bc) as usize) };
        let to_a = unsafe { sa.add((buf * 9216) as usize) };
        let to_b = unsafe { sb.add((buf * 8704) as usize) };
        stage_rows(from_a, k, to_a, 72, 128, 8, threads);
        stage_rows(from_b, n, to_b, 136, 64, 16, threads);
    }

    /// Starts copying `rows` rows of `chunks` 16-byte chunks each from `from` (rows
    /// `ld_from` elements apart) to shared `to` (rows `ld_to` apart), the block's `threads`
    /// threads taking turns: each thread the same chunk of every (`threads` / `chunks`)-th
    /// row. With `rows`, `chunks` and `threads` constants, the copies unroll at offsets
    /// computed once (the copies are a large part of what a step issues).
    fn stage_rows<T: MmaElement>(
        from: *const T,
        ld_from: u32,
        to: *mut T,
        ld_to: u32,
        rows: u32,
        chunks: u32,
        threads: u32,
    ) {
        let t = thread_idx_x();
        let (row, col) = (t / chunks, (t % chunks) * 8);
        let stride = threads / chunks;
        let src = unsafe { from.add((row * ld_from + col) as usize) };
        let dst = unsafe { to.add((row * ld_to + col) as usize) };
        for i in 0..rows / stride {
            copy_async(
                unsafe { dst.add((i * stride * ld_to) as usize) } as *mut [T; 8],
                unsafe { src.add((i * stride * ld_from) as usize) } as *const [T; 8],
            );
        }
    }
}
