//! The Hopper GEMM kernels (`warpgroup_256` and its two fused forms): warpgroup matrix
//! operations (`wg_mma`), so this unit is compiled for `sm_90a` (where `wg_mma` is
//! `wgmma`); other targets compute the same products without the matrix units (see the
//! prelude's `warpgroup` module).

use super::{ahead, grouped};

/// The Hopper kernel: warpgroup matrix operations (`wg_mma`), so this unit is compiled for
/// `sm_90a` (where `wg_mma` is `wgmma`); other targets compute the same products without
/// the matrix units (see the prelude's `warpgroup` module).
#[iris::kernels(uses(grouped, ahead, crate::ccl::barrier))]
pub mod warpgroup_kernels {
    use iris::prelude::*;

    /// A 128 x 256 block of C per 256 threads (two warpgroups of 64 rows, each with two
    /// accumulators of 128 columns), k in steps of 64 through four shared buffers of 48 KiB
    /// (192 KiB: dynamic shared memory, which the runtime asks for) filled two steps
    /// ahead. Each step issues a batch of eight `wg_mma` per warpgroup first, then the
    /// copies two steps ahead, then waits for the previous step's batch (`wg_wait(.., 1)`),
    /// so the matrix units, the copies and the next step's issue overlap. Blocks take
    /// their tiles in groups of eight block rows (consecutive blocks share B's columns in
    /// L2). Launch with 256 threads per block and `m / 128 * (n / 256)` blocks; `n` a
    /// multiple of 256, `k` of 64. Rows `row0..` of C get the result, in the copies of
    /// `peers` ranks from `me` on (as `block_tile_128`'s). Built for blocks of 256 threads
    /// (`max_threads`: on AMD, where each thread computes its two accumulators itself, the
    /// bound leaves room for them in registers).
    #[kernel(instances(T = [bf16, f16]), max_threads = 256)]
    pub fn warpgroup_256<T: MmaElement>(
        a: *const T,
        bt: *const T,
        c: Symmetric<f32>,
        n: u32,
        k: u32,
        row0: u32,
        me: u32,
        peers: u32,
        world: u32,
    ) {
        let tile = block_tile(n, 256);
        let (br, bc) = (tile[0], tile[1]);
        let sa = shared_array::<T, 32768>(); // 4 buffers x 128 rows x 64 k
        let sb = shared_array::<T, 65536>(); // 4 buffers x 256 columns x 64 k
        wide_block(sa, sb, a, br, bt, bc, n, k, c, row0 + br, me, peers, world);
    }

    /// `warpgroup_256` over ranks' rows of A where they are (all-gather then GEMM, fused),
    /// steps `first..` and the split barrier as `gather_staged` (`m / 128 · n / 256` blocks
    /// a step).
    #[kernel(instances(T = [bf16, f16]), max_threads = 256)]
    pub fn gather_wide<T: MmaElement>(
        a: Symmetric<T>,
        bt: *const T,
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
        let tile = block_tile(n, 256);
        let (br, bc) = (tile[0], tile[1]);
        let source = (me + first + br / m) % world;
        let rows = a.peer_ptr(source) as *const T;
        let sa = shared_array::<T, 32768>(); // 4 buffers x 128 rows x 64 k
        let sb = shared_array::<T, 65536>(); // 4 buffers x 256 columns x 64 k
        let (row, c_row) = (br % m, source * m + br % m);
        wide_block(sa, sb, rows, row, bt, bc, n, k, c, c_row, me, 1, world);
        ccl_grid_wait(signals, done, me, world, timeout_ns);
    }

