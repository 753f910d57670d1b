//! All-gather over symmetric memory: every rank pushes its `n` elements into slot `rank` of
//! every peer's output with `iris::store`, then checks the gathered result against the
//! inputs of all ranks.
//!
//! ```text
//! cargo run --release --example all_gather -- [--ranks 1,2,4,8] [--elems N] [--iters K]
//! ```
//! Ranks are threads of this process, spread over the devices present (several ranks share
//! one GPU on a one-GPU machine); with no GPU the kernel runs on the CPU.

use iris::prelude::*;
use iris::{BackendKind, Iris, LaunchConfig, World};
use rand::Rng;
use std::process::ExitCode;

/// Every rank writes its `n` inputs into slot `me` of every peer's `out`.
#[iris::kernel]
pub fn all_gather(input: *const f32, out: Symmetric<f32>, n: u64, me: u32, world: u32) {
    let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as u64;
    if i < n {
        let v = unsafe { *input.add(i as usize) };
        for peer in 0..world {
            iris::store(out.add((me as u64 * n + i) as usize), v, peer);
        }
    }
}

struct Options {
    ranks: Vec<usize>,
    elems: Option<usize>,
    iters: usize,
}

fn parse_options() -> Result<Options, String> {
    let mut opts = Options {
        ranks: vec![1, 2, 4, 8],
        elems: None,
        iters: 20,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--ranks" => {
                opts.ranks = value()?
                    .split(',')
                    .map(|r| {
                        r.trim()
                            .parse::<usize>()
                            .map_err(|e| format!("--ranks: {e}"))
                    })
                    .collect::<Result<_, _>>()?;
                if opts.ranks.contains(&0) {
                    return Err("--ranks: a world has at least one rank".into());
                }
            }
            "--elems" => opts.elems = Some(value()?.parse().map_err(|e| format!("--elems: {e}"))?),
            "--iters" => {
                opts.iters = value()?
                    .parse::<usize>()
                    .map_err(|e| format!("--iters: {e}"))?
                    .max(1)
            }
            "-h" | "--help" => {
                println!("usage: all_gather [--ranks 1,2,4,8] [--elems N per rank] [--iters K]");
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument `{other}` (try --help)")),
        }
    }
    Ok(opts)
}

/// What one rank measured.
struct RankResult {
    device: String,
    correct: bool,
    median_ms: f32,
}

fn run_rank(iris: &Iris, n: usize, iters: usize) -> iris::Result<RankResult> {
    let world = iris.world_size();
    let me = iris.rank();
    let mut rng = rand::rng();
    let input_host: Vec<f32> = (0..n).map(|_| rng.random_range(-1.0f32..1.0)).collect();
    let input = iris.from_slice(&input_host)?;
    // Poisoned: an element nobody wrote stays NaN and fails the check.
    let out = iris.symmetric_full::<f32>(n * world, f32::NAN)?;
    let config = LaunchConfig::for_elements(n as u64, 256);

    all_gather::launch(
        iris,
        config,
        &input,
        &out,
        n as u64,
        me as u32,
        world as u32,
    )?;
    iris.barrier()?;
    let everyone = iris.all_gather(input_host)?;
    let got = out.to_vec()?;
    let correct = everyone
        .iter()
        .enumerate()
        .all(|(r, want)| got[r * n..(r + 1) * n] == want[..]);

    let mut times = Vec::with_capacity(iters);
    for _ in 0..iters {
        iris.barrier()?;
        let start = iris.record_event()?;
        all_gather::launch(
            iris,
            config,
            &input,
            &out,
            n as u64,
            me as u32,
            world as u32,
        )?;
        let end = iris.record_event()?;
        end.synchronize()?;
        times.push(start.elapsed_ms(&end)?);
    }
    iris.barrier()?;
    times.sort_by(f32::total_cmp);
    Ok(RankResult {
        device: iris.device_info().name.clone(),
        correct,
        median_ms: times[times.len() / 2],
    })
}

fn main() -> ExitCode {
    let opts = match parse_options() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("all_gather: {e}");
            return ExitCode::from(2);
        }
    };
    let mut all_correct = true;
    let mut rows = Vec::new();
    for &ranks in &opts.ranks {
        let probe = World::threads(1)
            .heap_bytes(1 << 20)
            .run(|iris| Ok(iris.backend_kind()));
        let backend = match probe {
            Ok(k) => k[0],
            Err(e) => {
                eprintln!("all_gather: {e}");
                return ExitCode::FAILURE;
            }
        };
        let n = opts.elems.unwrap_or(if backend == BackendKind::Cpu {
            1 << 16
        } else {
            1 << 20
        });
        let heap = (n * ranks * 4).next_multiple_of(1 << 20) + (1 << 20);
        let result = World::threads(ranks)
            .heap_bytes(heap)
            .run(|iris| run_rank(iris, n, opts.iters));
        match result {
            Ok(per_rank) => {
                let correct = per_rank.iter().all(|r| r.correct);
                all_correct &= correct;
                let worst_ms = per_rank.iter().map(|r| r.median_ms).fold(0.0f32, f32::max);
                // Each rank writes n elements to every rank.
                let bytes_written = (n * 4 * ranks) as f64;
                let gbps = bytes_written / (worst_ms as f64 * 1e-3) / 1e9;
                rows.push((
                    ranks,
                    backend,
                    per_rank[0].device.clone(),
                    n * 4,
                    worst_ms,
                    gbps,
                    correct,
                ));
            }
            Err(e) => {
                eprintln!("all_gather at {ranks} ranks failed: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    println!(
        "{:>5}  {:>7}  {:>12}  {:>10}  {:>12}  {:>7}  device",
        "ranks", "backend", "bytes/rank", "time (ms)", "GB/s/rank", "correct"
    );
    for (ranks, backend, device, bytes, ms, gbps, correct) in rows {
        println!(
            "{ranks:>5}  {backend:>7}  {bytes:>12}  {ms:>10.4}  {gbps:>12.2}  {:>7}  {device}",
            if correct { "yes" } else { "NO" }
        );
    }
    if all_correct {
        ExitCode::SUCCESS
    } else {
        eprintln!("all_gather: the gathered data did not match the inputs");
        ExitCode::FAILURE
    }
}
