//! Tracing a world (`World::trace`, `IRIS_TRACE`): one Chrome trace per world whose
//! events parse, nest (each collective's kernels inside its span on the rank's stream),
//! run forward in time per rank, and add up in `iris-trace summary`; on the CPU backend
//! and on every GPU backend present.

mod common;

use std::path::{Path, PathBuf};

use common::{backends, trace_folder};
use iris::ccl::{self, AllReduceAlgo, Ccl, ReduceOp};
use iris::trace::{merge, op_totals, summary};
use iris::{BackendKind, World};
use serde_json::Value;

#[iris::kernels]
mod user {
    use iris::prelude::*;

    /// `x[i] *= 2`.
    #[kernel]
    pub fn double(x: *mut f32, n: u64) {
        let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as u64;
        if i < n {
            unsafe { *x.add(i as usize) *= 2.0 };
        }
    }
}

/// A world of `ranks` threads on `backend` (1 MiB heaps) traced into `dir`.
fn traced_world(backend: BackendKind, ranks: usize, dir: &Path) -> World {
    World::threads(ranks)
        .backend(backend)
        .heap_bytes(1 << 20)
        .trace(dir)
}

/// The complete (`"X"`) events of rank `pid` on thread `tid`, by start time.
fn track(events: &[Value], pid: u64, tid: u64) -> Vec<(String, String, f64, f64)> {
    let mut out: Vec<(String, String, f64, f64)> = events
        .iter()
        .filter(|e| {
            e["ph"] == "X" && e["pid"].as_u64() == Some(pid) && e["tid"].as_u64() == Some(tid)
        })
        .map(|e| {
            let ts = e["ts"].as_f64().unwrap();
            (
                e["cat"].as_str().unwrap().to_string(),
                e["name"].as_str().unwrap().to_string(),
                ts,
                ts + e["dur"].as_f64().unwrap(),
            )
        })
        .collect();
    out.sort_by(|a, b| a.2.total_cmp(&b.2).then(b.3.total_cmp(&a.3)));
    out
}

/// Whether the events, by start time, nest: each one inside the one still open before it,
/// or after it ended (a little slack for the microsecond rounding).
fn nests(events: &[(String, String, f64, f64)]) -> Result<(), String> {
    let mut open: Vec<&(String, String, f64, f64)> = Vec::new();
    for e in events {
        while open.last().is_some_and(|o| e.2 >= o.3 - 0.002) {
            open.pop();
        }
        if let Some(o) = open.last() {
            if e.3 > o.3 + 0.002 {
                return Err(format!("{e:?} starts inside {o:?} but ends after it"));
            }
        }
        open.push(e);
    }
    Ok(())
}

fn check_trace(path: &Path, world: u64, rounds: usize) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let trace: Value = serde_json::from_str(&text).map_err(|e| format!("not JSON: {e}"))?;
    let events = trace["traceEvents"].as_array().ok_or("no traceEvents")?;
    for pid in 0..world {
        let named = events
            .iter()
            .any(|e| e["ph"] == "M" && e["name"] == "process_name" && e["pid"] == pid);
        if !named {
            return Err(format!("rank {pid} has no process_name"));
        }
        let stream = track(events, pid, 1);
        nests(&stream)?;
        // Each all-reduce's kernel inside its call, and the kernels one after another.
        let calls: Vec<_> = stream
            .iter()
            .filter(|e| e.0 == "call" && e.1 == "ccl::all_reduce")
            .collect();
        if calls.len() != rounds {
            return Err(format!(
                "rank {pid}: {} all_reduce calls, want {rounds}",
                calls.len()
            ));
        }
        for k in stream
            .iter()
            .filter(|e| e.0 == "kernel" && e.1.starts_with("one_shot"))
        {
            if !calls
                .iter()
                .any(|c| c.2 <= k.2 + 0.002 && k.3 <= c.3 + 0.002)
            {
                return Err(format!("rank {pid}: kernel {k:?} outside every all_reduce"));
            }
        }
        let kernels: Vec<_> = stream.iter().filter(|e| e.0 == "kernel").collect();
        for w in kernels.windows(2) {
            if w[1].2 + 0.002 < w[0].3 {
                return Err(format!(
                    "rank {pid}: {:?} starts before {:?} ended",
                    w[1], w[0]
                ));
            }
        }
        let doubles = kernels.iter().filter(|k| k.1 == "double").count();
        if doubles != 2 {
            return Err(format!("rank {pid}: {doubles} `double` kernels, want 2"));
        }
        // The host queued launches in order.
        let host: Vec<_> = track(events, pid, 0)
            .into_iter()
            .filter(|e| e.0 == "launch")
            .collect();
        if host.windows(2).any(|w| w[1].2 < w[0].2) || host.len() != kernels.len() {
            return Err(format!(
                "rank {pid}: host launches out of order or not one per kernel"
            ));
        }
    }
    Ok(())
}