    /// `warpgroup_256` over every rank's rows of A, copied ahead into this rank's
    /// `gathered` (`W·m x k`) as `gather_ahead_staged` does. Launch with 256 threads and
    /// `ahead::task_count(world, m / 128, m / 128 * (n / 256))` blocks.
    #[kernel(instances(T = [bf16, f16]), max_threads = 256)]
    pub fn gather_ahead_wide<T: MmaElement>(
        a: Symmetric<T>,
        gathered: *mut T,
        bt: *const T,
        c: Symmetric<f32>,
        work: Symmetric<u64>,
        m: u32,
        n: u32,
        k: u32,
        me: u32,
        world: u32,
        epoch: u64,
    ) {
        let sa = shared_array::<T, 32768>(); // 4 buffers x 128 rows x 64 k
        let sb = shared_array::<T, 65536>(); // 4 buffers x 256 columns x 64 k
        let slot = shared_array::<u32, 1>();
        let t = take_task(a, gathered, work, m, n, k, me, world, epoch, 256, slot);
        if t[0] == 1 {
            let (source, br, bc) = (t[1], t[2], t[3]);
            let rows = unsafe { gathered.add((source * m * k) as usize) } as *const T;
            wide_block(
                sa,
                sb,
                rows,
                br,
                bt,
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

    /// `warpgroup_256` with its product scattered to the ranks that own its rows, steps
    /// `first..` and the split barrier as `scatter_staged` (`part / 128 · n / 256` blocks
    /// a step).
    #[kernel(instances(T = [bf16, f16]), max_threads = 256)]
    pub fn scatter_wide<T: MmaElement>(
        a: *const T,
        bt: *const T,
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
        // After a barrier that gave up, nothing goes into a peer's staging: the tile is
        // stored into no rank. Each thread reads the word here and uses it only after the
        // k loop (no block barrier before the GEMM). Threads need not agree: a launch
        // that stores into peers comes after the barrier kernels that write the word, so
        // they all read the same; the own rows' launch (whose last block's wait, or a
        // wait kernel beside it on a sync stream, may set it) stores only into this rank.
        let broken = ccl_broken(signals, me);
        let tile = block_tile(n, 256);
        let (br, bc) = (tile[0], tile[1]);
        let (owner, row) = ((me + first + br / part) % world, br % part);
        let sa = shared_array::<T, 32768>(); // 4 buffers x 128 rows x 64 k
        let sb = shared_array::<T, 65536>(); // 4 buffers x 256 columns x 64 k
        wide_block(
            sa,
            sb,
            a,
            owner * part + row,
            bt,
            bc,
            n,
            k,
            staging,
            me * part + row,
            owner,
            if broken { 0 } else { 1 },
            world,
        );
        ccl_grid_wait(signals, done, me, world, timeout_ns);
    }

    /// `warpgroup_256` over every rank's share of the inner dimension at once, where the
    /// ranks' memory is at hand (every rank on one device): owner `me`'s rows `br..` of
    /// `Σ_r A_r Bᵀ_r`, `A_r` and `Bᵀ_r` read in rank `r`'s copies of `a` (`W·part x k`)
    /// and `bt` (`n x k`), one k loop of `W · k / 64` steps in rank order (its copies run
    /// on across the ranks' boundaries). Stored into this rank's `c` at rows `br..`
    /// (`part x n`) or, with `everywhere` non-zero, into every rank's at rows
    /// `me · part + br..` (`W·part x n`; through shared memory, a 16-byte vector a thread,
    /// which measured faster for four copies and slower for one). After a barrier that
    /// gave up (`signals`), no peer's memory is read (every step reads this rank's) and
    /// nothing is stored. `part / 128 · n / 256` blocks of 256 threads.
    #[kernel(instances(T = [bf16, f16]), max_threads = 256)]
    pub fn pulled_wide<T: MmaElement>(
        a: Symmetric<T>,
        bt: Symmetric<T>,
        c: Symmetric<f32>,
        signals: Symmetric<u64>,
        part: u32,
        n: u32,
        k: u32,
        me: u32,
        world: u32,
        everywhere: u32,
    ) {
        // Threads need not agree on the word: they read it after the barrier kernel
        // that writes it.
        let broken = ccl_broken(signals, me);
        let tile = block_tile(n, 256);
        let (br, bc) = (tile[0], tile[1]);
        let sa = shared_array::<T, 32768>(); // 4 buffers x 128 rows x 64 k
        let sb = shared_array::<T, 65536>(); // 4 buffers x 256 columns x 64 k
        let a_row = me * part + br;
        let group = thread_idx_x() / 128;
        let mut left = wg_zero();
        let mut right = wg_zero();
        let steps = world * (k / 64);
        // The next step's copies come from rank `rank` (this rank where the barrier gave
        // up), at column `k0`.
        let mut rank = 0u32;
        let mut k0 = 0u32;
        for early in 0..2 {
            let early = early as u32;
            if early < steps {
                let from = if broken { me } else { rank };
                stage_pulled(a, bt, sa, sb, early, from, a_row, bc, k, k0);
                k0 += 64;
                if k0 == k {
                    k0 = 0;
                    rank = if rank + 1 == world { 0 } else { rank + 1 };
                }
            }
            copy_async_commit();
        }
        // As `wide_block`'s loop.
        let mut s = 0u32;
        while s < steps {
            copy_async_wait(1);
            sync_threads();
            let cur = s % 4;
            let ta = unsafe { sa.add((cur * 8192 + group * 4096) as usize) } as *const T;
            let tb = unsafe { sb.add((cur * 16384) as usize) } as *const T;
            let tb_right = unsafe { tb.add(8192) };
            for kk in 0..4 {
                let kk = kk as u32;
                left = wg_mma(ta, tb, kk, left);
                right = wg_mma(ta, tb_right, kk, right);
            }
            wg_commit();
            if s + 2 < steps {
                let from = if broken { me } else { rank };
                stage_pulled(a, bt, sa, sb, (s + 2) % 4, from, a_row, bc, k, k0);
                k0 += 64;
                if k0 == k {
                    k0 = 0;
                    rank = if rank + 1 == world { 0 } else { rank + 1 };
                }
            }
            copy_async_commit();
            left = wg_wait(left, 1);
            right = wg_wait(right, 1);
            s += 1;
        }
        left = wg_wait(left, 0);
        right = wg_wait(right, 0);
        if everywhere == 0 {
            if !broken {
                let at = ((br + group * 64) * n + bc) as usize;
                wg_store_peer(c.add(at), n, left, me);
                wg_store_peer(c.add(at + 128), n, right, me);
            }
        } else {
            // Through shared memory, half the tile's columns at a time (128 rows of 128,
            // rows `PULLED_PITCH` apart), then a 16-byte vector a thread into each copy.
            let staged = sb as *mut f32;
            let mine = unsafe { staged.add((group * 64 * PULLED_PITCH) as usize) };
            sync_threads(); // every warpgroup's last `wg_mma` has read its buffers
            wg_store(mine, PULLED_PITCH, left);
            sync_threads();
            store_everywhere(staged, c, a_row, bc, n, me, world, broken);
            sync_threads();
            wg_store(mine, PULLED_PITCH, right);
            sync_threads();
            store_everywhere(staged, c, a_row, bc + 128, n, me, world, broken);
        }
    }

    /// Row pitch (`f32`) of `pulled_wide`'s staged half tile: 128 columns and 4 more, so
    /// that a warp's stores of 8 rows fall in different banks.
    const PULLED_PITCH: u32 = 132;

    /// The 128 x 128 `f32` at `staged` (rows `PULLED_PITCH` apart) into every rank's `c`
    /// at rows `c_row..`, columns `col..` (`n` columns); nothing where `broken`.
    #[inline(always)]
    fn store_everywhere(
        staged: *mut f32,
        c: Symmetric<f32>,
        c_row: u32,
        col: u32,
        n: u32,
        me: u32,
        world: u32,
        broken: bool,
    ) {
        if !broken {
            // A copy at a time: its address translated once, the staged values read again
            // from shared memory for each.
            let t = thread_idx_x();
            let mut peer = me;
            for _ in 0..world {
                let out = c.cast::<f32x4>().peer_ptr(peer);
                for i in 0..16 {
                    let v = i as u32 * 256 + t;
                    let (row, quad) = (v / 32, v % 32);
                    let from = unsafe { staged.add((row * PULLED_PITCH + quad * 4) as usize) };
                    let at = (((c_row + row) * n + col) / 4 + quad) as usize;
                    unsafe { *out.add(at) = *(from as *const f32x4) };
                }
                peer = if peer + 1 == world { 0 } else { peer + 1 };
            }
        }
    }

    /// Starts copying rank `rank`'s A (rows `a_row..`) and Bᵀ (rows `bc..`) at column
    /// `k0` into buffer `buf`, as `stage_wide`.
    #[inline(always)]
    fn stage_pulled<T: MmaElement>(
        a: Symmetric<T>,
        bt: Symmetric<T>,
        sa: *mut T,
        sb: *mut T,
        buf: u32,
        rank: u32,
        a_row: u32,
        bc: u32,
        k: u32,
        k0: u32,
    ) {
        let rows = a.peer_ptr(rank) as *const T;
        let cols = bt.peer_ptr(rank) as *const T;
        stage_wide(rows, cols, sa, sb, buf, a_row, bc, k, k0);
    }

    /// One 128 x 256 tile of C: rows `a_row..` of A (`k` columns) times rows `bc..` of Bᵀ
    /// (`n x k`), stored at rows `c_row..`, columns `bc..` of `c` (`n` columns) in the
    /// copies of `peers` ranks from `me` on. Every thread of the block calls it; inlined
    /// into each kernel (out of line, its shared-memory pointers would be generic ones).
    #[inline(always)]
    fn wide_block<T: MmaElement>(
        sa: *mut T,
        sb: *mut T,
        a: *const T,
        a_row: u32,
        bt: *const T,
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
        let group = thread_idx_x() / 128;
        let mut left = wg_zero();
        let mut right = wg_zero();
        let steps = k / 64;
        // One commit group per step (empty past the end): at the top of step s, "step s
        // landed" is "at most one group pending".
        for first in 0..2 {
            let first = first as u32;
            if first < steps {
                stage_wide(a, bt, sa, sb, first, br, bc, k, first * 64);
            }
            copy_async_commit();
        }
        let mut s = 0u32;
        while s < steps {
            copy_async_wait(1);
            // Step s's tiles are in, and every warpgroup's batch of step s - 2 finished
            // (each waited for it before this barrier): its buffer takes step s + 2.
            sync_threads();
            let cur = s % 4;
            // This warpgroup's 64 rows of A (64 elements each); Bᵀ's rows 128.. for the
            // right accumulator.
            let ta = unsafe { sa.add((cur * 8192 + group * 4096) as usize) } as *const T;
            let tb = unsafe { sb.add((cur * 16384) as usize) } as *const T;
            let tb_right = unsafe { tb.add(8192) };
            for kk in 0..4 {
                let kk = kk as u32;
                left = wg_mma(ta, tb, kk, left);
                right = wg_mma(ta, tb_right, kk, right);
            }
            wg_commit();
            // The copies two steps ahead go out while the matrix units run.
            if s + 2 < steps {
                stage_wide(a, bt, sa, sb, (s + 2) % 4, br, bc, k, (s + 2) * 64);
            }
            copy_async_commit();
            // The batch of step s - 1 finished; this one may still run.
            left = wg_wait(left, 1);
            right = wg_wait(right, 1);
            s += 1;
        }
        left = wg_wait(left, 0);
        right = wg_wait(right, 0);
        let at = ((c_row + group * 64) * n + bc) as usize;
        for p in 0..peers {
            let peer = (me + p) % world;
            wg_store_peer(c.add(at), n, left, peer);
            wg_store_peer(c.add(at + 128), n, right, peer);
        }
    }

    /// Starts copying the 128 x 64 slice of A at column `k0` of block row `br` and the
    /// 256 x 64 slice of Bᵀ at column `k0` of block row `bc` into buffer `buf`, in the
    /// warpgroup tile layout: chunk `c` of row `r` at element `r * 64 + (c ^ (r % 8)) * 8`.
    /// Eight consecutive threads copy one row (128 contiguous bytes, one shared line);
    /// the block's 256 threads copy 32 rows at a time, each thread the same chunk of
    /// every 32nd row (so its offsets are computed once: the copies are most of the
    /// instructions a step issues).
    fn stage_wide<T: MmaElement>(
        a: *const T,
        bt: *const T,
        sa: *mut T,
        sb: *mut T,
        buf: u32,
        br: u32,
        bc: u32,
        k: u32,
        k0: u32,
    ) {
        let t = thread_idx_x();
        let (row, c) = (t / 8, t % 8);
        let at = row * 64 + (c ^ (row % 8)) * 8;
        let from_a = unsafe { a.add(((br + row) * k + k0 + c * 8) as usize) };
        let from_b = unsafe { bt.add(((bc + row) * k + k0 + c * 8) as usize) };
        let to_a = unsafe { sa.add((buf * 8192 + at) as usize) };
        let to_b = unsafe { sb.add((buf * 16384 + at) as usize) };
        // Rows r and r + 32 have the same swizzle (r % 8): 32 rows on, 2048 elements.
        for i in 0..4 {
            let i = i as u32;
            copy_async(
                unsafe { to_a.add((i * 2048) as usize) } as *mut [T; 8],
                unsafe { from_a.add((i * 32 * k) as usize) } as *const [T; 8],
            );
        }
        for i in 0..8 {
            let i = i as u32;
            copy_async(
                unsafe { to_b.add((i * 2048) as usize) } as *mut [T; 8],
                unsafe { from_b.add((i * 32 * k) as usize) } as *const [T; 8],
            );
        }
    }
}
