//! The task list of the copy-ahead all-gather GEMMs (`gather_ahead_staged`,
//! `gather_ahead_wide`): for ranks on separate devices, where reading a peer's rows of A
//! inside the GEMM would bring each row over the link once per column block of C.
//!
//! Each rank's GEMM goes through the ranks' rows of A in steps, its own rows first
//! (step 0: the in-place kernel's launch before the device barrier, which needs no
//! copy), then rank `me + 1`'s, and so on; this launch does steps 1 on. Step 1's rows
//! are copied first, then before the tiles of each step `s` come the copies of step `s +
//! 1`'s rows into a local gathered A, one task per block row of 128 rows, so a step's
//! rows are on their way while the step before computes. A block takes the
//! next task from a counter (claimed in order by blocks that are running), so a tile that
//! waits for its rows only waits for copies claimed before it, which wait for nothing:
//! no block needs another to be resident, whatever shares the device.

/// Claiming, decoding and copying the tasks.
/// Kernels that use it also use [`grouped`](super::grouped) (its `tile_of`).
#[iris::device]
pub mod ahead {
    use super::super::grouped::tile_of;
    use iris::prelude::*;

    /// Tasks of a launch (steps 1 to `world - 1`): `(world - 1) * row_blocks` copies and
    /// as many steps of `tiles` tiles.
    pub fn task_count(world: u32, row_blocks: u32, tiles: u32) -> u32 {
        (world - 1) * (row_blocks + tiles)
    }

    /// Task `t` as `[kind, step, index]`: kind 0 copies block row `index` (128 rows) of
    /// step `step`'s rank; kind 1 computes tile `index` of step `step`. The order: the
    /// copies of step 1, then for every step `s` from 1, the copies of step `s + 1`, then
    /// the tiles of step `s`.
    pub fn task_of(t: u32, world: u32, row_blocks: u32, tiles: u32) -> [u32; 3] {
        if t < row_blocks {
            return [0, 1, t];
        }
        let period = row_blocks + tiles;
        let (s, r) = (1 + (t - row_blocks) / period, (t - row_blocks) % period);
        if s + 1 < world && r < row_blocks {
            [0, s + 1, r]
        } else if s + 1 < world {
            [1, s, r - row_blocks]
        } else {
            [1, s, r]
        }
    }

    /// The block's task, claimed from this rank's `work[0]` by its first thread and shared
    /// through `slot` (block-shared). The block that claims the last task of the launch
    /// sets the counter back to 0 for the next one (every other claim is made by then).
    /// Every thread of the block calls it.
    pub fn claim(work: Symmetric<u64>, me: u32, slot: *mut u32) -> u32 {
        if thread_idx_x() == 0 {
            let t = atomic_add(work, 1u64, me, Ordering::Relaxed, Scope::Device) as u32;
            if t + 1 == grid_dim_x() {
                atomic_store(work, 0u64, me, Ordering::Relaxed, Scope::Device);
            }
            unsafe { *slot = t };
        }
        sync_threads();
        unsafe { *slot }
    }

    /// Claims and does the block's task of a copy-ahead launch (every thread of the block
    /// calls it; `width` the tiles' width, `slot` a block-shared word): a copy is done
    /// here (its rows into `gathered`, then its flag in `work` set to `epoch`) and gives
    /// `[0, 0, 0, 0]`; a tile gives `[1, source, br, bc]`, its rows of A those of rank
    /// `source` (in `gathered` from row `source · m`, once their flag says they landed:
    /// waited for here), its block row `br` of them and column `bc`.
    #[inline(always)]
    pub fn take_task<T: Element>(
        a: Symmetric<T>,
        gathered: *mut T,
        work: Symmetric<u64>,
        m: u32,
        n: u32,
        k: u32,
        me: u32,
        world: u32,
        epoch: u64,
        width: u32,
        slot: *mut u32,
    ) -> [u32; 4] {
        let row_blocks = m / 128;
        let tiles = row_blocks * (n / width);
        let task = task_of(claim(work, me, slot), world, row_blocks, tiles);
        let source = (me + task[1]) % world;
        let flags = work.add((1 + source * row_blocks) as usize);
        if task[0] == 0 {
            let at = ((source * m + task[2] * 128) * k) as usize;
            copy_vectors(
                unsafe { a.peer_ptr(source).add((task[2] * 128 * k) as usize) } as *const f32x4,
                unsafe { gathered.add(at) } as *mut f32x4,
                16 * k,
            );
            signal_block(flags.add(task[2] as usize), epoch, SignalOp::Set, me);
            return [0, 0, 0, 0];
        }
        let tile = tile_of(task[2], row_blocks, n, width);
        signal_wait_until_block(flags.add((tile[0] / 128) as usize), Cmp::Ge, epoch);
        [1, source, tile[0], tile[1]]
    }

