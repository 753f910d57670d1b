//! All-gather over symmetric memory: every rank pushes its `n` elements into slot `rank` of
//! every peer's output with `iris::store`, then checks the gathered result against the
//! inputs of all ranks.
//!
//! ```text
//! cargo run --release --example all_gather -- [--ranks 1,2,4,8] [--elems N] [--iters K]
//!                                             [--provider heap|ipc|shmem]
//! iris-run -n 2 -- target/release/examples/all_gather --provider shmem
//! ```
//! Ranks are threads of this process, spread over the devices present (several ranks share
//! one GPU on a one-GPU machine); with no GPU the kernel runs on the CPU. Started by a
//! launcher (`iris-run`, torchrun, mpirun, srun), each process is one rank of one world and
//! `--ranks` is ignored. `--provider` picks where the symmetric output lives: iris's heap,
//! one IPC export per allocation, or a SHMEM library's heap (NVSHMEM on CUDA, rocSHMEM on
//! HIP; one rank per process).

use iris::prelude::*;
use iris::{BackendKind, Iris, LaunchConfig, ProviderKind, World};
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
    provider: ProviderKind,
}

fn parse_options() -> Result<Options, String> {
    let mut opts = Options {
        ranks: vec![1, 2, 4, 8],
        elems: None,
        iters: 20,
        provider: ProviderKind::Heap,
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
            "--provider" => {
                opts.provider = match value()?.as_str() {
                    "heap" => ProviderKind::Heap,
                    "ipc" => ProviderKind::Ipc,
                    "shmem" => ProviderKind::Shmem,
                    other => {
                        return Err(format!(
                            "--provider: `{other}` is not one of heap, ipc, shmem"
                        ))
                    }
                }
            }
            "-h" | "--help" => {
                println!(
                    "usage: all_gather [--ranks 1,2,4,8] [--elems N per rank] [--iters K] [--provider heap|ipc|shmem]"
                );
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument `{other}` (try --help)")),
        }
    }
    Ok(opts)
}

/// What one world measured: the slowest rank's median, and whether every rank's result
/// was right.
struct WorldResult {
    backend: BackendKind,
    device: String,
    correct: bool,
    worst_ms: f32,
}

/// Runs the all-gather on one rank; every rank returns the whole world's result.
fn run_rank(
    iris: &Iris,
    n: usize,
    iters: usize,
    provider: ProviderKind,
) -> iris::Result<WorldResult> {
    let world = iris.world_size();
    let me = iris.rank();
    let mut rng = rand::rng();
    let input_host: Vec<f32> = (0..n).map(|_| rng.random_range(-1.0f32..1.0)).collect();
    let input = iris.from_slice(&input_host)?;
    // Poisoned: an element nobody wrote stays NaN and fails the check.
    let out = iris.symmetric_from_slice_with(provider, &vec![f32::NAN; n * world])?;
    let config = LaunchConfig::for_elements(n as u64, 256);
    let launch = || {
        all_gather::launch(
            iris,
            config,
            &input,
            &out,
            n as u64,
            me as u32,
            world as u32,
        )
    };

    launch()?;
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
        launch()?;
        let end = iris.record_event()?;
        end.synchronize()?;
        times.push(start.elapsed_ms(&end)?);
    }
    iris.barrier()?;
    times.sort_by(f32::total_cmp);
    let medians = iris.all_gather(times[times.len() / 2])?;
    let verdicts = iris.all_gather(u8::from(correct))?;
    Ok(WorldResult {
        backend: iris.backend_kind(),
        device: iris.device_info().name.clone(),
        correct: verdicts.iter().all(|&v| v == 1),
        worst_ms: medians.iter().copied().fold(0.0f32, f32::max),
    })
}

fn elems_for(opts: &Options, backend: BackendKind) -> usize {
    opts.elems.unwrap_or(if backend == BackendKind::Cpu {
        1 << 16
    } else {
        1 << 20
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
    let launched = match iris::rank_env_from_process() {
        Ok(env) => env,
        Err(e) => {
            eprintln!("all_gather: {e}");
            return ExitCode::from(2);
        }
    };
    let mut rows = Vec::new();
    let worlds = match &launched {
        Some(env) => vec![env.world_size],
        None => opts.ranks.clone(),
    };
    // The backend decides the default size.
    let backend = match World::default_backend() {
        Ok(k) => k,
        Err(e) => {
            eprintln!("all_gather: {e}");
            return ExitCode::FAILURE;
        }
    };
    let n = elems_for(&opts, backend);
    for ranks in worlds {
        let heap = (n * ranks * 4).next_multiple_of(1 << 20) + (1 << 20);
        let world = match &launched {
            Some(env) => World::process(env.clone()),
            None => World::threads(ranks),
        };
        let result = world
            .heap_bytes(heap)
            .run(|iris| run_rank(iris, n, opts.iters, opts.provider));
        match result {
            Ok(per_rank) => rows.push((ranks, n * 4, per_rank.into_iter().next())),
            Err(e) => {
                eprintln!("all_gather at {ranks} ranks failed: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    if launched.as_ref().is_some_and(|env| env.rank != 0) {
        // Rank 0 prints the table; every rank checked the same world result.
        let all_correct = rows
            .iter()
            .all(|(_, _, r)| r.as_ref().is_some_and(|r| r.correct));
        return if all_correct {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        };
    }
    let mut all_correct = true;
    println!(
        "{:>5}  {:>7}  {:>8}  {:>12}  {:>10}  {:>12}  {:>7}  device",
        "ranks", "backend", "provider", "bytes/rank", "time (ms)", "GB/s/rank", "correct"
    );
    for (ranks, bytes, result) in rows {
        let Some(r) = result else { continue };
        all_correct &= r.correct;
        // Each rank writes its bytes to every rank.
        let gbps = (bytes * ranks) as f64 / (r.worst_ms as f64 * 1e-3) / 1e9;
        println!(
            "{ranks:>5}  {:>7}  {:>8}  {bytes:>12}  {:>10.4}  {gbps:>12.2}  {:>7}  {}",
            r.backend,
            opts.provider,
            r.worst_ms,
            if r.correct { "yes" } else { "NO" },
            r.device
        );
    }
    if all_correct {
        ExitCode::SUCCESS
    } else {
        eprintln!("all_gather: the gathered data did not match the inputs");
        ExitCode::FAILURE
    }
}
