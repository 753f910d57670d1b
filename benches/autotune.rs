//! The autotuned all-reduce and all-gather (`Auto`) against the fixed rule
//! (`IRIS_AUTOTUNE=0`: one-shot up to 256 KiB, two-shot above; push), ranks as threads,
//! over message sizes, in one run:
//!
//! - per size: the fixed choice's and the tuned choice's time (median over iters, slowest
//!   rank) and bandwidth (bytes a rank / time), and what the tuner chose;
//! - every candidate the tuner measured (from its cache file);
//! - the first calls' time with an empty cache (measuring) and again in a second world
//!   with the cache the first wrote (reading it).
//!
//! ```text
//! cargo bench --bench autotune -- [--ranks 4] [--iters 20] [--queued] [--json FILE]
//! ```
//! `--json` writes the table for `scripts/plot_bench.py --autotune`. On the CPU backend it
//! runs small sizes once (a check that it works, not a speed).

use std::path::Path;
use std::time::Instant;

use iris::ccl::{self, AllGatherAlgo, AllReduceAlgo, Ccl, ReduceOp};
use iris::{BackendKind, Iris, World};

#[path = "common/timing.rs"]
mod timing;
use timing::{arg, time, Timing};

/// One collective and size: fixed and tuned times (ms), the tuned decision.
struct Row {
    collective: &'static str,
    bytes: usize,
    fixed_ms: f64,
    tuned_ms: f64,
    chosen: String,
}

/// Runs `collective` with `algo` on `n` f32 a rank.
fn call<'a>(
    ccl: &'a Ccl<'a>,
    iris: &'a Iris,
    collective: &str,
    n: usize,
    tuned: bool,
) -> iris::Result<impl FnMut() -> iris::Result<()> + 'a> {
    let world = iris.world_size();
    let input = iris.symmetric_full(n, 1.0f32)?;
    let output = iris.symmetric_zeros::<f32>(if collective == "all_gather" {
        world * n
    } else {
        n
    })?;
    let gather = collective == "all_gather";
    Ok(move || {
        if gather {
            let algo = if tuned {
                AllGatherAlgo::Auto
            } else {
                AllGatherAlgo::Push
            };
            ccl::all_gather(ccl, &input, &output, algo)
        } else {
            // The fixed rule is what `Auto` does with tuning off.
            ccl::all_reduce(ccl, &input, &output, ReduceOp::Sum, AllReduceAlgo::Auto)
        }
    })
}

/// Every size, fixed then tuned; and the first tuned calls' time.
fn run(
    iris: &Iris,
    sizes: &[usize],
    timing: Timing,
    cache: &Path,
) -> iris::Result<(Vec<Row>, f64)> {
    let fixed = Ccl::new(iris)?
        .with_autotune(false)
        .with_autotune_cache(None);
    let tuned = Ccl::new(iris)?.with_autotune_cache(Some(cache.to_path_buf()));
    // The first tuned call of every size, on every rank: measuring, or reading the cache.
    iris.barrier()?;
    let start = Instant::now();
    for collective in ["all_reduce", "all_gather"] {
        for &bytes in sizes {
            let mut work = call(&tuned, iris, collective, bytes / 4, true)?;
            work()?;
        }
    }
    tuned.synchronize()?;
    let first_ms = start.elapsed().as_secs_f64() * 1e3;
    let mut rows = Vec::new();
    for collective in ["all_reduce", "all_gather"] {
        for &bytes in sizes {
            let fixed_ms = time(
                iris,
                timing,
                call(&fixed, iris, collective, bytes / 4, false)?,
            )?;
            let tuned_ms = time(
                iris,
                timing,
                call(&tuned, iris, collective, bytes / 4, true)?,
            )?;
            let bucket = format!(
                "{collective}|f32|2^{}|",
                bytes.next_power_of_two().trailing_zeros()
            );
            let chosen = tuned
                .autotuned()
                .into_iter()
                .find(|t| t.key.starts_with(&bucket))
                .map_or("?".into(), |t| format!("{} x{}", t.kernel, t.blocks));
            rows.push(Row {
                collective,
                bytes,
                fixed_ms,
                tuned_ms,
                chosen,
            });
        }
    }
    Ok((rows, first_ms))
}

