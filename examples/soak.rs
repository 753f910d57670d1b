//! Soak: the all-gather and the all-reduce of `iris::ccl` in a loop for a given time at 8
//! ranks, every result checked against a host reference, with a symmetric allocation made
//! and freed every iteration (so the heap is churned too), and the process's resident
//! memory sampled from `/proc/self/statm` at the start, after the warm-up, in the middle
//! and at the end (and once more after the world is torn down).
//!
//! ```text
//! cargo run --release --example soak -- [--seconds 600] [--ranks 8] [--elems 4096] [--rss-bound-mib 8]
//! ```
//!
//! Prints a table; exits non-zero if any result was wrong, any call failed, or resident
//! memory grew by more than `--rss-bound-mib` between the end of the warm-up (a tenth of the
//! run, at most 30 s) and the last iteration. The backend is the first present (`IRIS_BACKEND`
//! chooses).

use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use iris::ccl::{self, AllGatherAlgo, AllReduceAlgo, Ccl, ReduceOp};
use iris::{Iris, World};

struct Options {
    seconds: f64,
    ranks: usize,
    elems: usize,
    rss_bound_mib: f64,
}

fn parse_options() -> Result<Options, String> {
    let mut opts = Options {
        seconds: 600.0,
        ranks: 8,
        elems: 4096,
        rss_bound_mib: 8.0,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{flag} needs a value"));
        let bad = |e: &dyn std::fmt::Display| format!("{flag}: {e}");
        match flag.as_str() {
            "--seconds" => opts.seconds = value()?.parse().map_err(|e| bad(&e))?,
            "--ranks" => opts.ranks = value()?.parse().map_err(|e| bad(&e))?,
            "--elems" => opts.elems = value()?.parse().map_err(|e| bad(&e))?,
            "--rss-bound-mib" => opts.rss_bound_mib = value()?.parse().map_err(|e| bad(&e))?,
            "-h" | "--help" => {
                println!("usage: soak [--seconds 600] [--ranks 8] [--elems 4096 per rank] [--rss-bound-mib 8]");
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument `{other}` (try --help)")),
        }
    }
    if opts.seconds.is_nan() || opts.seconds <= 0.0 || opts.ranks == 0 || opts.elems == 0 {
        return Err("--seconds, --ranks and --elems must be positive".into());
    }
    Ok(opts)
}

/// Resident set size in bytes: the second field of `/proc/self/statm`, in pages.
fn rss_bytes() -> u64 {
    const PAGE: u64 = 4096; // x86-64 and the usual aarch64 Linux configuration
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| {
            s.split_whitespace()
                .nth(1)
                .and_then(|p| p.parse::<u64>().ok())
        })
        .map_or(0, |pages| pages * PAGE)
}

struct Sample {
    phase: &'static str,
    at: Duration,
    iterations: u64,
    rss: u64,
}

/// Rank `r`'s all-gather input at iteration `k`.
fn gather_input(k: u64, r: usize, n: usize) -> Vec<i64> {
    (0..n)
        .map(|i| ((k as i64) << 32) ^ ((r as i64) << 20) ^ i as i64)
        .collect()
}

/// Rank `r`'s all-reduce input at iteration `k`: small integers, so `f32` sums are exact.
fn reduce_input(k: u64, r: usize, n: usize) -> Vec<f32> {
    (0..n)
        .map(|i| ((k as usize * 7 + r * 13 + i) % 97) as f32 - 48.0)
        .collect()
}

