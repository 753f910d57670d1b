//! What a kernel's `trace_event` costs: a kernel whose every thread records `rounds`
//! events, in a traced run and in an untraced one, against the same kernel without the
//! calls, on one rank; the difference per event in ns (of the launch's device time, over
//! every event of the grid).
//!
//! ```text
//! cargo bench --features trace-events --bench trace_events -- [--blocks 132] [--threads 256] [--rounds 64] [--iters 20] [--queued]
//! ```
//! Without the `trace-events` feature the calls compile to nothing and both rows are 0
//! (within noise), which the bench prints as such.

use iris::World;

#[path = "common/timing.rs"]
mod timing;
use timing::{arg, time, Timing};

#[iris::kernels]
mod kernels {
    use iris::prelude::*;

    /// Every thread records `rounds` events and keeps a running value.
    #[kernel]
    pub fn with_events(out: *mut u64, rounds: u32) {
        let mut acc = (block_idx_x() * block_dim_x() + thread_idx_x()) as u64;
        for r in 0..rounds {
            trace_event(r, acc);
            acc = acc * 3 + 1;
        }
        unsafe { *out.add((block_idx_x() * block_dim_x() + thread_idx_x()) as usize) = acc };
    }

    /// The same work without the events.
    #[kernel]
    pub fn without(out: *mut u64, rounds: u32) {
        let mut acc = (block_idx_x() * block_dim_x() + thread_idx_x()) as u64;
        for _r in 0..rounds {
            acc = acc * 3 + 1;
        }
        unsafe { *out.add((block_idx_x() * block_dim_x() + thread_idx_x()) as usize) = acc };
    }
}

/// The two kernels' times (ms) on one rank, traced into `trace` or not.
fn measure(
    trace: Option<&std::path::Path>,
    grid: (u32, u32),
    rounds: u32,
    timing: Timing,
) -> iris::Result<(f64, f64)> {
    let mut world = World::threads(1).heap_bytes(1 << 20);
    if let Some(dir) = trace {
        world = world.trace(dir);
    }
    let times = world.run(|iris| {
        let out = iris.zeros::<u64>((grid.0 * grid.1) as usize)?;
        let with = time(iris, timing, || {
            kernels::with_events::launch(iris, grid, &out, rounds)
        })?;
        let without = time(iris, timing, || {
            kernels::without::launch(iris, grid, &out, rounds)
        })?;
        Ok((with, without))
    })?;
    Ok(times[0])
}

fn main() -> iris::Result<()> {
    let blocks: u32 = arg("--blocks").unwrap_or(132);
    let threads: u32 = arg("--threads").unwrap_or(256);
    let rounds: u32 = arg("--rounds").unwrap_or(64);
    let timing = Timing::from_args(20);
    let built_in = cfg!(feature = "trace-events");
    let events = f64::from(blocks) * f64::from(threads) * f64::from(rounds);
    let dir = std::env::temp_dir().join(format!("iris-bench-trace-events-{}", std::process::id()));
    let (untraced_with, untraced_without) = measure(None, (blocks, threads), rounds, timing)?;
    let (traced_with, traced_without) = measure(Some(&dir), (blocks, threads), rounds, timing)?;
    let _ = std::fs::remove_dir_all(&dir);
    println!(
        "trace_event cost: {blocks} blocks x {threads} threads x {rounds} events = {events} events a launch; trace-events built in: {built_in}; {}",
        timing.describe()
    );
    println!(
        "{:<10} {:>16} {:>16} {:>14}",
        "run", "with events ms", "without ms", "ns per event"
    );
    for (run, with, without) in [
        ("untraced", untraced_with, untraced_without),
        ("traced", traced_with, traced_without),
    ] {
        let per_event = (with - without) * 1e6 / events;
        println!("{run:<10} {with:>16.4} {without:>16.4} {per_event:>14.3}");
    }
    Ok(())
}
