//! What the end-to-end tests share: the backends to run on, and random data.
#![allow(dead_code)]

use iris::BackendKind;
use rand::Rng;

/// The CPU backend always, and each GPU backend whose runtime and device are present.
/// A GPU backend that is missing is reported as skipped with its reason; with
/// `IRIS_REQUIRE_GPU=1` a missing GPU fails the test instead. `IRIS_TEST_BACKENDS`
/// (comma-separated names) keeps only those of them, for stress runs of one backend.
pub fn backends() -> Vec<BackendKind> {
    let found = found_backends();
    match std::env::var("IRIS_TEST_BACKENDS") {
        Ok(names) if !names.trim().is_empty() => {
            let keep: Vec<BackendKind> = names
                .split(',')
                .map(|n| {
                    BackendKind::from_name(n)
                        .unwrap_or_else(|e| panic!("IRIS_TEST_BACKENDS={names:?}: {e}"))
                })
                .collect();
            eprintln!("IRIS_TEST_BACKENDS={names}: testing {keep:?} of {found:?}");
            found.into_iter().filter(|k| keep.contains(k)).collect()
        }
        _ => found,
    }
}

fn found_backends() -> Vec<BackendKind> {
    let mut kinds = vec![BackendKind::Cpu];
    let mut reasons = Vec::new();
    for kind in [BackendKind::Cuda, BackendKind::Hip] {
        match iris::driver::open(kind) {
            Ok(_) => kinds.push(kind),
            Err(e) => reasons.push(format!("{kind}: {e}")),
        }
    }
    if kinds.len() == 1 {
        let why = reasons.join("; ");
        if std::env::var("IRIS_REQUIRE_GPU").is_ok_and(|v| v == "1") {
            panic!("IRIS_REQUIRE_GPU=1 but no GPU backend is usable: {why}");
        }
        eprintln!("GPU part skipped (ran on the CPU backend only): {why}");
    }
    kinds
}

/// `n` random values in `[-1, 1)`.
pub fn random_f32(n: usize) -> Vec<f32> {
    let mut rng = rand::rng();
    (0..n).map(|_| rng.random_range(-1.0f32..1.0)).collect()
}

/// `n` random `u32`s.
pub fn random_u32(n: usize) -> Vec<u32> {
    let mut rng = rand::rng();
    (0..n).map(|_| rng.random()).collect()
}

/// The world sizes every collective is tested at: 1, 2, 4 and 8 ranks, or the
/// comma-separated list in `IRIS_TEST_WORLDS` (`scripts/ccl-stress.sh` runs one size many
/// times, 16 ranks on one GPU included).
pub fn world_sizes() -> Vec<usize> {
    const DEFAULT: [usize; 4] = [1, 2, 4, 8];
    match std::env::var("IRIS_TEST_WORLDS") {
        Ok(list) if !list.trim().is_empty() => list
            .split(',')
            .map(|w| {
                w.trim()
                    .parse::<usize>()
                    .ok()
                    .filter(|&w| w > 0)
                    .unwrap_or_else(|| panic!("IRIS_TEST_WORLDS={list:?}: not a list of ranks"))
            })
            .collect(),
        _ => DEFAULT.to_vec(),
    }
}

/// Runs `check` on every rank of every world size ([`world_sizes`]) and backend
/// ([`backends`]), each rank with a heap of `heap` bytes and a communicator, and fails with
/// every problem any rank reported (each names its backend, world size and rank).
pub fn for_every_world(
    name: &str,
    heap: usize,
    check: impl Fn(&iris::Iris, &iris::ccl::Ccl<'_>) -> iris::Result<Vec<String>> + Sync,
) {
    let mut problems = Vec::new();
    for backend in backends() {
        for world in world_sizes() {
            let start = std::time::Instant::now();
            let reports = iris::World::threads(world)
                .backend(backend)
                .heap_bytes(heap)
                .run(|iris| {
                    let ccl = iris::ccl::Ccl::new(iris)?;
                    let report = check(iris, &ccl)?;
                    ccl.synchronize()?;
                    Ok(report)
                })
                .unwrap_or_else(|e| panic!("{name} on {backend} at {world} ranks: {e}"));
            for (rank, report) in reports.into_iter().enumerate() {
                for p in report {
                    problems.push(format!(
                        "{name} on {backend} at {world} ranks, rank {rank}: {p}"
                    ));
                }
            }
            eprintln!(
                "{name}: {backend} at {world} ranks in {:.2?}",
                start.elapsed()
            );
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// A fresh (emptied) folder for a traced world of `backend`'s, named by `what`.
pub fn trace_folder(backend: BackendKind, what: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "iris-trace-{what}-{}-{}",
        backend.name(),
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}