#[test]
fn a_traced_world_writes_one_trace_that_nests_and_adds_up() {
    for backend in backends() {
        let dir = trace_folder(backend, "world");
        let (world, rounds, n) = (2usize, 3usize, 1024usize);
        let tracing = traced_world(backend, world, &dir)
            .run(|iris| {
                let ccl = Ccl::new(iris)?;
                let x = iris.symmetric_full(n, 1.0f32)?;
                let y = iris.symmetric_zeros::<f32>(n)?;
                for _ in 0..rounds {
                    ccl::all_reduce(&ccl, &x, &y, ReduceOp::Sum, AllReduceAlgo::OneShot)?;
                }
                let local = iris.full(n, 1.0f32)?;
                for _ in 0..2 {
                    user::double::launch(iris, ((n / 256) as u32, 256), &local, n as u64)?;
                }
                ccl.synchronize()?;
                Ok(iris.is_tracing())
            })
            .unwrap();
        assert!(
            tracing.iter().all(|&t| t),
            "{backend}: a rank did not trace"
        );
        let path = dir.join("trace.json");
        if let Err(problem) = check_trace(&path, world as u64, rounds) {
            panic!("{backend}: {}: {problem}", path.display());
        }
        let totals = op_totals(&path).unwrap();
        let all_reduce = totals
            .iter()
            .find(|t| t.category == "call" && t.name == "ccl::all_reduce")
            .unwrap_or_else(|| panic!("{backend}: no all_reduce in {totals:?}"));
        assert_eq!(all_reduce.count, world * rounds, "{backend}");
        assert_eq!(
            all_reduce.bytes,
            (world * rounds * n * 4) as u64,
            "{backend}"
        );
        assert!(all_reduce.total_us > 0.0, "{backend}: {all_reduce:?}");
        let table = summary(&path).unwrap();
        assert!(
            table.contains("ccl::all_reduce") && table.contains("double"),
            "{table}"
        );
        eprintln!("{backend}:\n{table}");
        // Merging again by hand gives the same events.
        let again = merge(&dir).unwrap();
        assert_eq!(op_totals(&again).unwrap(), totals);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn an_untraced_world_writes_nothing_and_a_partial_folder_is_named() {
    let backend = BackendKind::Cpu;
    let dir = trace_folder(backend, "partial");
    let traced = World::threads(1)
        .backend(backend)
        .heap_bytes(1 << 20)
        .run(|iris| Ok(iris.is_tracing()))
        .unwrap();
    assert_eq!(traced, [false]);
    assert!(!dir.exists());
    std::fs::create_dir_all(&dir).unwrap();
    let e = merge(&dir).unwrap_err().to_string();
    assert!(e.contains("no rank-0.json"), "{e}");
    // Rank 0 of a two-rank run without rank 1's file: the merge names the missing rank.
    World::threads(1)
        .backend(backend)
        .heap_bytes(1 << 20)
        .trace(&dir)
        .run(|_| Ok(()))
        .unwrap();
    let rank0 = std::fs::read_to_string(dir.join("rank-0.json")).unwrap();
    std::fs::write(
        dir.join("rank-0.json"),
        rank0.replace("\"world\":1", "\"world\":2"),
    )
    .unwrap();
    let e = merge(&dir).unwrap_err().to_string();
    assert!(e.contains("no rank-1.json"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_second_world_traced_into_the_same_folder_gets_its_own() {
    let backend = BackendKind::Cpu;
    let dir = trace_folder(backend, "two-worlds");
    for ranks in [1usize, 2] {
        World::threads(ranks)
            .backend(backend)
            .heap_bytes(1 << 20)
            .trace(&dir)
            .run(|iris| {
                let x = iris.full(256usize, 1.0f32)?;
                user::double::launch(iris, (1, 256), &x, 256)?;
                iris.synchronize()
            })
            .unwrap();
    }
    let steps = |path: PathBuf| {
        op_totals(&path)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
            .into_iter()
            .find(|t| t.name == "double")
            .map_or(0, |t| t.count)
    };
    assert_eq!(
        steps(dir.join("trace.json")),
        1,
        "the first world, one rank"
    );
    assert_eq!(
        steps(dir.join("world-2/trace.json")),
        2,
        "the second, two ranks"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// `World::default_backend` names the backend a world would run on without making one:
/// a traced world after it still gets the folder itself (a probe world would have taken
/// it, leaving the real trace in `world-2`: how the examples' size probe lost their
/// traces).
#[test]
fn asking_for_the_backend_makes_no_world_and_takes_no_trace_folder() {
    let dir = trace_folder(BackendKind::Cpu, "probe");
    let probed = World::default_backend().unwrap();
    let ran = World::threads(1)
        .heap_bytes(1 << 20)
        .trace(&dir)
        .run(|iris| {
            let x = iris.full(256usize, 1.0f32)?;
            user::double::launch(iris, (1, 256), &x, 256)?;
            iris.synchronize()?;
            Ok(iris.backend_kind())
        })
        .unwrap();
    assert_eq!(probed, ran[0], "the probe and the world disagree");
    let doubles = op_totals(&dir.join("trace.json"))
        .unwrap()
        .into_iter()
        .find(|t| t.name == "double")
        .map_or(0, |t| t.count);
    assert_eq!(doubles, 1, "the world's trace is not in the folder itself");
    assert!(!dir.join("world-2").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// Ranks that share a device (every CPU rank shares the CPU; ranks as threads share a
/// GPU) start each collective behind a one-block barrier: a collective's blocks spin at
/// their entry, and without the barrier the first ranks' blocks can hold every
/// multiprocessor while a late rank's earlier kernel (a GEMM) waits for one. Each
/// rank's trace has the `barrier` kernel right before the collective's, inside its call.
#[test]
fn a_collective_on_ranks_that_share_a_device_starts_behind_a_one_block_barrier() {
    for backend in backends() {
        let dir = trace_folder(backend, "shared-device");
        let (world, n) = (2usize, 1024usize);
        traced_world(backend, world, &dir)
            .run(|iris| {
                let ccl = Ccl::new(iris)?;
                let x = iris.symmetric_full(n, 1.0f32)?;
                let y = iris.symmetric_zeros::<f32>(n / world)?;
                let local = iris.full(n, 1.0f32)?;
                user::double::launch(iris, ((n / 256) as u32, 256), &local, n as u64)?;
                ccl::reduce_scatter(&ccl, &x, &y, ReduceOp::Sum)?;
                ccl.synchronize()
            })
            .unwrap();
        let text = std::fs::read_to_string(dir.join("trace.json")).unwrap();
        let trace: Value = serde_json::from_str(&text).unwrap();
        let events = trace["traceEvents"].as_array().unwrap();
        for rank in 0..world as u64 {
            // The rank's stream track, kernels only, by start time.
            let kernels: Vec<_> = track(events, rank, 1)
                .into_iter()
                .filter(|e| e.0 == "kernel")
                .collect();
            let names: Vec<&str> = kernels.iter().map(|k| k.1.as_str()).collect();
            let at = names
                .iter()
                .position(|k| k.starts_with("reduce_scatter"))
                .unwrap_or_else(|| {
                    panic!("{backend}: rank {rank} ran no reduce_scatter: {names:?}")
                });
            assert!(
                at > 0 && names[at - 1] == "barrier" && names[..at - 1].contains(&"double"),
                "{backend}: rank {rank}: the kernels before reduce_scatter: {names:?}"
            );
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