fn human(b: usize) -> String {
    match b {
        b if b >= 1 << 20 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 => format!("{} KiB", b >> 10),
        b => format!("{b} B"),
    }
}

fn main() -> std::process::ExitCode {
    let ranks = arg("--ranks").unwrap_or(4);
    let gpu = !matches!(World::default_backend(), Ok(BackendKind::Cpu) | Err(_));
    let timing = Timing::from_args(if gpu { 20 } else { 1 });
    let iters = timing.iters;
    let sizes: Vec<usize> = if gpu {
        (0..9)
            .map(|i| (4usize << 10) << (2 * i))
            .take_while(|&b| b <= 256 << 20)
            .collect()
    } else {
        vec![4 << 10, 64 << 10]
    };
    let cache = std::env::temp_dir().join(format!("iris-autotune-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&cache);
    let heap = sizes.iter().max().copied().unwrap_or(0) * (ranks + 2) * 2 + (64 << 20);
    let world = |label: &str| {
        World::threads(ranks)
            .heap_bytes(heap)
            .run(|iris| run(iris, &sizes, timing, &cache))
            .map_err(|e| eprintln!("autotune ({label}): {e}"))
            .ok()
            .map(|mut all| all.swap_remove(0))
    };
    let Some((rows, cold_ms)) = world("empty cache") else {
        return std::process::ExitCode::FAILURE;
    };
    let Some((_, warm_ms)) = world("with the cache") else {
        return std::process::ExitCode::FAILURE;
    };
    let file = cache.join("autotune.json");
    let cached: serde_json::Value = std::fs::read_to_string(&file)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or_default();
    println!("every candidate the tuner measured (us a call, slowest rank):");
    if let Some(entries) = cached["entries"].as_object() {
        for (key, e) in entries {
            let all: Vec<String> = e["candidates"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|c| {
                    format!(
                        "{} x{} {:.1}",
                        c["kernel"].as_str().unwrap_or("?"),
                        c["blocks"],
                        c["us"].as_f64().unwrap_or(0.0)
                    )
                })
                .collect();
            println!("  {key}: {}", all.join(", "));
        }
    }
    println!(
        "autotune: {ranks} ranks as threads, {}, slowest rank; first tuned call of every size: {cold_ms:.1} ms with an empty cache, {warm_ms:.1} ms with the cache ({})",
        timing.describe(),
        file.display()
    );
    println!(
        "{:<11} {:>8} {:>10} {:>9} {:>10} {:>9} {:>7}  chosen",
        "collective", "bytes", "fixed ms", "GB/s", "tuned ms", "GB/s", "ratio"
    );
    let mut json = Vec::new();
    for r in &rows {
        let gbps = |ms: f64| r.bytes as f64 / ms / 1e6;
        println!(
            "{:<11} {:>8} {:>10.4} {:>9.1} {:>10.4} {:>9.1} {:>6.2}x  {}",
            r.collective,
            human(r.bytes),
            r.fixed_ms,
            gbps(r.fixed_ms),
            r.tuned_ms,
            gbps(r.tuned_ms),
            r.tuned_ms / r.fixed_ms,
            r.chosen
        );
        json.push(serde_json::json!({
            "collective": r.collective, "bytes": r.bytes, "fixed_ms": r.fixed_ms,
            "tuned_ms": r.tuned_ms, "chosen": r.chosen,
        }));
    }
    if let Some(path) = arg::<String>("--json") {
        let out = serde_json::json!({"ranks": ranks, "iters": iters, "cold_ms": cold_ms, "warm_ms": warm_ms, "rows": json, "cache": cached});
        if let Err(e) = std::fs::write(
            &path,
            serde_json::to_string_pretty(&out).unwrap_or_default(),
        ) {
            eprintln!("autotune: cannot write {path}: {e}");
        }
    }
    let _ = std::fs::remove_dir_all(&cache);
    std::process::ExitCode::SUCCESS
}
