//! The trace files: each rank's events in Chrome's trace event format
//! (`rank-<r>.json`), and their merge into one world's `trace.json`.
//!
//! A rank is a process (`pid` = rank) with two threads: `tid` 0, the host (each launch
//! from queueing to return; each traced call), and `tid` 1, the rank's stream (each kernel
//! as it ran on the device, inside its call's span); kernels' own events
//! (`trace_event`) are instant events on one more thread per block, `tid` 2 + block.
//! Times in microseconds.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use iris_driver::{Error, Result};
use serde_json::Value;

/// A launch's times, in host-clock nanoseconds.
pub(super) struct LaunchTimes<'a> {
    pub name: &'a str,
    pub unit: &'a str,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub host: (u64, u64),
    pub device: (u64, u64),
}

/// A traced call's times; `device` is its first kernel's start to its last's end.
pub(super) struct SpanTimes<'a> {
    pub name: &'a str,
    pub bytes: u64,
    pub host: (u64, u64),
    pub device: Option<(u64, u64)>,
}

/// One `trace_event` of a kernel, on the host's timeline.
pub(super) struct UserEvent<'a> {
    /// The kernel that made it.
    pub kernel: &'a str,
    pub id: u32,
    pub value: u64,
    pub block: u32,
    pub thread: u32,
    pub launch: u32,
    pub host_ns: u64,
}

/// A rank's kernel events, the device clock's offset and error (ns), and how many events
/// their rings wrote over.
#[derive(Default)]
pub(super) struct UserEvents<'a> {
    pub events: Vec<UserEvent<'a>>,
    pub clock: Option<(i64, u64)>,
    pub overwritten: u64,
}

/// The thread of block `block`'s events.
const FIRST_BLOCK_TID: u64 = 2;

/// What one rank writes.
pub(super) struct RankTrace<'a> {
    pub run: u64,
    pub rank: usize,
    pub world: usize,
    pub device: &'a str,
    pub launches: &'a [LaunchTimes<'a>],
    pub spans: &'a [SpanTimes<'a>],
    pub user: &'a UserEvents<'a>,
    /// The rank's host clock minus rank 0's and its error (ns), already taken out.
    pub host_offset: (i64, u64),
}

const HOST: u32 = 0;
const STREAM: u32 = 1;

/// `ns` as microseconds with three decimals.
fn us(ns: u64) -> String {
    format!("{}.{:03}", ns / 1000, ns % 1000)
}

/// One complete event (`"ph": "X"`).
fn complete(
    out: &mut String,
    pid: usize,
    tid: u32,
    cat: &str,
    name: &str,
    (start, end): (u64, u64),
    args: &str,
) {
    let _ = write!(
        out,
        r#"{{"name":{},"cat":"{cat}","ph":"X","pid":{pid},"tid":{tid},"ts":{},"dur":{},"args":{{{args}}}}}"#,
        Value::from(name),
        us(start),
        us(end.saturating_sub(start)),
    );
}

