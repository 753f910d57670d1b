//! The same kernels with ranks as processes: every provider (heap, per-allocation IPC,
//! external adoption of memory another system exchanged, a SHMEM library's heap) at 2, 4
//! and 8 processes, on the CPU backend and on every GPU backend present; the fused GEMMs
//! of `iris::ccl` at 2 and 4 processes. Each process is this test binary again,
//! started with the launcher's environment (`IRIS_RANK`, `IRIS_WORLD_SIZE`, `IRIS_JOB_ID`)
//! and `IRIS_E2E_ROLE`; without that variable `child` does nothing.

mod common;

use common::backends;
use iris::prelude::*;
use iris::{LaunchConfig, ProviderKind, World};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const ROLE: &str = "IRIS_E2E_ROLE";

/// Every rank pushes its `n` inputs into slot `me` of every peer's `out`.
#[iris::kernel]
pub fn push(input: *const f32, out: Symmetric<f32>, n: u64, me: u32, world: u32) {
    let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as u64;
    if i < n {
        let v = unsafe { *input.add(i as usize) };
        for peer in 0..world {
            iris::store(out.add((me as u64 * n + i) as usize), v, peer);
        }
    }
}

/// Every thread adds one to every rank's counter, at system scope.
#[iris::kernel]
pub fn count(counter: Symmetric<u32>, world: u32) {
    for peer in 0..world {
        iris::atomic_add(counter, 1, peer, Ordering::Relaxed, Scope::System);
    }
}

/// Thread 0 of each block records event 3 with the rank (with `trace-events`) and sets
/// the block's flag in `out`.
#[iris::kernel]
pub fn marked(out: *mut u32, me: u32) {
    if thread_idx_x() == 0 {
        trace_event(3, me as u64);
        unsafe { *out.add(block_idx_x() as usize) = 1 };
    }
}

/// A traced world of processes (`IRIS_TRACE` from the parent): each rank launches
/// `marked` on 2 blocks.
fn traced_rank() -> iris::Result<String> {
    let results = World::from_env()?.heap_bytes(1 << 20).run(|iris| {
        let out = iris.zeros::<u32>(2)?;
        marked::launch(iris, (2, 32), &out, iris.rank() as u32)?;
        iris.synchronize()?;
        Ok(out.to_vec()?.iter().sum::<u32>())
    })?;
    Ok(format!("traced: {results:?}"))
}

/// Every rank's address of one allocation (what an external system's exchange yields).
fn peers_of<T: iris::Pod>(b: &iris::SymmetricBuffer<'_, T>, world: usize) -> Vec<u64> {
    (0..world).map(|r| b.peer_addr(r).unwrap_or(0)).collect()
}

fn input_of(rank: usize, n: usize) -> Vec<f32> {
    (0..n)
        .map(|i| (rank * 100_000 + i) as f32 * 0.5 - 3.0)
        .collect()
}

/// One rank's work: all-gather and an atomic counter over memory of `provider`.
fn rank_main(provider: ProviderKind) -> iris::Result<String> {
    let results = World::from_env()?.heap_bytes(8 << 20).run(|iris| {
        let (me, world) = (iris.rank(), iris.world_size());
        let n = 1000usize;
        let input = iris.from_slice(&input_of(me, n))?;
        let poison = vec![f32::NAN; n * world];
        let counter_init = [0u32];
        if provider != ProviderKind::External {
            // Ranks asking for different sizes: an error on every rank before any
            // collective call into the provider's engine, and the next allocation works.
            let len = if me == 1 { 64 } else { 32 };
            match iris.symmetric_with::<u32>(provider, len) {
                Err(iris::Error::SymmetryMismatch { details, .. })
                    if details.contains("rank 1 asked for 256 bytes of u32") => {}
                other => {
                    return Err(iris::Error::InvalidConfig(format!(
                        "rank {me}: a size mismatch gave {other:?}"
                    )))
                }
            }
        }
        // The memory of the chosen provider. External adopts what the IPC provider
        // exchanged, as a PyTorch symmetric tensor's peer pointers would be adopted.
        let backing_out;
        let backing_counter;
        let (out, counter) = match provider {
            ProviderKind::External => {
                backing_out = iris.symmetric_from_slice_with(ProviderKind::Ipc, &poison)?;
                backing_counter =
                    iris.symmetric_from_slice_with(ProviderKind::Ipc, &counter_init)?;
                // SAFETY: the addresses are the IPC provider's live mappings of one
                // allocation per rank, kept alive by `backing_*` until the end.
                unsafe {
                    (
                        iris.adopt_external::<f32>(
                            backing_out.local_ptr().addr(),
                            &peers_of(&backing_out, world),
                            n * world,
                        )?,
                        iris.adopt_external::<u32>(
                            backing_counter.local_ptr().addr(),
                            &peers_of(&backing_counter, world),
                            1,
                        )?,
                    )
                }
            }
            kind => (
                iris.symmetric_from_slice_with(kind, &poison)?,
                iris.symmetric_from_slice_with(kind, &counter_init)?,
            ),
        };
        iris.barrier()?;
        push::launch(
            iris,
            LaunchConfig::for_elements(n as u64, 128),
            &input,
            &out,
            n as u64,
            me as u32,
            world as u32,
        )?;
        count::launch(iris, (2, 64), &counter, world as u32)?;
        iris.barrier()?;
        let got = out.to_vec()?;
        for r in 0..world {
            if got[r * n..(r + 1) * n] != input_of(r, n)[..] {
                return Err(iris::Error::InvalidConfig(format!(
                    "rank {me}: slot of rank {r} is wrong"
                )));
            }
        }
        let c = counter.to_vec()?[0];
        if c as usize != world * 128 {
            return Err(iris::Error::InvalidConfig(format!(
                "rank {me}: counter {c}, want {}",
                world * 128
            )));
        }
        iris.barrier()?;
        Ok(format!(
            "rank {me} of {world} ok on {} ({:?})",
            iris.backend_kind(),
            provider
        ))
    })?;
    Ok(results.join(", "))
}

