//! A rank's sync stream (`World::sync_stream`, `Iris::fork_sync_stream`): work forked
//! there runs after the work queued before the fork, beside the work queued between the
//! fork and the join, and before the work queued after the join. Checked with a slow
//! kernel on each side of the order, on every backend (the CPU backend runs the sync
//! stream as a second stream thread, so a missing order shows there too).

mod common;

use common::backends;
use iris::World;

#[path = "common/spin.rs"]
mod spin;

#[iris::kernels(uses(crate::spin::rounds))]
mod order {
    use iris::prelude::*;

    /// After `spins` rounds of arithmetic, `*x = value` (thread 0).
    #[kernel]
    pub fn slow_store(x: *mut u32, value: u32, spins: u32) {
        spin_then_store(x, value, spins);
    }

    fn spin_then_store(x: *mut u32, value: u32, spins: u32) {
        // Never 0: the store keeps the loop.
        if thread_idx_x() == 0 && spin(value, spins) != 0 {
            unsafe { *x = value };
        }
    }

    /// `*dst = *a + *b` (thread 0).
    #[kernel]
    pub fn add(a: *const u32, b: *const u32, dst: *mut u32) {
        if thread_idx_x() == 0 {
            unsafe { *dst = *a + *b };
        }
    }

    /// Reads `*a + *b`, then after `spins` rounds stores it to `*dst` (thread 0).
    #[kernel]
    pub fn slow_add(a: *const u32, b: *const u32, dst: *mut u32, spins: u32) {
        let sum = unsafe { *a + *b };
        spin_then_store(dst, sum, spins);
    }
}

/// Rounds of `slow_store`: tens of milliseconds on a CPU thread or a GPU thread.
const SPINS: u32 = 20_000_000;

#[test]
fn forked_work_runs_after_the_fork_and_before_what_follows_the_join() {
    for backend in backends() {
        let results = World::threads(1)
            .backend(backend)
            .heap_bytes(1 << 20)
            .sync_stream(true)
            .run(|iris| {
                let x = iris.zeros::<u32>(1)?;
                let y = iris.zeros::<u32>(1)?;
                let z = iris.zeros::<u32>(1)?;
                let ten = iris.from_slice(&[10u32])?;
                let w = iris.zeros::<u32>(1)?;
                // Before the fork, slowly: x = 1.
                order::slow_store::launch(iris, (1, 1), &x, 1, SPINS)?;
                // Forked, slowly: y = x + 10 (11 only if x was read after the slow store).
                let fork = iris
                    .fork_sync_stream(|| {
                        order::slow_add::launch(iris, (1, 1), &x, &ten, &y, SPINS)
                    })?
                    .expect("a world with sync streams gives every rank one");
                // Beside it: z = 5, at once.
                order::slow_store::launch(iris, (1, 1), &z, 5, 0)?;
                fork.join()?;
                // After the join: w = y + z (16 only if both were stored before).
                order::add::launch(iris, (1, 1), &y, &z, &w)?;
                iris.synchronize()?;
                Ok([
                    x.to_vec()?[0],
                    y.to_vec()?[0],
                    z.to_vec()?[0],
                    w.to_vec()?[0],
                ])
            })
            .unwrap_or_else(|e| panic!("{backend}: {e}"));
        assert_eq!(results[0], [1, 11, 5, 16], "{backend}: x, y, z, w");
    }
}

#[test]
fn a_rank_without_a_sync_stream_forks_nothing() {
    for backend in backends() {
        World::threads(1)
            .backend(backend)
            .heap_bytes(1 << 20)
            .run(|iris| {
                assert!(!iris.has_sync_stream());
                let forked =
                    iris.fork_sync_stream(|| panic!("work forked without a sync stream"))?;
                assert!(forked.is_none());
                Ok(())
            })
            .unwrap_or_else(|e| panic!("{backend}: {e}"));
    }
}
