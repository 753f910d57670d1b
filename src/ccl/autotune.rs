//! Autotuning: [`AllReduceAlgo::Auto`](super::AllReduceAlgo::Auto) and
//! [`AllGatherAlgo::Auto`](super::AllGatherAlgo::Auto) pick the kernel (one-shot or
//! two-shot; push or pull) and the blocks per launch by measuring each candidate once per
//! (collective, element type, size bucket, world size, ranks on the device, device).
//!
//! - **Agreement.** Every rank measures every candidate in the same order on the call's
//!   own buffers (the collectives rewrite only their output); the ranks' times are
//!   gathered and rank 0 decides: the candidate whose slowest rank is fastest, if it
//!   beats the fixed choice by at least [`MARGIN`] (else the fixed choice: a pick the
//!   measurement's noise made would be slower as often as faster). Rank 0's decision is
//!   what every rank uses.
//! - **Cache.** Rank 0 writes each decision, with every candidate's time, to
//!   `autotune.json` in `IRIS_CACHE_DIR` (default `$XDG_CACHE_HOME/iris`, else
//!   `~/.cache/iris`) by writing a new file and renaming it over the old one; a later run
//!   (or another `Ccl`) finds it there: rank 0 reads the file and sends its entry to
//!   every rank, so ranks that start together never disagree. Two jobs writing at once
//!   may lose one's new entries (each file is whole); they are measured again.
//! - **Bounds.** Candidates use at most the communicator's slots per launch, the shape
//!   that keeps every rank's blocks resident: a tuned launch waits no more than a fixed
//!   one can.
//! - `IRIS_AUTOTUNE=0` turns it off: `Auto` is then the fixed rule (one-shot up to 256
//!   KiB, two-shot above; push), every launch as many blocks as the size needs up to the
//!   slots.

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::element::{CclElement, KernelId};
use super::Ccl;
use crate::{Error, Result, SymmetricBuffer};

/// Bytes up to which the fixed rule takes the one-shot all-reduce.
pub(crate) const ONE_SHOT_BYTES: u64 = 256 << 10;

/// Timed runs of each candidate (after one untimed run).
const RUNS: usize = 5;

/// How much faster than the fixed choice (a fraction of its time) a candidate must
/// measure to replace it.
const MARGIN: f64 = 0.05;

/// The candidate to take from each candidate's time (the fixed choice first): the
/// fastest, where it beats the fixed choice by [`MARGIN`], else the fixed choice.
fn pick(times: &[f64]) -> usize {
    let best = (0..times.len()).fold(0, |b, i| if times[i] < times[b] { i } else { b });
    match times.first() {
        Some(&fixed) if times[best] <= fixed * (1.0 - MARGIN) => best,
        _ => 0,
    }
}

/// What a tuned call launches: a kernel and its blocks per launch (0: as many as the
/// size needs, up to the slots; the fixed rule).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Choice {
    pub(crate) kernel: KernelId,
    pub(crate) blocks: u32,
}

/// A collective `Auto` tunes.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Tuned {
    /// `all_reduce` with this operation code.
    AllReduce(u32),
    /// `all_gather`.
    AllGather,
}

impl Tuned {
    fn name(self) -> &'static str {
        match self {
            Tuned::AllReduce(_) => "all_reduce",
            Tuned::AllGather => "all_gather",
        }
    }

    /// The kernels to choose from, the fixed rule's first.
    fn kernels(self, bytes: u64) -> [KernelId; 2] {
        match self {
            Tuned::AllReduce(_) if bytes <= ONE_SHOT_BYTES => {
                [KernelId::AllReduceOneShot, KernelId::AllReduceTwoShot]
            }
            Tuned::AllReduce(_) => [KernelId::AllReduceTwoShot, KernelId::AllReduceOneShot],
            Tuned::AllGather => [KernelId::AllGatherPush, KernelId::AllGatherPull],
        }
    }

    /// The fixed rule's choice for `bytes` a rank.
    pub(crate) fn fixed(self, bytes: u64) -> Choice {
        Choice {
            kernel: self.kernels(bytes)[0],
            blocks: 0,
        }
    }
}

/// A kernel's name in the cache file.
fn kernel_name(k: KernelId) -> &'static str {
    match k {
        KernelId::AllReduceOneShot => "one_shot",
        KernelId::AllReduceTwoShot => "two_shot",
        KernelId::AllGatherPush => "push",
        KernelId::AllGatherPull => "pull",
        _ => "other",
    }
}

fn kernel_of(name: &str) -> Option<KernelId> {
    Some(match name {
        "one_shot" => KernelId::AllReduceOneShot,
        "two_shot" => KernelId::AllReduceTwoShot,
        "push" => KernelId::AllGatherPush,
        "pull" => KernelId::AllGatherPull,
        _ => return None,
    })
}

/// A communicator's tuner: whether it is on, where its file is, what it has decided.
pub(crate) struct Tuner {
    enabled: bool,
    file: Option<PathBuf>,
    decided: RefCell<HashMap<String, Choice>>,
}