/// `rank`'s events as a JSON array's elements (metadata, spans, launches), sorted so that
/// an enclosing span comes before what it encloses.
fn events(rank: &RankTrace<'_>) -> Vec<String> {
    let pid = rank.rank;
    let mut out = Vec::new();
    let meta = |name: &str, tid: u32, value: &str| {
        format!(
            r#"{{"name":"{name}","ph":"M","pid":{pid},"tid":{tid},"args":{{"name":{}}}}}"#,
            Value::from(value)
        )
    };
    out.push(meta(
        "process_name",
        HOST,
        &format!("rank {} ({})", rank.rank, rank.device),
    ));
    out.push(format!(
        r#"{{"name":"process_sort_index","ph":"M","pid":{pid},"tid":0,"args":{{"sort_index":{pid}}}}}"#
    ));
    out.push(meta("thread_name", HOST, "host"));
    out.push(meta("thread_name", STREAM, "stream (device)"));
    let mut timed: Vec<(u64, u64, u32, String)> = Vec::new();
    for s in rank.spans {
        let args = format!(r#""bytes":{},"world":{}"#, s.bytes, rank.world);
        let mut e = String::new();
        complete(&mut e, pid, HOST, "call", s.name, s.host, &args);
        timed.push((s.host.0, s.host.1, HOST, e));
        if let Some(device) = s.device {
            let mut e = String::new();
            complete(&mut e, pid, STREAM, "call", s.name, device, &args);
            timed.push((device.0, device.1, STREAM, e));
        }
    }
    for l in rank.launches {
        let args = format!(
            r#""unit":{},"grid":{:?},"block":{:?}"#,
            Value::from(l.unit),
            l.grid,
            l.block
        );
        let mut e = String::new();
        complete(&mut e, pid, HOST, "launch", l.name, l.host, &args);
        timed.push((l.host.0, l.host.1, HOST, e));
        let mut e = String::new();
        complete(&mut e, pid, STREAM, "kernel", l.name, l.device, &args);
        timed.push((l.device.0, l.device.1, STREAM, e));
    }
    // Start first; of two starting together, the longer (the enclosing) first.
    timed.sort_by(|a, b| (a.2, a.0, b.1).cmp(&(b.2, b.0, a.1)));
    out.extend(timed.into_iter().map(|t| t.3));
    out.extend(user_events(pid, rank.user));
    out
}

/// The kernels' events of rank `pid`: a named thread per block that has any, then the
/// events in time order.
fn user_events(pid: usize, user: &UserEvents<'_>) -> Vec<String> {
    let mut blocks: Vec<u32> = user.events.iter().map(|e| e.block).collect();
    blocks.sort_unstable();
    blocks.dedup();
    let mut out: Vec<String> = blocks
        .iter()
        .map(|b| {
            let tid = FIRST_BLOCK_TID + u64::from(*b);
            format!(
                r#"{{"name":"thread_name","ph":"M","pid":{pid},"tid":{tid},"args":{{"name":"block {b} (events)"}}}}"#
            )
        })
        .collect();
    let mut events: Vec<&UserEvent<'_>> = user.events.iter().collect();
    events.sort_by_key(|e| (e.host_ns, e.block, e.thread));
    out.extend(events.into_iter().map(|e| {
        format!(
            r#"{{"name":"event {}","cat":"event","ph":"i","s":"t","pid":{pid},"tid":{},"ts":{},"args":{{"id":{},"value":{},"kernel":{},"launch":{},"block":{},"thread":{}}}}}"#,
            e.id,
            FIRST_BLOCK_TID + u64::from(e.block),
            us(e.host_ns),
            e.id,
            e.value,
            Value::from(e.kernel),
            e.launch,
            e.block,
            e.thread
        )
    }));
    out
}

fn io(what: String) -> impl FnOnce(std::io::Error) -> Error {
    move |source| Error::Io { what, source }
}

/// The file of rank `rank` in `dir`.
fn rank_file(dir: &Path, rank: usize) -> PathBuf {
    dir.join(format!("rank-{rank}.json"))
}

/// Writes `rank`'s file into `dir`.
pub(super) fn write_rank(dir: &Path, rank: &RankTrace<'_>) -> Result<()> {
    let clock = match rank.user.clock {
        Some((offset, error)) => format!(r#"{{"offset_ns":{offset},"error_ns":{error}}}"#),
        None => "null".to_string(),
    };
    let body = format!(
        "{{\"iris_trace\":1,\"run\":{},\"rank\":{},\"world\":{},\"host_clock\":{{\"offset_ns\":{},\"error_ns\":{}}},\"device_clock\":{clock},\"events_overwritten\":{},\"events\":[\n{}\n]}}\n",
        rank.run,
        rank.rank,
        rank.world,
        rank.host_offset.0,
        rank.host_offset.1,
        rank.user.overwritten,
        events(rank).join(",\n")
    );
    write_atomically(&rank_file(dir, rank.rank), &body)
}

/// Writes `body` to `path` through a temporary file and a rename, so a reader never sees
/// half a file.
fn write_atomically(path: &Path, body: &str) -> Result<()> {
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, body).map_err(io(format!("writing {}", tmp.display())))?;
    std::fs::rename(&tmp, path).map_err(io(format!("writing {}", path.display())))
}

/// The events of rank `rank`'s file in `dir` if it belongs to run `run`.
fn rank_events(
    dir: &Path,
    rank: usize,
    run: Option<u64>,
) -> Result<Option<(u64, usize, Vec<Value>)>> {
    let path = rank_file(dir, rank);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io(format!("reading {}", path.display()))(e)),
    };
    let parsed: Value = serde_json::from_str(&text).map_err(|e| {
        Error::InvalidConfig(format!("{} is not a rank's trace: {e}", path.display()))
    })?;
    let field = |name: &str| parsed.get(name).and_then(Value::as_u64);
    let (Some(this_run), Some(world)) = (field("run"), field("world")) else {
        return Err(Error::InvalidConfig(format!(
            "{} is not a rank's trace (no run or world)",
            path.display()
        )));
    };
    if run.is_some_and(|r| r != this_run) {
        return Ok(None);
    }
    let events = parsed
        .get("events")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    Ok(Some((this_run, world as usize, events)))
}

/// Merges the world's rank files into `trace.json` when all `world` of run `run` are in
/// `dir`; otherwise leaves it to the last rank.
pub(super) fn merge_if_complete(dir: &Path, run: u64, world: usize) -> Result<()> {
    let mut all = Vec::new();
    for rank in 0..world {
        match rank_events(dir, rank, Some(run))? {
            Some((_, _, events)) => all.extend(events),
            None => return Ok(()),
        }
    }
    write_world(dir, run, all).map(drop)
}

/// Merges the rank files in `dir` (those of rank 0's run) into `dir/trace.json` and
/// returns its path; an error names a rank whose file is missing or of another run. For
/// worlds whose ranks did not all end (the last rank to end merges by itself).
pub fn merge(dir: &Path) -> Result<PathBuf> {
    let (run, world, mut all) = rank_events(dir, 0, None)?
        .ok_or_else(|| Error::InvalidConfig(format!("{} holds no rank-0.json", dir.display())))?;
    for rank in 1..world {
        let (_, _, events) = rank_events(dir, rank, Some(run))?.ok_or_else(|| {
            Error::InvalidConfig(format!(
                "{} has no rank-{rank}.json of rank 0's run ({world} ranks)",
                dir.display()
            ))
        })?;
        all.extend(events);
    }
    write_world(dir, run, all)
}

fn write_world(dir: &Path, run: u64, events: Vec<Value>) -> Result<PathBuf> {
    let world = serde_json::json!({
        "traceEvents": events,
        "displayTimeUnit": "ms",
        "otherData": { "iris_run": run },
    });
    let path = dir.join("trace.json");
    write_atomically(&path, &world.to_string())?;
    Ok(path)
}
