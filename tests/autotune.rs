//! The autotuned collectives (`AllReduceAlgo::Auto`, `AllGatherAlgo::Auto`) on the CPU
//! backend and every GPU backend present: results as exact as the fixed algorithms',
//! every rank agreeing on one decision, the decision written to the cache file with every
//! candidate's time, read back (and not measured again) by a later communicator, and
//! the fixed rule when tuning is off.

mod common;

use std::path::{Path, PathBuf};

use common::backends;
use iris::ccl::{self, AllGatherAlgo, AllReduceAlgo, Ccl, ReduceOp, Tuning};
use iris::{BackendKind, Iris, World};

/// A fresh cache directory for one test.
fn cache_dir(name: &str, backend: BackendKind) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "iris-autotune-{name}-{backend}-{}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// Runs an all-reduce (of `n` ranks' values) and an all-gather with `Auto`, checks both
/// exactly, and returns this rank's decisions.
fn tuned_calls(iris: &Iris, ccl: &Ccl<'_>, n: usize) -> iris::Result<Vec<Tuning>> {
    let (me, world) = (iris.rank(), iris.world_size());
    let mine: Vec<u32> = (0..n).map(|i| (i * 7 + me * 1000) as u32).collect();
    let input = iris.symmetric_from_slice(&mine)?;
    let output = iris.symmetric_full(n, u32::MAX)?;
    ccl::all_reduce(ccl, &input, &output, ReduceOp::Sum, AllReduceAlgo::Auto)?;
    let gathered = iris.symmetric_full(world * n, u32::MAX)?;
    ccl::all_gather(ccl, &input, &gathered, AllGatherAlgo::Auto)?;
    // A second call of the same size reuses the decision.
    ccl::all_reduce(ccl, &input, &output, ReduceOp::Sum, AllReduceAlgo::Auto)?;
    ccl.synchronize()?;
    let sum: Vec<u32> = (0..n)
        .map(|i| (0..world).map(|r| (i * 7 + r * 1000) as u32).sum())
        .collect();
    assert_eq!(output.to_vec()?, sum, "rank {me}: the tuned all-reduce");
    let everyone: Vec<u32> = (0..world)
        .flat_map(|r| (0..n).map(move |i| (i * 7 + r * 1000) as u32))
        .collect();
    assert_eq!(
        gathered.to_vec()?,
        everyone,
        "rank {me}: the tuned all-gather"
    );
    Ok(ccl.autotuned())
}

fn entries(file: &Path) -> serde_json::Map<String, serde_json::Value> {
    let text = std::fs::read_to_string(file).expect("the cache file was written");
    let all: serde_json::Value = serde_json::from_str(&text).expect("the cache file parses");
    all["entries"].as_object().expect("entries").clone()
}