impl Tuner {
    /// From `IRIS_AUTOTUNE` and `IRIS_CACHE_DIR` (or the user's cache directory).
    pub(crate) fn from_env() -> Tuner {
        let enabled = std::env::var("IRIS_AUTOTUNE").map_or(true, |v| v != "0");
        let dir = std::env::var_os("IRIS_CACHE_DIR")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("XDG_CACHE_HOME").map(|d| PathBuf::from(d).join("iris")))
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/iris")));
        Tuner {
            enabled,
            file: dir.map(|d| d.join("autotune.json")),
            decided: RefCell::new(HashMap::new()),
        }
    }

    /// Whether `Auto` measures (`IRIS_AUTOTUNE` is not `0`).
    pub(crate) fn enabled(&self) -> bool {
        self.enabled
    }

    /// The cache file, if there is a directory for it.
    pub(crate) fn file(&self) -> Option<&Path> {
        self.file.as_deref()
    }

    /// Turns measuring on or off.
    pub(crate) fn set_enabled(&mut self, on: bool) {
        self.enabled = on;
    }

    /// Keeps the cache in `dir` (`None`: no file, decisions live as long as the `Ccl`).
    pub(crate) fn set_dir(&mut self, dir: Option<PathBuf>) {
        self.file = dir.map(|d| d.join("autotune.json"));
    }

    /// Every decision so far, by key.
    pub(crate) fn decisions(&self) -> Vec<Tuning> {
        let mut all: Vec<Tuning> = self
            .decided
            .borrow()
            .iter()
            .map(|(key, c)| Tuning {
                key: key.clone(),
                kernel: kernel_name(c.kernel),
                blocks: c.blocks,
            })
            .collect();
        all.sort_by(|a, b| a.key.cmp(&b.key));
        all
    }
}

/// One decision of the autotuner ([`Ccl::autotuned`](super::Ccl::autotuned)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tuning {
    /// What it is for: collective, element type, size bucket (`2^k` bytes a rank), world
    /// size, ranks on the device, device.
    pub key: String,
    /// The kernel: `one_shot`, `two_shot` (all-reduce), `push`, `pull` (all-gather).
    pub kernel: &'static str,
    /// Most blocks per launch (0: as many as the size needs, up to the slots).
    pub blocks: u32,
}

/// The cache key of `what` on `n` elements of `T` a rank: size bucketed by powers of two.
fn key<T: CclElement>(ccl: &Ccl<'_>, what: Tuned, bytes: u64) -> String {
    let info = ccl.iris().device_info();
    format!(
        "{}|{}|2^{}|world {}|{} on the device|{} {}",
        what.name(),
        T::KERNEL_NAME,
        bytes.max(1).next_power_of_two().trailing_zeros(),
        ccl.world_size(),
        ccl.ranks_on_device(),
        info.name,
        info.target,
    )
}

/// What `Auto` launches for `what` on `input`/`output` (`n` elements a rank, `bytes`):
/// the fixed rule when tuning is off, else the decision for this key, measured now
/// (collectively) if neither this communicator nor the cache file has it.
pub(crate) fn choose<T: CclElement>(
    ccl: &Ccl<'_>,
    what: Tuned,
    input: &SymmetricBuffer<'_, T>,
    output: &SymmetricBuffer<'_, T>,
    n: u64,
) -> Result<Choice> {
    let bytes = n * std::mem::size_of::<T>() as u64;
    let tuner = ccl.tuner();
    if !tuner.enabled() {
        return Ok(what.fixed(bytes));
    }
    let key = key::<T>(ccl, what, bytes);
    if let Some(c) = tuner.decided.borrow().get(&key) {
        return Ok(*c);
    }
    // Rank 0's cached entry, sent to every rank: [found, kernel, blocks].
    let cached = if ccl.rank() == 0 {
        tuner.file().and_then(|f| read_entry(f, &key))
    } else {
        None
    };
    let word = cached.map_or([0u32; 3], |c| [1, c.kernel as u32, c.blocks]);
    let agreed = ccl.iris().all_gather(word)?[0];
    let choice = if agreed[0] == 1 {
        let kernel = what
            .kernels(bytes)
            .into_iter()
            .find(|k| *k as u32 == agreed[1])
            .ok_or_else(|| {
                Error::InvalidConfig(format!(
                    "autotune: rank 0's cache entry for {key} names no kernel of {}",
                    what.name()
                ))
            })?;
        Choice {
            kernel,
            blocks: agreed[2].min(ccl.slots()),
        }
    } else {
        measure(ccl, what, input, output, n, &key)?
    };
    tuner.decided.borrow_mut().insert(key, choice);
    Ok(choice)
}

/// The candidates: each kernel at the fixed rule's blocks, then at half and a quarter of
/// the slots (0 where the slots are that few: the fixed rule's again), deduplicated.
fn candidates(ccl: &Ccl<'_>, what: Tuned, bytes: u64) -> Vec<Choice> {
    let slots = ccl.slots();
    let mut out = Vec::new();
    for kernel in what.kernels(bytes) {
        for blocks in [0, slots / 2, slots / 4] {
            let c = Choice { kernel, blocks };
            if !out.contains(&c) {
                out.push(c);
            }
        }
    }
    out
}

