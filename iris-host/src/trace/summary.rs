//! What `iris-trace summary` prints: per call and per kernel, how many ran and their
//! device time, and how many of each kernel event (`trace_event`) were recorded, from a
//! merged `trace.json`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use iris_driver::{Error, Result};
use serde_json::Value;

/// The device time of one call or kernel name over every rank.
#[derive(Clone, Debug, PartialEq)]
pub struct OpTotal {
    /// `call` (a traced call, such as a collective), `kernel`, or `event` (a kernel's
    /// `trace_event`, by id: counted, no time).
    pub category: String,
    /// The call's or the kernel's name.
    pub name: String,
    /// How many ran, every rank together.
    pub count: usize,
    /// Their device time added, in microseconds.
    pub total_us: f64,
    /// The longest one, in microseconds.
    pub max_us: f64,
    /// The bytes the calls said they moved.
    pub bytes: u64,
}

/// The device-side totals of the trace at `path`, the longest total first.
pub fn op_totals(path: &Path) -> Result<Vec<OpTotal>> {
    let text = std::fs::read_to_string(path).map_err(|source| Error::Io {
        what: format!("reading {}", path.display()),
        source,
    })?;
    let trace: Value = serde_json::from_str(&text)
        .map_err(|e| Error::InvalidConfig(format!("{} is not JSON: {e}", path.display())))?;
    let events = trace
        .get("traceEvents")
        .and_then(Value::as_array)
        .ok_or_else(|| Error::InvalidConfig(format!("{} has no traceEvents", path.display())))?;
    let mut by_name: BTreeMap<(String, String), OpTotal> = BTreeMap::new();
    for e in events {
        let on_stream = e.get("tid").and_then(Value::as_u64) == Some(1);
        let phase = e.get("ph").and_then(Value::as_str);
        let user_event =
            phase == Some("i") && e.get("cat").and_then(Value::as_str) == Some("event");
        let kernel_or_call = phase == Some("X") && on_stream;
        if !(kernel_or_call || user_event) {
            continue;
        }
        let text = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        let (category, name) = (text("cat"), text("name"));
        let dur = e.get("dur").and_then(Value::as_f64).unwrap_or(0.0);
        let bytes = e
            .get("args")
            .and_then(|a| a.get("bytes"))
            .and_then(Value::as_u64)
            .unwrap_or(0);
        let t = by_name
            .entry((category.clone(), name.clone()))
            .or_insert(OpTotal {
                category,
                name,
                count: 0,
                total_us: 0.0,
                max_us: 0.0,
                bytes: 0,
            });
        t.count += 1;
        t.total_us += dur;
        t.max_us = t.max_us.max(dur);
        t.bytes += bytes;
    }
    let mut totals: Vec<OpTotal> = by_name.into_values().collect();
    totals.sort_by(|a, b| b.total_us.total_cmp(&a.total_us));
    Ok(totals)
}

/// [`op_totals`] as a table: calls first, then kernels; count, total and mean device time,
/// the longest, and GB/s for calls that said their bytes.
pub fn summary(path: &Path) -> Result<String> {
    let totals = op_totals(path)?;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<8} {:<44} {:>7} {:>12} {:>10} {:>10} {:>9}",
        "what", "name", "count", "total ms", "mean us", "max us", "GB/s"
    );
    for category in ["call", "kernel"] {
        for t in totals.iter().filter(|t| t.category == category) {
            let gbps = if t.bytes > 0 && t.total_us > 0.0 {
                format!("{:.1}", t.bytes as f64 / (t.total_us * 1e-6) / 1e9)
            } else {
                "-".into()
            };
            let _ = writeln!(
                out,
                "{:<8} {:<44} {:>7} {:>12.3} {:>10.1} {:>10.1} {:>9}",
                t.category,
                t.name,
                t.count,
                t.total_us / 1e3,
                t.total_us / t.count.max(1) as f64,
                t.max_us,
                gbps
            );
        }
    }
    let mut events: Vec<&OpTotal> = totals.iter().filter(|t| t.category == "event").collect();
    events.sort_by(|a, b| a.name.cmp(&b.name));
    for t in events {
        let _ = writeln!(
            out,
            "{:<8} {:<44} {:>7} {:>12} {:>10} {:>10} {:>9}",
            t.category, t.name, t.count, "-", "-", "-", "-"
        );
    }
    Ok(out)
}
