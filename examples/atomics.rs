//! Remote atomics: every thread of every rank does `iris::atomic_add` on a counter of every
//! rank, and `iris::atomic_xchg` on a slot of rank 0 shared with the same thread of every
//! other rank; both at system scope. The counts must add up exactly, and for each slot the
//! values taken out plus the value left in must be the initial value plus every rank's
//! tag, each once (an exchange that lost or duplicated a value breaks that).
//!
//! ```text
//! cargo run --release --example atomics -- [--ranks 1,2,4,8] [--elems 64K] [--slots 256] [--iters K]
//! ```
//! `--elems` is the number of threads per rank (one atomic per peer each); `--slots` the
//! number of counters they share (fewer slots, more contention).

mod common;

use common::{median_ms, parse_count, parse_options, slowest, yes_no, Table};
use iris::{BackendKind, Iris, LaunchConfig, World};
use std::process::ExitCode;

#[iris::kernels]
mod remote_atomics {
    use iris::prelude::*;

    /// Thread `t` adds 1 to `counters[t % slots]` on every rank, starting with the next one.
    #[kernel]
    pub fn add_everywhere(counters: Symmetric<u64>, slots: u64, n: u64, me: u32, world: u32) {
        let t = (block_idx_x() * block_dim_x() + thread_idx_x()) as u64;
        if t < n {
            let c = counters.add((t % slots) as usize);
            for k in 1..=world {
                atomic_add(c, 1, (me + k) % world, Ordering::Relaxed, Scope::System);
            }
        }
    }

    /// Thread `t` swaps its tag (`(me + 1) << 32 | t`) into `slots[t]` on rank `target` and
    /// keeps the value it took out in `taken[t]`.
    #[kernel]
    pub fn xchg_into(slots: Symmetric<u64>, taken: *mut u64, n: u64, me: u32, target: u32) {
        let t = (block_idx_x() * block_dim_x() + thread_idx_x()) as u64;
        if t < n {
            let tag = ((me as u64 + 1) << 32) | t;
            let old = atomic_xchg(
                slots.add(t as usize),
                tag,
                target,
                Ordering::AcqRel,
                Scope::System,
            );
            unsafe { *taken.add(t as usize) = old };
        }
    }
}

struct Row {
    op: &'static str,
    ops: usize,
    ms: f32,
    correct: bool,
}

fn run_rank(iris: &Iris, elems: &[usize], slots: usize, iters: usize) -> iris::Result<Vec<Row>> {
    let world = iris.world_size();
    let (me, w) = (iris.rank() as u32, world as u32);
    let mut rows = Vec::new();
    for &n in elems {
        let cfg = LaunchConfig::for_elements(n as u64, 256);
        let slots = slots.clamp(1, n.max(1));

        // atomic_add: time it, then count one clean run exactly.
        let counters = iris.symmetric_zeros::<u64>(slots)?;
        let ms = median_ms(iris, iters, || {
            remote_atomics::add_everywhere::launch(
                iris,
                cfg,
                &counters,
                slots as u64,
                n as u64,
                me,
                w,
            )
        })?;
        let clean = iris.symmetric_zeros::<u64>(slots)?;
        remote_atomics::add_everywhere::launch(iris, cfg, &clean, slots as u64, n as u64, me, w)?;
        iris.barrier()?;
        let counts = clean.to_vec()?;
        let correct = (0..slots).all(|j| counts[j] as usize == world * (n - j).div_ceil(slots));
        rows.push(Row {
            op: "atomic_add",
            ops: n * world,
            ms,
            correct,
        });

        // atomic_xchg: every rank into rank 0's slots.
        let swap = iris.symmetric_zeros::<u64>(n)?;
        let taken = iris.zeros::<u64>(n)?;
        let ms = median_ms(iris, iters, || {
            remote_atomics::xchg_into::launch(iris, cfg, &swap, &taken, n as u64, me, 0)
        })?;
        let fresh = iris.symmetric_zeros::<u64>(n)?;
        remote_atomics::xchg_into::launch(iris, cfg, &fresh, &taken, n as u64, me, 0)?;
        iris.barrier()?;
        let everyone_took = iris.all_gather(taken.to_vec()?)?;
        let left = iris.all_gather(fresh.to_vec()?)?.swap_remove(0);
        let correct = (0..n).all(|t| {
            let mut seen: Vec<u64> = everyone_took.iter().map(|took| took[t]).collect();
            seen.push(left[t]);
            seen.sort_unstable();
            let mut want: Vec<u64> = (0..world as u64)
                .map(|r| ((r + 1) << 32) | t as u64)
                .collect();
            want.push(0);
            want.sort_unstable();
            seen == want
        });
        rows.push(Row {
            op: "atomic_xchg",
            ops: n,
            ms,
            correct,
        });
        iris.barrier()?;
    }
    Ok(rows)
}

fn main() -> ExitCode {
    let default_elems = |b: BackendKind| {
        if b == BackendKind::Cpu {
            vec![1 << 14]
        } else {
            vec![1 << 16, 1 << 20]
        }
    };
    let usage = "[--ranks 1,2,4,8] [--elems 64K (threads per rank)] [--slots 256] [--iters K]";
    let opts = match parse_options("atomics", usage, &[1, 2, 4, 8], default_elems, &["--slots"]) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("atomics: {e}");
            return ExitCode::from(2);
        }
    };
    let slots = match opts.extra("--slots").map(parse_count).unwrap_or(Ok(256)) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("atomics: --slots: {e}");
            return ExitCode::from(2);
        }
    };
    let mut table = Table::new(&[
        "ranks",
        "backend",
        "op",
        "threads/rank",
        "ops/rank",
        "time (us)",
        "Mops/s/rank",
        "correct",
        "device",
    ]);
    let mut all_correct = true;
    for &ranks in &opts.ranks {
        let max = opts.elems.iter().max().copied().unwrap_or(0);
        let heap = (max * 8 * 3 + slots * 16).next_multiple_of(1 << 20) + (1 << 20);
        let result = World::threads(ranks).heap_bytes(heap).run(|iris| {
            Ok((
                iris.backend_kind(),
                iris.device_info().name.clone(),
                run_rank(iris, &opts.elems, slots, opts.iters)?,
            ))
        });
        let per_rank = match result {
            Ok(r) => r,
            Err(e) => {
                eprintln!("atomics at {ranks} ranks failed: {e}");
                return ExitCode::FAILURE;
            }
        };
        let (backend, device) = (per_rank[0].0, per_rank[0].1.clone());
        for (i, row) in per_rank[0].2.iter().enumerate() {
            let ms = slowest(per_rank.iter().map(|r| r.2[i].ms));
            let correct = per_rank.iter().all(|r| r.2[i].correct);
            all_correct &= correct;
            let threads = if row.op == "atomic_add" {
                row.ops / ranks
            } else {
                row.ops
            };
            table.row(vec![
                ranks.to_string(),
                backend.to_string(),
                row.op.to_string(),
                threads.to_string(),
                row.ops.to_string(),
                format!("{:.1}", ms * 1e3),
                format!("{:.2}", row.ops as f64 / (f64::from(ms) * 1e-3) / 1e6),
                yes_no(correct),
                device.clone(),
            ]);
        }
    }
    table.print();
    if all_correct {
        ExitCode::SUCCESS
    } else {
        eprintln!("atomics: an atomic lost or duplicated an update");
        ExitCode::FAILURE
    }
}