/// A rank of a world over two "nodes" (loopback, two host names): the heap provider
/// cannot reach the other node's rank, so `Ccl::new` must refuse, naming the Shmem
/// provider.
fn ccl_across_nodes() -> iris::Result<String> {
    let results =
        World::from_env()?
            .heap_bytes(1 << 20)
            .run(|iris| match iris::ccl::Ccl::new(iris) {
                Ok(_) => Err(iris::Error::InvalidConfig(
                    "Ccl::new accepted a world whose heap cannot reach the other node".into(),
                )),
                Err(e) if e.to_string().contains("Shmem provider") => {
                    Ok(format!("rank {} refused: {e}", iris.rank()))
                }
                Err(e) => Err(e),
            })?;
    Ok(results.join(", "))
}

/// A rank of the fused GEMMs as processes (every rank's memory another process's, mapped
/// through the IPC provider, as a PyTorch job's ranks are): the all-gather GEMM in place
/// and copied ahead, each reduction in every form (`Pull` reading A and Bᵀ in the other
/// processes' memory), against exact host values (A's rows
/// hold small multiples of 0.5 and B is 0.25 everywhere, so every product and sum is
/// exact in `f32`, and a row landing in the wrong place shows).
fn fused_rank() -> iris::Result<String> {
    use iris::ccl::{self, AllGatherMatmulAlgo, Ccl, MatmulReduceAlgo};
    let results = World::from_env()?
        .heap_bytes(16 << 20)
        .provider(ProviderKind::Ipc)
        .run(|iris| {
            let (me, world) = (iris.rank(), iris.world_size());
            let ccl = Ccl::new(iris)?;
            let (m, n, k) = (128usize, 128usize, 64usize);
            let row_value = |seed: usize| ((seed % 7) + 1) as f32 * 0.5;
            // `rows` rows of `k`, row `i` holding `row_value(first + i)`.
            let rows_of = |rows: usize, first: usize| -> Vec<bf16> {
                (0..rows * k)
                    .map(|e| bf16::from_f32(row_value(first + e / k)))
                    .collect()
            };
            let b = iris.full(k * n, bf16::from_f32(0.25))?;
            let mut problems = Vec::new();
            // all_gather_matmul: rank r's row i is row r*m + i of C, every element
            // k * value * 0.25.
            let a = iris.symmetric_from_slice(&rows_of(m, me * m))?;
            let want: Vec<f32> = (0..world * m)
                .flat_map(|row| std::iter::repeat_n(16.0 * row_value(row), n))
                .collect();
            for algo in [AllGatherMatmulAlgo::InPlace, AllGatherMatmulAlgo::CopyAhead] {
                let c = iris.symmetric_full(world * m * n, f32::NAN)?;
                ccl::all_gather_matmul_with(&ccl, &a, &b, &c, k, algo)?;
                ccl.synchronize()?;
                if c.to_vec()? != want {
                    problems.push(format!("all_gather_matmul {algo:?}"));
                }
            }
            // The reductions: rank r's A row i holds value(r + i); the sum of row i is
            // sum_r 16 * value(r + i).
            let rows = world * m;
            let a = iris.from_slice(&rows_of(rows, me))?;
            let total: Vec<f32> = (0..rows)
                .flat_map(|i| {
                    let sum = (0..world).fold(0.0f32, |acc, r| acc + 16.0 * row_value(r + i));
                    std::iter::repeat_n(sum, n)
                })
                .collect();
            let staging = iris.symmetric_zeros::<f32>(rows * n)?;
            for algo in [MatmulReduceAlgo::IntoOwners, MatmulReduceAlgo::AfterGemm] {
                let part = iris.symmetric_full(m * n, f32::NAN)?;
                ccl::matmul_reduce_scatter_with(&ccl, &a, &b, &staging, &part, k, algo)?;
                ccl.synchronize()?;
                if part.to_vec()? != total[me * m * n..(me + 1) * m * n] {
                    problems.push(format!("matmul_reduce_scatter {algo:?}"));
                }
                let whole = iris.symmetric_full(rows * n, f32::NAN)?;
                ccl::matmul_all_reduce_with(&ccl, &a, &b, &staging, &whole, k, algo)?;
                ccl.synchronize()?;
                if whole.to_vec()? != total {
                    problems.push(format!("matmul_all_reduce {algo:?}"));
                }
            }
            // Pull: every rank's A and Bᵀ (256 x k, 0.25 everywhere) read in the other
            // processes' memory.
            let wide = 256;
            let a = iris.symmetric_from_slice(&rows_of(rows, me))?;
            let bt = iris.symmetric_full(wide * k, bf16::from_f32(0.25))?;
            let total: Vec<f32> = total.chunks(n).flat_map(|r| vec![r[0]; wide]).collect();
            let pull = MatmulReduceAlgo::Pull;
            let part = iris.symmetric_full(m * wide, f32::NAN)?;
            let whole = iris.symmetric_full(rows * wide, f32::NAN)?;
            let staging = iris.symmetric_zeros::<f32>(rows * wide)?;
            let b = || ccl::MatrixB::transposed(&bt);
            ccl::matmul_reduce_scatter_with(&ccl, &a, b(), &staging, &part, k, pull)?;
            ccl::matmul_all_reduce_with(&ccl, &a, b(), &staging, &whole, k, pull)?;
            ccl.synchronize()?;
            if part.to_vec()? != total[me * m * wide..(me + 1) * m * wide] {
                problems.push("matmul_reduce_scatter Pull".to_string());
            }
            if whole.to_vec()? != total {
                problems.push("matmul_all_reduce Pull".to_string());
            }
            if problems.is_empty() {
                Ok(format!("rank {me}: fused GEMMs exact"))
            } else {
                Err(iris::Error::InvalidConfig(format!(
                    "rank {me}: differ from the host: {}",
                    problems.join(", ")
                )))
            }
        })?;
    Ok(results.join(", "))
}

