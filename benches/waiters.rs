//! What blocks waiting for a signal cost a GEMM that runs beside them on the same device,
//! in one run: a consumer kernel whose blocks wait while the producer computes.
//!
//! - `alone`: `--gemms` back-to-back 4096 x 4096 x 4096 bf16 GEMMs (`warpgroup_256`, Bᵀ),
//!   then a kernel that sets a flag: the ceiling.
//! - `beside waiters (signal_wait_until)`: the same, with `--blocks` blocks launched
//!   first on the rank's sync stream, thread 0 of each waiting in `signal_wait_until` for
//!   the flag (iris's wait: it reads the world's abort flag, host memory, once a
//!   millisecond a thread).
//! - `beside waiters (abort flag at every poll)`: the same wait written by hand reading
//!   the abort flag at every poll after its first 4096, as iris's waits did before
//!   2026-12-06 (a fused GEMM beside 128 such waiters took 27 ms instead of 1 on an H100).
//!
//! ```text
//! cargo bench --bench waiters -- [--blocks 128] [--gemms 40] [--iters 5] [--queued]
//! ```
//! Every kernel here that waits is loaded with the largest shared-memory split (iris does
//! so for kernels that may spin); `IRIS_SHARED_CARVEOUT=driver` leaves the split to the
//! driver, as iris did before 2026-12-06 (the waiting blocks then hold their
//! multiprocessors at a small split, where no GEMM block starts).
//!
//! The GEMMs run long enough (about 10 ms on an H100 at 40) that the waits pass their
//! eager polls. Prints the median ms over `--iters` (device events) and the ratio to
//! `alone`, one rank (threads), on the backend `IRIS_BACKEND` names (default: the first
//! found); on the CPU backend one small GEMM and 2 waiting blocks (a check that it works,
//! not a speed).

#[path = "common/timing.rs"]
mod timing;

use iris::ccl::gemm_kernels::warpgroup_kernels::warpgroup_256;
use iris::prelude::bf16;
use iris::{BackendKind, Iris, LaunchConfig, World};
use timing::{arg, time, Timing};

#[iris::kernels]
mod waiters {
    use iris::prelude::*;

    /// Thread 0 of each block waits with `signal_wait_until` until `flag` is not 0.
    #[kernel]
    pub fn wait_library(flag: Symmetric<u64>) {
        if thread_idx_x() == 0 {
            signal_wait_until(flag, Cmp::Ne, 0);
        }
        sync_threads();
    }

    /// The same wait by hand, reading the world's abort flag at every poll after the
    /// first 4096 (bounded by `limit_ns`).
    #[kernel]
    pub fn wait_abort_every_poll(flag: Symmetric<u64>, me: u32, limit_ns: u64) {
        if thread_idx_x() == 0 {
            let start = global_timer_ns();
            let mut polls = 0u32;
            while atomic_load(flag, me, Ordering::Relaxed, Scope::System) == 0 {
                polls += 1;
                if polls > 4096 {
                    if world_aborted(flag) || global_timer_ns() - start >= limit_ns {
                        break;
                    }
                    nanosleep(128);
                }
            }
        }
        sync_threads();
    }

    /// Sets `flag` to `value` in this rank's copy (0: ready for the next round).
    #[kernel]
    pub fn set_flag(flag: Symmetric<u64>, me: u32, value: u64) {
        if thread_idx_x() == 0 {
            atomic_store(flag, value, me, Ordering::Release, Scope::System);
        }
    }
}

/// Who waits beside the GEMMs.
#[derive(Clone, Copy, PartialEq)]
enum Waiters {
    None,
    Library,
    AbortEveryPoll,
}

impl Waiters {
    fn name(self) -> &'static str {
        match self {
            Waiters::None => "alone",
            Waiters::Library => "beside waiters (signal_wait_until)",
            Waiters::AbortEveryPoll => "beside waiters (abort flag at every poll)",
        }
    }
}

fn main() -> iris::Result<()> {
    let timing = Timing::from_args(5);
    World::threads(1).sync_stream(true).run(|iris| {
        let cpu = iris.backend_kind() == BackendKind::Cpu;
        let (blocks, gemms, (m, n, k)) = if cpu {
            (2, 1, (128, 256, 64))
        } else {
            (
                arg("--blocks").unwrap_or(128u32),
                arg("--gemms").unwrap_or(40usize),
                (4096, 4096, 4096),
            )
        };
        println!(
            "waiters: {} ({}), {gemms} GEMMs {m}x{n}x{k} bf16, {blocks} waiting blocks; {}",
            iris.device_info().name,
            iris.backend_kind(),
            timing.describe()
        );
        let mut rows = Vec::new();
        for waiters in [Waiters::None, Waiters::Library, Waiters::AbortEveryPoll] {
            let ms = round(iris, timing, waiters, blocks, gemms, (m, n, k))?;
            rows.push((waiters.name(), ms));
        }
        let alone = rows[0].1;
        println!("{:<44} {:>10} {:>10}", "case", "ms", "x alone");
        for (name, ms) in rows {
            println!("{name:<44} {ms:>10.3} {:>10.2}", ms / alone);
        }
        Ok(())
    })?;
    Ok(())
}

/// The median ms of one round: the flag cleared, the waiters forked onto the sync
/// stream, `gemms` GEMMs and the flag set on the rank's stream, the fork joined.
fn round(
    iris: &Iris,
    timing: Timing,
    waiters: Waiters,
    blocks: u32,
    gemms: usize,
    (m, n, k): (usize, usize, usize),
) -> iris::Result<f64> {
    let a = iris.zeros::<bf16>(m * k)?;
    let bt = iris.zeros::<bf16>(n * k)?;
    let c = iris.symmetric_zeros::<f32>(m * n)?;
    let flag = iris.symmetric_zeros::<u64>(1)?;
    let me = iris.rank() as u32;
    let limit_ns = 10_000_000_000u64;
    time(iris, timing, || {
        waiters::set_flag::launch(iris, (1, 1), &flag, me, 0)?;
        let fork = match waiters {
            Waiters::None => None,
            Waiters::Library => iris.fork_sync_stream(|| {
                waiters::wait_library::launch(iris, LaunchConfig::linear(blocks, 256), &flag)
            })?,
            Waiters::AbortEveryPoll => iris.fork_sync_stream(|| {
                waiters::wait_abort_every_poll::launch(
                    iris,
                    LaunchConfig::linear(blocks, 256),
                    &flag,
                    me,
                    limit_ns,
                )
            })?,
        };
        if waiters != Waiters::None && fork.is_none() {
            return Err(iris::Error::InvalidConfig(
                "waiters: the rank has no sync stream to wait on".into(),
            ));
        }
        for _ in 0..gemms {
            warpgroup_256::launch::<bf16>(
                iris,
                LaunchConfig::linear((m / 128 * (n / 256)) as u32, 256),
                &a.device_ptr(),
                &bt.device_ptr(),
                &c,
                n as u32,
                k as u32,
                0,
                me,
                1,
                1,
            )?;
        }
        waiters::set_flag::launch(iris, (1, 1), &flag, me, 1)?;
        if let Some(fork) = fork {
            fork.join()?;
        }
        Ok(())
    })
}