#[test]
fn tuned_collectives_agree_measure_once_and_cache_the_decision() {
    for backend in backends() {
        let dir = cache_dir("measure", backend);
        let file = dir.join("autotune.json");
        let n = 3000usize;
        let decisions = World::threads(2)
            .backend(backend)
            .heap_bytes(4 << 20)
            .run(|iris| {
                let ccl = Ccl::new(iris)?.with_autotune_cache(Some(dir.clone()));
                tuned_calls(iris, &ccl, n)
            })
            .unwrap_or_else(|e| panic!("{backend}: {e}"));
        // Every rank took the same decisions: one all-reduce, one all-gather.
        assert_eq!(decisions[0], decisions[1], "{backend}: ranks disagree");
        assert_eq!(decisions[0].len(), 2, "{backend}: {:?}", decisions[0]);
        // Sorted by key: the all-gather's first.
        let reduce = &decisions[0][1];
        assert!(
            reduce.key.starts_with("all_reduce|u32|2^14|world 2|"),
            "{}",
            reduce.key
        );
        assert!(
            ["one_shot", "two_shot"].contains(&reduce.kernel),
            "{reduce:?}"
        );
        let gather = &decisions[0][0];
        assert!(
            gather.key.starts_with("all_gather|u32|2^14|world 2|"),
            "{}",
            gather.key
        );
        assert!(["push", "pull"].contains(&gather.kernel), "{gather:?}");
        // The file has both, with every candidate measured (a time each), and the chosen
        // one is the fastest of them, or the fixed choice (the first) when the fastest
        // does not beat it by 5% (the tuner's margin for noise).
        let cached = entries(&file);
        assert_eq!(cached.len(), 2, "{cached:?}");
        for d in &decisions[0] {
            let e = &cached[&d.key];
            assert_eq!(e["kernel"], d.kernel);
            assert_eq!(e["blocks"], d.blocks);
            let candidates = e["candidates"].as_array().unwrap();
            assert!(candidates.len() >= 2, "{e}");
            let best = candidates
                .iter()
                .map(|c| c["us"].as_f64().unwrap())
                .fold(f64::MAX, f64::min);
            let chosen = candidates
                .iter()
                .find(|c| c["kernel"] == d.kernel && c["blocks"] == d.blocks)
                .unwrap();
            let fixed = candidates[0]["us"].as_f64().unwrap();
            let us = chosen["us"].as_f64().unwrap();
            if us != best {
                assert_eq!(
                    chosen, &candidates[0],
                    "{e}: neither the fastest nor the fixed"
                );
                assert!(best > fixed * 0.95, "{e}: the fastest beat the fixed by 5%");
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn a_later_communicator_uses_the_cached_decision() {
    for backend in backends() {
        let dir = cache_dir("cached", backend);
        let file = dir.join("autotune.json");
        let n = 3000usize;
        // A first world measures and writes the file.
        World::threads(2)
            .backend(backend)
            .heap_bytes(4 << 20)
            .run(|iris| {
                let ccl = Ccl::new(iris)?.with_autotune_cache(Some(dir.clone()));
                tuned_calls(iris, &ccl, n)
            })
            .unwrap_or_else(|e| panic!("{backend}: {e}"));
        // Rewrite the decisions to ones no measurement would be needed for (the slower
        // kernel of each, at one block): a later world must take them from the file.
        let mut cached = entries(&file);
        for (key, e) in cached.iter_mut() {
            let other = match e["kernel"].as_str().unwrap() {
                "one_shot" => "two_shot",
                "two_shot" => "one_shot",
                "push" => "pull",
                _ => "push",
            };
            e["kernel"] = other.into();
            e["blocks"] = 1.into();
            assert!(key.contains("world 2"));
        }
        let planted = serde_json::json!({"version": 1, "entries": cached});
        std::fs::write(&file, serde_json::to_string_pretty(&planted).unwrap()).unwrap();
        let before = std::fs::read_to_string(&file).unwrap();
        let decisions = World::threads(2)
            .backend(backend)
            .heap_bytes(4 << 20)
            .run(|iris| {
                let ccl = Ccl::new(iris)?.with_autotune_cache(Some(dir.clone()));
                tuned_calls(iris, &ccl, n)
            })
            .unwrap_or_else(|e| panic!("{backend}: {e}"));
        for d in &decisions[0] {
            assert_eq!(d.kernel, cached[&d.key]["kernel"], "{backend}: {d:?}");
            assert_eq!(d.blocks, 1, "{backend}: {d:?}");
        }
        assert_eq!(decisions[0], decisions[1]);
        assert_eq!(
            std::fs::read_to_string(&file).unwrap(),
            before,
            "measured again"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}

#[test]
fn tuning_off_is_the_fixed_rule() {
    for backend in backends() {
        let decisions = World::threads(2)
            .backend(backend)
            .heap_bytes(4 << 20)
            .run(|iris| {
                let ccl = Ccl::new(iris)?
                    .with_autotune(false)
                    .with_autotune_cache(None);
                tuned_calls(iris, &ccl, 3000)
            })
            .unwrap_or_else(|e| panic!("{backend}: {e}"));
        // Nothing measured, nothing recorded: `Auto` launched the fixed choice.
        assert!(decisions.iter().all(Vec::is_empty), "{decisions:?}");
    }
}