fn main() -> ExitCode {
    let opts = match parse_options() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("soak: {e}");
            return ExitCode::FAILURE;
        }
    };
    let duration = Duration::from_secs_f64(opts.seconds);
    let warm_up = (duration / 10).min(Duration::from_secs(30));
    let samples = Mutex::new(vec![Sample {
        phase: "start",
        at: Duration::ZERO,
        iterations: 0,
        rss: rss_bytes(),
    }]);
    let wrong = AtomicU64::new(0);
    let first_wrong = Mutex::new(None::<String>);
    let start = Instant::now();
    let n = opts.elems;

    let result = World::threads(opts.ranks)
        .heap_bytes((n * opts.ranks * 8 * 4 + (1 << 20)).next_power_of_two())
        .run(|iris: &Iris| {
            let (me, world) = (iris.rank(), iris.world_size());
            let ccl = Ccl::new(iris)?;
            let g_in = iris.symmetric::<i64>(n)?;
            let g_out = iris.symmetric::<i64>(n * world)?;
            let r_in = iris.symmetric::<f32>(n)?;
            let r_out = iris.symmetric::<f32>(n)?;
            let mut k = 0u64;
            let mut phase = 0; // 0: warming up, 1: warmed, 2: past the middle
            loop {
                // every rank stops at the same iteration: rank 0's clock decides
                let elapsed = start.elapsed();
                let stop = iris.all_gather(u64::from(me == 0 && elapsed >= duration))?;
                if stop[0] == 1 {
                    if me == 0 {
                        if let Ok(mut s) = samples.lock() {
                            s.push(Sample { phase: "end", at: elapsed, iterations: k, rss: rss_bytes() });
                        }
                    }
                    break;
                }
                if me == 0 {
                    let next = match phase {
                        0 if elapsed >= warm_up => Some("warmed up"),
                        1 if elapsed >= duration / 2 => Some("middle"),
                        _ => None,
                    };
                    if let Some(name) = next {
                        phase += 1;
                        if let Ok(mut s) = samples.lock() {
                            s.push(Sample { phase: name, at: elapsed, iterations: k, rss: rss_bytes() });
                        }
                    }
                }
                // churn the heap: a symmetric allocation of varying size, made and freed
                let scratch = iris.symmetric::<u8>(1 + (k as usize % 17) * 4096)?;
                g_in.copy_from_slice(&gather_input(k, me, n))?;
                r_in.copy_from_slice(&reduce_input(k, me, n))?;
                let g_algo = if k % 2 == 0 { AllGatherAlgo::Push } else { AllGatherAlgo::Pull };
                let r_algo = if k % 2 == 0 { AllReduceAlgo::OneShot } else { AllReduceAlgo::TwoShot };
                ccl::all_gather(&ccl, &g_in, &g_out, g_algo)?;
                ccl::all_reduce(&ccl, &r_in, &r_out, ReduceOp::Sum, r_algo)?;
                ccl.synchronize()?;
                scratch.free()?;

                let gathered = g_out.to_vec()?;
                let want: Vec<i64> = (0..world).flat_map(|r| gather_input(k, r, n)).collect();
                let reduced = r_out.to_vec()?;
                let inputs: Vec<Vec<f32>> = (0..world).map(|r| reduce_input(k, r, n)).collect();
                let sum: Vec<f32> = (0..n).map(|i| inputs.iter().map(|v| v[i]).sum()).collect();
                let bad_g = gathered.iter().zip(&want).filter(|(a, b)| a != b).count();
                let bad_r = reduced.iter().zip(&sum).filter(|(a, b)| a != b).count();
                if bad_g + bad_r > 0 {
                    wrong.fetch_add((bad_g + bad_r) as u64, Ordering::Relaxed);
                    if let Ok(mut first) = first_wrong.lock() {
                        first.get_or_insert_with(|| {
                            format!("rank {me}, iteration {k}: {bad_g} all-gather and {bad_r} all-reduce elements wrong ({g_algo:?}, {r_algo:?})")
                        });
                    }
                }
                k += 1;
            }
            ccl.synchronize()?;
            Ok((k, iris.device_info().name.clone(), iris.backend_kind()))
        });

    let elapsed = start.elapsed();
    let (iterations, device, backend) = match result {
        Ok(per_rank) => {
            per_rank
                .into_iter()
                .next()
                .unwrap_or((0, String::new(), iris::BackendKind::Cpu))
        }
        Err(e) => {
            eprintln!("soak: FAILED: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut samples = samples.into_inner().unwrap_or_default();
    samples.push(Sample {
        phase: "after teardown",
        at: elapsed,
        iterations,
        rss: rss_bytes(),
    });

    let mib = |b: u64| b as f64 / (1 << 20) as f64;
    println!(
        "soak: {} ranks on {backend} ({device}), {n} elements per rank, {:.0} s; each iteration: all-gather (i64) + all-reduce (f32 sum), algorithms alternating, one symmetric alloc/free",
        opts.ranks,
        elapsed.as_secs_f64()
    );
    println!("| phase | time (s) | iterations | RSS (MiB) |");
    println!("|---|---:|---:|---:|");
    for s in &samples {
        println!(
            "| {} | {:.1} | {} | {:.1} |",
            s.phase,
            s.at.as_secs_f64(),
            s.iterations,
            mib(s.rss)
        );
    }
    let wrong = wrong.into_inner();
    let warmed = samples
        .iter()
        .find(|s| s.phase == "warmed up")
        .or_else(|| samples.first())
        .map_or(0, |s| s.rss);
    let end = samples
        .iter()
        .find(|s| s.phase == "end")
        .map_or(0, |s| s.rss);
    let growth = mib(end) - mib(warmed);
    println!(
        "iterations: {iterations} ({:.1}/s); wrong elements: {wrong}; RSS growth after warm-up: {growth:+.2} MiB (bound {} MiB)",
        iterations as f64 / elapsed.as_secs_f64(),
        opts.rss_bound_mib
    );
    let mut ok = true;
    if wrong > 0 {
        let first = first_wrong.into_inner().ok().flatten().unwrap_or_default();
        eprintln!("soak: FAILED: {wrong} wrong elements; first: {first}");
        ok = false;
    }
    if growth > opts.rss_bound_mib {
        eprintln!("soak: FAILED: resident memory grew by {growth:.2} MiB after the warm-up");
        ok = false;
    }
    if iterations == 0 {
        eprintln!("soak: FAILED: no iteration completed");
        ok = false;
    }
    if ok {
        println!("soak: OK");
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