    /// Copies `vectors` 16-byte vectors from `from` to `to`, the block's threads between
    /// them, eight loads in flight a thread.
    pub fn copy_vectors(from: *const f32x4, to: *mut f32x4, vectors: u32) {
        let stride = block_dim_x();
        let mut i = thread_idx_x();
        while i + 7 * stride < vectors {
            let mut v = [f32x4::splat(0.0); 8];
            for j in 0..8 {
                v[j] = unsafe { *from.add((i + j as u32 * stride) as usize) };
            }
            for j in 0..8 {
                unsafe { *to.add((i + j as u32 * stride) as usize) = v[j] };
            }
            i += 8 * stride;
        }
        while i < vectors {
            unsafe { *to.add(i as usize) = *from.add(i as usize) };
            i += stride;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ahead::{task_count, task_of};
    use crate::ccl::gemm_kernels::grouped::tile_of;

    /// Every copy and every tile of steps 1 on once, and a tile's rows copied by an
    /// earlier task: a block only waits for tasks claimed before its own (by blocks that
    /// are running).
    #[test]
    fn every_task_once_and_tiles_wait_only_for_earlier_copies() {
        for world in 1..=8u32 {
            for (row_blocks, blocks_n) in [(1u32, 1u32), (1, 4), (2, 3), (8, 4), (8, 16), (9, 2)] {
                let tiles = row_blocks * blocks_n;
                let count = task_count(world, row_blocks, tiles);
                // copied[step][row block] = the task that copies it.
                let mut copied = vec![vec![None; row_blocks as usize]; world as usize];
                let mut computed = vec![vec![false; tiles as usize]; world as usize];
                for t in 0..count {
                    let [kind, step, index] = task_of(t, world, row_blocks, tiles);
                    let (s, i) = (step as usize, index as usize);
                    if kind == 0 {
                        assert!(step >= 1 && step < world, "copy of step {step}");
                        assert!(
                            copied[s][i].replace(t).is_none(),
                            "copy {step}/{index} twice"
                        );
                        continue;
                    }
                    assert!(step >= 1 && step < world, "tile of step {step}");
                    assert!(!computed[s][i], "tile {step}/{index} twice");
                    computed[s][i] = true;
                    let [br, _] = tile_of(index, row_blocks, blocks_n * 128, 128);
                    let by = copied[s][(br / 128) as usize];
                    assert!(by.is_some_and(|c| c < t), "tile {t} waits for a later copy");
                }
                // Step 0 (this rank's own rows) is the in-place launch's.
                assert!(copied[1..].iter().flatten().all(Option::is_some));
                assert!(computed[1..].iter().flatten().all(|&c| c));
            }
        }
    }

    /// The grouped order visits every tile of a step once.
    #[test]
    fn grouped_tiles_cover_the_step() {
        for (blocks_m, blocks_n, width) in [
            (1u32, 1u32, 128u32),
            (8, 16, 256),
            (9, 2, 128),
            (20, 3, 256),
        ] {
            let mut seen = std::collections::HashSet::new();
            for id in 0..blocks_m * blocks_n {
                let [br, bc] = tile_of(id, blocks_m, blocks_n * width, width);
                assert!(br < blocks_m * 128 && bc < blocks_n * width, "{br}, {bc}");
                assert!(seen.insert((br, bc)), "tile ({br}, {bc}) twice");
            }
        }
    }
}