#[test]
fn child() {
    let Ok(role) = std::env::var(ROLE) else {
        return;
    };
    let result = match role.as_str() {
        "traced" => traced_rank(),
        "fused" => fused_rank(),
        "ccl_across_nodes" => ccl_across_nodes(),
        "heap" => rank_main(ProviderKind::Heap),
        "ipc" => rank_main(ProviderKind::Ipc),
        "shmem" => rank_main(ProviderKind::Shmem),
        _ => rank_main(ProviderKind::External),
    };
    match result {
        Ok(msg) => println!("E2E-OK {msg}"),
        Err(e) => {
            eprintln!("E2E-ERROR {e}");
            std::process::exit(3);
        }
    }
}

fn run_job(backend: iris::BackendKind, role: &str, world: usize) -> Vec<(bool, String)> {
    run_job_with(backend, role, world, |_| Vec::new())
}

/// `run_job` with more environment for each rank (`env(rank)`, which may override the
/// launcher's variables).
fn run_job_with(
    backend: iris::BackendKind,
    role: &str,
    world: usize,
    env: impl Fn(usize) -> Vec<(&'static str, String)>,
) -> Vec<(bool, String)> {
    let exe = std::env::current_exe().expect("current_exe");
    let job = format!("e2e-{}-{role}-{world}-{}", std::process::id(), backend);
    let children: Vec<_> = (0..world)
        .map(|rank| {
            Command::new(&exe)
                .args(["--exact", "child", "--nocapture", "--test-threads=1"])
                .env(ROLE, role)
                .env("IRIS_BACKEND", backend.name())
                .env("IRIS_TIMEOUT", "20")
                .env("IRIS_RANK", rank.to_string())
                .env("IRIS_WORLD_SIZE", world.to_string())
                .env("IRIS_LOCAL_RANK", rank.to_string())
                .env("IRIS_LOCAL_WORLD_SIZE", world.to_string())
                .env("IRIS_JOB_ID", &job)
                .envs(env(rank))
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("spawn rank")
        })
        .collect();
    let start = Instant::now();
    let outs: Vec<_> = children
        .into_iter()
        .map(|c| c.wait_with_output().expect("wait"))
        .collect();
    assert!(
        start.elapsed() < Duration::from_secs(60),
        "job took {:?}",
        start.elapsed()
    );
    outs.into_iter()
        .map(|o| {
            let text = format!(
                "{}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            );
            (o.status.success() && text.contains("E2E-OK"), text)
        })
        .collect()
}

#[test]
fn every_provider_at_2_4_8_processes() {
    for backend in backends() {
        for role in ["heap", "ipc", "external"] {
            for world in [2usize, 4, 8] {
                let ranks = run_job(backend, role, world);
                for (rank, (ok, text)) in ranks.iter().enumerate() {
                    assert!(
                        ok,
                        "{backend} {role} at {world} processes, rank {rank} failed:\n{text}"
                    );
                }
                eprintln!("{backend} {role} at {world} processes: all-gather and counter correct");
            }
        }
    }
}

/// The fused GEMMs with ranks as processes, at 2 and 4 (`fused_rank`).
#[test]
fn fused_gemms_at_2_and_4_processes() {
    for backend in backends() {
        for world in [2usize, 4] {
            let ranks = run_job(backend, "fused", world);
            for (rank, (ok, text)) in ranks.iter().enumerate() {
                assert!(
                    ok,
                    "{backend} fused GEMMs at {world} processes, rank {rank} failed:\n{text}"
                );
            }
            eprintln!("{backend}: fused GEMMs at {world} processes exact");
        }
    }
}

/// Why the SHMEM provider cannot run on `backend` here, when a run failed for a reason
/// this machine explains (no engine for the backend, or its library is not installed).
fn shmem_absent(backend: iris::BackendKind, text: &str) -> Option<String> {
    let reasons = [
        "no SHMEM engine runs on the cpu backend",
        "is unavailable: its host library was not found",
    ];
    reasons
        .iter()
        .find(|r| text.contains(*r))
        .map(|r| format!("{backend}: {r}"))
}

/// The SHMEM provider (NVSHMEM on CUDA, rocSHMEM on HIP) runs the same kernels as the
/// others at 2, 4 and 8 processes where its library is installed; elsewhere every rank
/// gets the same clear error, and ranks as threads are refused (one PE per process).
/// `IRIS_REQUIRE_SHMEM=1` makes an absent library a failure.
#[test]
fn shmem_provider_at_2_4_8_processes() {
    let required = std::env::var("IRIS_REQUIRE_SHMEM").is_ok_and(|v| v == "1");
    for backend in backends() {
        // Threads of one process cannot be several PEs.
        let threads = World::threads(2)
            .backend(backend)
            .heap_bytes(1 << 20)
            .run(|iris| iris.symmetric_with::<f32>(ProviderKind::Shmem, 4).map(drop));
        let err = threads
            .expect_err("two ranks as threads must be refused")
            .to_string();
        assert!(
            err.contains("no SHMEM engine runs on the cpu backend")
                || err
                    .contains("holds one PE per process, and this process runs 2 ranks as threads"),
            "{backend}: {err}"
        );
        for world in [2usize, 4, 8] {
            let ranks = run_job(backend, "shmem", world);
            if ranks.iter().all(|(ok, _)| *ok) {
                eprintln!("{backend} shmem at {world} processes: all-gather and counter correct");
                continue;
            }
            let why: Vec<_> = ranks
                .iter()
                .map(|(_, t)| shmem_absent(backend, t))
                .collect();
            match &why[0] {
                Some(reason) if why.iter().all(|w| w.as_ref() == Some(reason)) => {
                    assert!(
                        !required || backend == iris::BackendKind::Cpu,
                        "IRIS_REQUIRE_SHMEM=1 but {reason}"
                    );
                    eprintln!("{backend} shmem: skipped ({reason}); every rank said so");
                    break;
                }
                _ => {
                    for (rank, (ok, text)) in ranks.iter().enumerate() {
                        assert!(
                            ok,
                            "{backend} shmem at {world} processes, rank {rank} failed:\n{text}"
                        );
                    }
                }
            }
        }
    }
}

/// Collectives over a world that spans nodes (two processes on loopback, told they are on
/// two hosts, meeting over the network rendezvous) are refused at `Ccl::new` on every
/// rank with the heap provider, which cannot reach another node, naming the provider to use.
#[test]
fn ccl_refuses_a_world_across_nodes_without_shmem() {
    let network = network_rendezvous();
    let ranks = run_job_with(iris::BackendKind::Cpu, "ccl_across_nodes", 2, |rank| {
        let mut env = network.clone();
        // One rank per "node": each is alone on its host.
        env.extend([
            ("IRIS_LOCAL_RANK", "0".to_string()),
            ("IRIS_LOCAL_WORLD_SIZE", "1".to_string()),
            ("IRIS_HOSTNAME", format!("node-{rank}")),
        ]);
        env
    });
    for (rank, (ok, text)) in ranks.iter().enumerate() {
        assert!(*ok && text.contains("refused"), "rank {rank}:\n{text}");
    }
}

/// The environment that makes ranks meet over the network rendezvous (TCP on loopback at
/// a free port) instead of the node's Unix socket.
fn network_rendezvous() -> Vec<(&'static str, String)> {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port");
    vec![
        ("IRIS_RENDEZVOUS", "tcp".to_string()),
        ("MASTER_ADDR", "127.0.0.1".to_string()),
        ("MASTER_PORT", port.to_string()),
        ("IRIS_MASTER_PORT", port.to_string()),
    ]
}

/// Ranks meeting over the network rendezvous on one node: the heap provider (descriptors
/// over the node's Unix rendezvous) and the SHMEM provider (its unique id over TCP) run
/// the same all-gather and counter at 2 and 4 processes; SHMEM is skipped, saying why,
/// where its library is absent (`IRIS_REQUIRE_SHMEM=1` makes that a failure).
#[test]
fn heap_and_shmem_over_the_network_rendezvous() {
    let required = std::env::var("IRIS_REQUIRE_SHMEM").is_ok_and(|v| v == "1");
    for backend in backends() {
        for world in [2usize, 4] {
            for role in ["heap", "shmem"] {
                let network = network_rendezvous();
                let ranks = run_job_with(backend, role, world, |_| network.clone());
                if ranks.iter().all(|(ok, _)| *ok) {
                    eprintln!("{backend} {role} at {world} processes over TCP: correct");
                    continue;
                }
                let why: Vec<_> = ranks
                    .iter()
                    .map(|(_, t)| shmem_absent(backend, t))
                    .collect();
                match &why[0] {
                    Some(reason)
                        if role == "shmem" && why.iter().all(|w| w.as_ref() == Some(reason)) =>
                    {
                        assert!(
                            !required || backend == iris::BackendKind::Cpu,
                            "IRIS_REQUIRE_SHMEM=1 but {reason}"
                        );
                        eprintln!("{backend} shmem over TCP: skipped ({reason})");
                    }
                    _ => {
                        for (rank, (ok, text)) in ranks.iter().enumerate() {
                            assert!(
                                ok,
                                "{backend} {role} at {world} processes over TCP, rank {rank}:\n{text}"
                            );
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn a_traced_world_of_processes_merges_every_rank_s_events() {
    for backend in backends() {
        let dir = std::env::temp_dir().join(format!(
            "iris-e2e-trace-{}-{}",
            backend.name(),
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        let world = 3usize;
        let dir_text = dir.to_string_lossy().into_owned();
        let outs = run_job_with(backend, "traced", world, |_| {
            vec![("IRIS_TRACE", dir_text.clone())]
        });
        for (rank, (ok, text)) in outs.iter().enumerate() {
            assert!(ok, "{backend}: rank {rank}:\n{text}");
            assert!(
                text.contains("traced: [2]"),
                "{backend}: rank {rank}:\n{text}"
            );
        }
        let path = dir.join("trace.json");
        let trace: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{backend}: {}: {e}", path.display())),
        )
        .unwrap();
        let events = trace["traceEvents"].as_array().unwrap();
        for rank in 0..world as u64 {
            let kernels = events
                .iter()
                .filter(|e| e["pid"] == rank && e["cat"] == "kernel" && e["name"] == "marked")
                .count();
            assert_eq!(kernels, 1, "{backend}: rank {rank}");
            let marks: Vec<&serde_json::Value> = events
                .iter()
                .filter(|e| e["pid"] == rank && e["cat"] == "event")
                .collect();
            let want = if cfg!(feature = "trace-events") { 2 } else { 0 };
            assert_eq!(marks.len(), want, "{backend}: rank {rank}: {marks:?}");
            for m in marks {
                assert_eq!(m["args"]["value"], rank, "{backend}: {m}");
                assert_eq!(m["args"]["id"], 3, "{backend}: {m}");
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
