//! The table printed last and the JSON written beside it.

use std::fmt::Write as _;

use crate::harness::*;

pub(crate) fn json_str(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

pub(crate) fn json_num(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.6}")
    } else {
        "null".into()
    }
}

pub(crate) fn row_json(r: &Row) -> String {
    let mut s = format!(
        "{{\"case\": {}, \"kernel\": {}, \"ranks\": {}, \"size_bytes\": {}, \"bytes_moved\": {}, \"ms\": {}, \"launches\": {}, \"correct\": {}",
        json_str(&r.case),
        json_str(&r.kernel),
        r.ranks,
        r.size_bytes,
        json_num(r.bytes_moved),
        json_num(r.ms),
        r.launches,
        r.correct
    );
    if r.bytes_moved > 0.0 {
        let _ = write!(
            s,
            ", \"gbps\": {}, \"ceiling\": {}, \"ceiling_gbps\": {}, \"bound_ms\": {}, \"ratio\": {}",
            json_num(r.gbps()),
            json_str(&r.ceiling),
            json_num(r.ceiling_gbps),
            json_num(r.bound_ms()),
            json_num(r.ratio())
        );
    }
    for (k, v) in &r.extra {
        let _ = write!(s, ", {}: {}", json_str(k), json_num(*v));
    }
    s.push('}');
    s
}

pub(crate) fn human_bytes(b: usize) -> String {
    if b >= GIB && b % GIB == 0 {
        format!("{} GiB", b / GIB)
    } else if b >= MIB && b % MIB == 0 {
        format!("{} MiB", b / MIB)
    } else if b >= KIB && b % KIB == 0 {
        format!("{} KiB", b / KIB)
    } else {
        format!("{b} B")
    }
}

pub(crate) fn print_table(rows: &[Row]) {
    println!(
        "{:<11} {:<44} {:>5} {:>8} {:>11} {:>10} {:>12} {:>10} {:>7}  ok",
        "case", "kernel", "ranks", "size", "ms", "GB/s", "ceiling", "ceil GB/s", "ratio"
    );
    for r in rows {
        let (gbps, ceil, ratio) = if r.bytes_moved > 0.0 {
            (
                format!("{:.1}", r.gbps()),
                format!("{:.1}", r.ceiling_gbps),
                format!("{:.3}", r.ratio()),
            )
        } else {
            ("-".into(), "-".into(), "-".into())
        };
        let ms = if r.case == "ping_pong" {
            format!("{:.3} us", r.ms * 1e3)
        } else {
            format!("{:.4}", r.ms)
        };
        let mut kernel = r.kernel.clone();
        kernel.truncate(44);
        println!(
            "{:<11} {:<44} {:>5} {:>8} {:>11} {:>10} {:>12} {:>10} {:>7}  {}",
            r.case,
            kernel,
            r.ranks,
            if r.size_bytes > 0 {
                human_bytes(r.size_bytes)
            } else {
                "-".into()
            },
            ms,
            gbps,
            if r.ceiling.is_empty() {
                "-"
            } else {
                &r.ceiling
            },
            ceil,
            ratio,
            if r.correct { "yes" } else { "NO" }
        );
    }
}

/// Writes the rows measured so far (and the cases that failed) as JSON.
pub(crate) fn write_json(
    path: &str,
    info: &iris::DeviceInfo,
    plan: &Plan,
    rows: &[Row],
    errors: &[String],
) -> Result<(), String> {
    let mut json = String::from("{\n");
    let _ = writeln!(
        json,
        "  \"device\": {{\"name\": {}, \"backend\": {}, \"target\": {}, \"multiprocessors\": {}, \"total_memory\": {}}},",
        json_str(&info.name),
        json_str(info.backend.name()),
        json_str(&info.target),
        info.multiprocessors,
        info.total_memory
    );
    let _ = writeln!(
        json,
        "  \"config\": {{\"block\": {BLOCK}, \"blocks_per_sm\": {BLOCKS_PER_SM}, \"warmup\": {}, \"repeats\": {}}},",
        plan.warmup, plan.repeats
    );
    let errs: Vec<String> = errors.iter().map(|e| json_str(e)).collect();
    let _ = writeln!(json, "  \"errors\": [{}],", errs.join(", "));
    json.push_str("  \"rows\": [\n");
    for (i, r) in rows.iter().enumerate() {
        let sep = if i + 1 < rows.len() { "," } else { "" };
        let _ = writeln!(json, "    {}{sep}", row_json(r));
    }
    json.push_str("  ]\n}\n");
    std::fs::write(path, json).map_err(|e| format!("writing {path}: {e}"))
}
