//! Kernels' own events (`trace_event(id, value)`, with the `trace-events` feature) in a
//! traced world: every event is in `trace.json` once, on its block's row, inside the
//! launch that made it, with its id and value, and `iris-trace summary` counts them; a
//! kernel that traces runs the same in an untraced world. On the CPU backend and on every
//! GPU backend present.

mod common;

use common::{backends, trace_folder};
use iris::World;

#[iris::kernels]
mod traced {
    use iris::prelude::*;

    /// `x[i] += 1`; thread 0 of each block records event 1 before and event 2 (through a
    /// device function) after, both valued `round << 16 | block`.
    #[kernel]
    pub fn marks(x: *mut u32, n: u64, round: u32) {
        let i = block_idx_x() * block_dim_x() + thread_idx_x();
        if thread_idx_x() == 0 {
            trace_event(1, ((round as u64) << 16) | block_idx_x() as u64);
        }
        if (i as u64) < n {
            unsafe { *x.add(i as usize) += 1 };
        }
        if thread_idx_x() == 0 {
            note(round, block_idx_x());
        }
    }

    fn note(round: u32, block: u32) {
        trace_event(2, ((round as u64) << 16) | block as u64);
    }
}

#[iris::kernels]
mod waiting {
    use iris::prelude::*;

    /// Thread 0 of each block records event 5, waits for a signal nobody raises (it
    /// gives up when the world aborts), then records event 6.
    #[kernel]
    pub fn mark_then_wait(flag: Symmetric<u64>) {
        if thread_idx_x() == 0 {
            trace_event(5, block_idx_x() as u64);
            let seen = signal_wait_until(flag, Cmp::Eq, 1);
            trace_event(6, seen);
        }
    }
}

#[iris::kernels]
mod plain {
    use iris::prelude::*;

    /// `x[i] *= 2` (a launch between the traced ones, which takes no hidden arguments).
    #[kernel]
    pub fn double(x: *mut u32, n: u64) {
        let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as u64;
        if i < n {
            unsafe { *x.add(i as usize) *= 2 };
        }
    }
}

const BLOCKS: u32 = 4;
const THREADS: u32 = 64;
const ROUNDS: u32 = 3;

/// Runs the rounds on one rank: `marks` then `double` each round; returns the result.
fn rounds(iris: &iris::Iris) -> iris::Result<Vec<u32>> {
    let n = u64::from(BLOCKS * THREADS) - 7;
    let x = iris.zeros::<u32>(n as usize)?;
    for round in 0..ROUNDS {
        traced::marks::launch(iris, (BLOCKS, THREADS), &x, n, round)?;
        plain::double::launch(iris, (BLOCKS, THREADS), &x, n)?;
    }
    iris.synchronize()?;
    x.to_vec()
}

/// `((((0 + 1) * 2 + 1) * 2) + 1) * 2` for three rounds.
fn expected() -> u32 {
    (0..ROUNDS).fold(0, |v, _| (v + 1) * 2)
}

#[test]
fn a_tracing_kernel_runs_the_same_untraced() {
    let spec = traced::marks::UNIT.kernels[0];
    assert_eq!(spec.trace_events, cfg!(feature = "trace-events"));
    assert!(!plain::double::UNIT.kernels[0].trace_events);
    for backend in backends() {
        let results = World::threads(2)
            .backend(backend)
            .heap_bytes(1 << 20)
            .run(rounds)
            .unwrap();
        for x in results {
            assert!(x.iter().all(|&v| v == expected()), "{backend}: {x:?}");
        }
    }
}

#[cfg(not(feature = "trace-events"))]
#[test]
fn without_the_feature_kernels_record_no_events() {
    eprintln!("built without `trace-events`: trace_event compiles to nothing; checking that");
    let dir = trace_folder(iris::BackendKind::Cpu, "events");
    World::threads(1)
        .backend(iris::BackendKind::Cpu)
        .heap_bytes(1 << 20)
        .trace(&dir)
        .run(rounds)
        .unwrap();
    let text = std::fs::read_to_string(dir.join("trace.json")).unwrap();
    assert!(!text.contains("\"cat\":\"event\""));
    let _ = std::fs::remove_dir_all(&dir);
}