/// Measures every candidate on every rank, gathers the times, and takes rank 0's pick
/// (which rank 0 also writes to the cache file).
fn measure<T: CclElement>(
    ccl: &Ccl<'_>,
    what: Tuned,
    input: &SymmetricBuffer<'_, T>,
    output: &SymmetricBuffer<'_, T>,
    n: u64,
    key: &str,
) -> Result<Choice> {
    let iris = ccl.iris();
    let bytes = n * std::mem::size_of::<T>() as u64;
    let all = candidates(ccl, what, bytes);
    let mut mine = Vec::with_capacity(all.len());
    for c in &all {
        run(ccl, what, *c, input, output, n)?;
        let start = iris.record_event()?;
        for _ in 0..RUNS {
            run(ccl, what, *c, input, output, n)?;
        }
        let end = iris.record_event()?;
        end.synchronize()?;
        ccl.check()?;
        mine.push(f64::from(start.elapsed_ms(&end)?) * 1e3 / RUNS as f64);
    }
    let everyone = iris.all_gather(mine)?;
    let slowest: Vec<f64> = (0..all.len())
        .map(|i| everyone.iter().map(|t| t[i]).fold(0.0, f64::max))
        .collect();
    let best = pick(&slowest);
    // Rank 0 decides: its index, sent to every rank (the same on every rank, as every rank
    // computed it from the same gathered times; sent all the same, as the contract is).
    let decided = iris.all_gather(best as u32)?[0] as usize;
    let choice = *all.get(decided).ok_or_else(|| {
        Error::InvalidConfig(format!(
            "autotune: rank 0 chose candidate {decided} of {}",
            all.len()
        ))
    })?;
    if ccl.rank() == 0 {
        if let Some(file) = ccl.tuner().file() {
            let table: Vec<serde_json::Value> = all
                .iter()
                .zip(&slowest)
                .map(|(c, us)| {
                    serde_json::json!({"kernel": kernel_name(c.kernel), "blocks": c.blocks, "us": us})
                })
                .collect();
            let entry = serde_json::json!({
                "kernel": kernel_name(choice.kernel),
                "blocks": choice.blocks,
                "bytes": bytes,
                "slots": ccl.slots(),
                "candidates": table,
            });
            // A cache that cannot be written only costs a measurement next time.
            if let Err(e) = write_entry(file, key, entry) {
                eprintln!("iris: autotune: cannot write {}: {e}", file.display());
            }
        }
    }
    Ok(choice)
}

/// One call of `what` with `choice`.
fn run<T: CclElement>(
    ccl: &Ccl<'_>,
    what: Tuned,
    choice: Choice,
    input: &SymmetricBuffer<'_, T>,
    output: &SymmetricBuffer<'_, T>,
    n: u64,
) -> Result<()> {
    let (arg, elems) = match (what, choice.kernel) {
        (Tuned::AllReduce(op), KernelId::AllReduceTwoShot) => {
            (op, n.div_ceil(ccl.world_size() as u64))
        }
        (Tuned::AllReduce(op), _) => (op, n),
        (Tuned::AllGather, _) => (0, n),
    };
    ccl.launch_blocks(choice.kernel, input, output, n, arg, elems, choice.blocks)
}

/// The decision stored under `key` in the cache file, if the file has one.
fn read_entry(file: &Path, key: &str) -> Option<Choice> {
    let text = std::fs::read_to_string(file).ok()?;
    let all: serde_json::Value = serde_json::from_str(&text).ok()?;
    let e = all.get("entries")?.get(key)?;
    Some(Choice {
        kernel: kernel_of(e.get("kernel")?.as_str()?)?,
        blocks: u32::try_from(e.get("blocks")?.as_u64()?).ok()?,
    })
}

/// Adds `entry` under `key` to the cache file (a new file renamed over the old one).
fn write_entry(file: &Path, key: &str, entry: serde_json::Value) -> std::io::Result<()> {
    let mut all = std::fs::read_to_string(file)
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .filter(|v| v.get("entries").is_some_and(serde_json::Value::is_object))
        .unwrap_or_else(|| serde_json::json!({"version": 1, "entries": {}}));
    if let Some(entries) = all.get_mut("entries").and_then(|e| e.as_object_mut()) {
        entries.insert(key.to_string(), entry);
    }
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir)?;
    }
    // Unique to this writer: worlds of one process may share the directory.
    static WRITES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let nth = WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = file.with_extension(format!("json.{}.{nth}.tmp", std::process::id()));
    std::fs::write(&tmp, serde_json::to_string_pretty(&all)?)?;
    std::fs::rename(&tmp, file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_candidate_replaces_the_fixed_choice_only_when_clearly_faster() {
        assert_eq!(pick(&[100.0, 97.0, 120.0]), 0, "3% is noise");
        assert_eq!(pick(&[100.0, 94.0, 96.0]), 1);
        assert_eq!(pick(&[100.0, 96.0, 80.0]), 2);
        assert_eq!(pick(&[100.0]), 0);
        assert_eq!(pick(&[]), 0);
    }
}