#[cfg(feature = "trace-events")]
#[test]
fn a_traced_world_shows_each_event_inside_its_launch() {
    use serde_json::Value;
    for backend in backends() {
        let dir = trace_folder(backend, "events");
        let world = 2u64;
        let results = World::threads(world as usize)
            .backend(backend)
            .heap_bytes(1 << 20)
            .trace(&dir)
            .run(rounds)
            .unwrap();
        for x in results {
            assert!(x.iter().all(|&v| v == expected()), "{backend}: {x:?}");
        }
        let path = dir.join("trace.json");
        let trace: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap())
            .unwrap_or_else(|e| panic!("{backend}: {}: {e}", path.display()));
        let all = trace["traceEvents"].as_array().unwrap();
        for pid in 0..world {
            let rank_file = dir.join(format!("rank-{pid}.json"));
            let rank: Value =
                serde_json::from_str(&std::fs::read_to_string(&rank_file).unwrap()).unwrap();
            assert!(
                rank["device_clock"]["offset_ns"].is_i64(),
                "{backend}: {rank_file:?}"
            );
            assert_eq!(rank["events_overwritten"], 0, "{backend}");
            // The `marks` kernels on the rank's stream, in time order.
            let mut kernels: Vec<(f64, f64)> = all
                .iter()
                .filter(|e| {
                    e["pid"] == pid && e["tid"] == 1 && e["cat"] == "kernel" && e["name"] == "marks"
                })
                .map(|e| {
                    let ts = e["ts"].as_f64().unwrap();
                    (ts, ts + e["dur"].as_f64().unwrap())
                })
                .collect();
            kernels.sort_by(|a, b| a.0.total_cmp(&b.0));
            assert_eq!(kernels.len(), ROUNDS as usize, "{backend}");
            let events: Vec<&Value> = all
                .iter()
                .filter(|e| e["pid"] == pid && e["cat"] == "event")
                .collect();
            assert_eq!(
                events.len(),
                (ROUNDS * BLOCKS * 2) as usize,
                "{backend}: rank {pid}"
            );
            let mut launches: Vec<u64> = events
                .iter()
                .map(|e| e["args"]["launch"].as_u64().unwrap())
                .collect();
            launches.sort_unstable();
            launches.dedup();
            assert_eq!(launches.len(), ROUNDS as usize, "{backend}: {launches:?}");
            for e in &events {
                let args = &e["args"];
                let (id, value) = (
                    args["id"].as_u64().unwrap(),
                    args["value"].as_u64().unwrap(),
                );
                let block = args["block"].as_u64().unwrap();
                let round = value >> 16;
                assert!(id == 1 || id == 2, "{e}");
                assert_eq!(e["name"], format!("event {id}"));
                assert_eq!(value & 0xffff, block, "{backend}: {e}");
                assert_eq!(args["thread"], 0, "{e}");
                assert_eq!(args["kernel"], "marks", "{e}");
                assert_eq!(e["tid"].as_u64(), Some(2 + block), "{e}");
                // Launch serials go up with the rounds: the round-th `marks` made it.
                let nth = launches
                    .iter()
                    .position(|&l| l == args["launch"].as_u64().unwrap())
                    .unwrap();
                assert_eq!(nth as u64, round, "{backend}: {e}");
                let (start, end) = kernels[nth];
                let ts = e["ts"].as_f64().unwrap();
                assert!(
                    start - 0.002 <= ts && ts <= end + 0.002,
                    "{backend}: rank {pid}: {e} outside its launch [{start}, {end}]"
                );
            }
            // Each block's event 1 before its event 2.
            for e1 in events.iter().filter(|e| e["args"]["id"] == 1) {
                let e2 = events
                    .iter()
                    .find(|e| e["args"]["id"] == 2 && e["args"]["value"] == e1["args"]["value"])
                    .unwrap_or_else(|| panic!("{backend}: no event 2 for {e1}"));
                assert!(e1["ts"].as_f64() <= e2["ts"].as_f64(), "{e1} after {e2}");
            }
        }
        let table = iris::trace::summary(&path).unwrap();
        let count = |name: &str| {
            iris::trace::op_totals(&path)
                .unwrap()
                .into_iter()
                .find(|t| t.category == "event" && t.name == name)
                .map_or(0, |t| t.count)
        };
        let want = (world as u32 * ROUNDS * BLOCKS) as usize;
        assert_eq!(count("event 1"), want, "{table}");
        assert_eq!(count("event 2"), want, "{table}");
        eprintln!("{backend}:\n{table}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[cfg(feature = "trace-events")]
#[test]
fn a_failed_traced_world_ends_and_keeps_the_waiting_kernels_events() {
    use std::time::{Duration, Instant};
    for backend in backends() {
        let dir = trace_folder(backend, "events-failed");
        let start = Instant::now();
        let result = World::threads(2)
            .backend(backend)
            .heap_bytes(1 << 20)
            .timeout(Duration::from_secs(60))
            .trace(&dir)
            .run(|iris| {
                let flag = iris.symmetric_zeros::<u64>(1)?;
                if iris.rank() == 1 {
                    waiting::mark_then_wait::launch(iris, (2, 32), &flag)?;
                }
                iris.host_barrier()?;
                if iris.rank() == 0 {
                    std::thread::sleep(Duration::from_millis(100));
                    panic!("a planted panic");
                }
                iris.synchronize()
            });
        let took = start.elapsed();
        let err = result.expect_err("rank 0 panicked");
        assert!(
            matches!(err, iris::Error::RankPanicked { rank: 0, .. }),
            "{backend}: {err}"
        );
        assert!(took < Duration::from_secs(20), "{backend}: took {took:?}");
        // The waiting rank's file holds both events of each block: the one before the
        // wait and the one after it gave up.
        let text = std::fs::read_to_string(dir.join("rank-1.json"))
            .unwrap_or_else(|e| panic!("{backend}: rank 1 wrote no trace: {e}"));
        let rank: serde_json::Value = serde_json::from_str(&text).unwrap();
        let events: Vec<&serde_json::Value> = rank["events"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["cat"] == "event")
            .collect();
        for id in [5, 6] {
            let n = events.iter().filter(|e| e["args"]["id"] == id).count();
            assert_eq!(n, 2, "{backend}: event {id} once a block: {events:?}");
        }
        eprintln!("{backend}: a failed traced world ended in {took:.2?} with rank 1's events");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
