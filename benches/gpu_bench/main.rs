//! The performance benchmark: every figure against a ceiling measured in the same run.
//!
//! ```text
//! cargo bench --bench gpu_bench                        # the backend found (CPU: tiny sizes)
//! cargo bench --bench gpu_bench -- --out bench.json    # where the JSON goes
//! ```
//!
//! Cases (ranks are threads of this process; on a one-GPU machine they share the GPU):
//! - ceilings: the runtime's own device memset and device-to-device copy, on plain and
//!   on symmetric-heap memory, and the same two as trivial iris kernels;
//! - `store`: rank 0 translates into rank 1's copy and stores 16-byte vectors (write only;
//!   against memset);
//! - `load`: rank 0 loads rank 1's copy, stores into its own buffer (against copy);
//! - `copy`: `iris::copy` from rank 1's copy of one allocation into rank 0's copy of
//!   another (against copy);
//! - `all_gather`: 2, 4 and 8 ranks, 4 KiB to 1 GiB per rank, the example's scalar kernel
//!   and a 16-byte grid-stride one (against all ranks' bytes over the copy bandwidth);
//! - `shared_staging`: 8 KiB chunks copied through shared memory, filled by `copy_async`
//!   or by one `copy_bulk` each (against copy);
//! - `ping_pong`: a flag bounced between two ranks, one thread each (round trip);
//! - `module_load`: first launch of a kernel minus a steady launch (the code object's load).
//!
//! Device times come from events on the rank's stream, medians over repeats after
//! warm-up; data is random (a multiplicative hash of the index and a random seed) and
//! every destination is poisoned first and checked on the device afterwards.
//! Prints a table; writes JSON to `--out`, else `$OUT/bench-iris.json`, else `./bench.json`.
//! `--dump-ptx DIR` writes each kernel unit's `sm_90` PTX into `DIR` and exits.
//!
//! Files: `kernels.rs` (what is measured), `harness.rs` (plans, timing, checks),
//! `bandwidth.rs` (ceilings and two-rank load/store/copy), `all_gather_case.rs`,
//! `shared_staging_case.rs`, `ping_pong_case.rs`,
//! `launch.rs` (module loads), `report.rs` (table and JSON).

mod all_gather_case;
mod bandwidth;
mod harness;
mod kernels;
mod launch;
mod ping_pong_case;
mod report;
mod shared_staging_case;

use std::time::Instant;

use all_gather_case::all_gather_case;
use bandwidth::{ceilings, two_rank_cases};
use harness::*;
use iris::World;
use kernels::*;
use launch::module_load_case;
use ping_pong_case::ping_pong_case;
use report::{print_table, write_json};
use shared_staging_case::shared_staging_case;

pub(crate) struct Options {
    pub(crate) out: Option<String>,
    pub(crate) dump_ptx: Option<String>,
    pub(crate) only: Option<Vec<String>>,
    /// Largest all-gather size per rank.
    pub(crate) max_gather: Option<usize>,
}

pub(crate) fn parse_options() -> Result<Options, String> {
    let mut opts = Options {
        out: None,
        dump_ptx: None,
        only: None,
        max_gather: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--bench" => {}
            "--out" => opts.out = Some(value()?),
            "--dump-ptx" => opts.dump_ptx = Some(value()?),
            "--only" => {
                opts.only = Some(value()?.split(',').map(|s| s.trim().to_string()).collect())
            }
            "--max-gather" => {
                opts.max_gather = Some(value()?.parse().map_err(|e| format!("--max-gather: {e}"))?)
            }
            "-h" | "--help" => {
                println!(
                    "usage: gpu_bench [--out FILE] [--only ceilings,store,load,copy,all_gather,ping_pong,module_load] \
                     [--max-gather BYTES] [--dump-ptx DIR]"
                );
                std::process::exit(0);
            }
            // `cargo bench` passes filters and flags of its own; ignore what is not ours.
            _ => {}
        }
    }
    Ok(opts)
}

fn dump_ptx(dir: &str) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let units: [&iris::abi::KernelUnit; 12] = [
        &store_v4::UNIT,
        &store_v4c::UNIT,
        &load_v4c::UNIT,
        &copy_v4c::UNIT,
        &all_gather_v4c::UNIT,
        &ping_pong_device::UNIT,
        &load_v4::UNIT,
        &copy_v4::UNIT,
        &all_gather::UNIT,
        &all_gather_v4::UNIT,
        &ping_pong::UNIT,
        &util::fill_hash::UNIT,
    ];
    for unit in units {
        for object in unit.code_objects.iter().filter(|o| o.target == "sm_90") {
            let name = unit.id.rsplit("::").next().unwrap_or(unit.id);
            let text = object.bytes.strip_suffix(b"\0").unwrap_or(object.bytes);
            std::fs::write(format!("{dir}/{name}.ptx"), text)?;
        }
    }
    Ok(())
}

fn main() -> std::process::ExitCode {
    let opts = match parse_options() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("gpu_bench: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    if let Some(dir) = &opts.dump_ptx {
        return match dump_ptx(dir) {
            Ok(()) => std::process::ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("gpu_bench: --dump-ptx {dir}: {e}");
                std::process::ExitCode::FAILURE
            }
        };
    }
    match run(&opts) {
        Ok(true) => std::process::ExitCode::SUCCESS,
        Ok(false) => {
            eprintln!("gpu_bench: a check failed (see the ok column)");
            std::process::ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("gpu_bench: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run(opts: &Options) -> iris::Result<bool> {
    let probe = World::threads(1)
        .heap_bytes(MIB)
        .run(|iris| Ok(iris.device_info().clone()))?;
    let info = probe
        .into_iter()
        .next()
        .ok_or_else(|| iris::Error::InvalidConfig("no rank ran".into()))?;
    let plan = Plan::for_backend(info.backend, opts.max_gather);
    let wanted = |case: &str| {
        opts.only
            .as_ref()
            .is_none_or(|o| o.iter().any(|c| c == case))
    };
    eprintln!(
        "gpu_bench: {} ({}, {} multiprocessors, {:.0} GiB), grid-stride launches of {} blocks x {} threads",
        info.name,
        info.backend,
        info.multiprocessors,
        info.total_memory as f64 / GIB as f64,
        info.multiprocessors * BLOCKS_PER_SM,
        BLOCK
    );

    let path = opts
        .out
        .clone()
        .unwrap_or_else(|| match std::env::var("OUT") {
            Ok(dir) if !dir.is_empty() => format!("{dir}/bench-iris.json"),
            _ => "bench.json".into(),
        });
    let mut rows = Vec::new();
    let mut errors: Vec<String> = Vec::new();
    let t = Instant::now();
    // A case that fails is reported and skipped; the JSON is rewritten after every case,
    // so a run cut short keeps what it measured.
    let mut record = |rows: &mut Vec<Row>, name: &str, result: iris::Result<Vec<Row>>| {
        match result {
            Ok(r) => rows.extend(r),
            Err(e) => {
                eprintln!("gpu_bench: {name} failed: {e}");
                errors.push(format!("{name}: {e}"));
            }
        }
        eprintln!(
            "gpu_bench: {name} done ({:.1} s)",
            t.elapsed().as_secs_f64()
        );
        if let Err(e) = write_json(&path, &info, &plan, rows, &errors) {
            eprintln!("gpu_bench: {e}");
        }
    };
    // Module loads first, before anything else has loaded a code object in this process.
    if wanted("module_load") {
        record(&mut rows, "module loads", module_load_case());
    }
    if [
        "ceilings",
        "store",
        "load",
        "copy",
        "all_gather",
        "shared_staging",
    ]
    .iter()
    .any(|c| wanted(c))
    {
        record(&mut rows, "ceilings", ceilings(&plan));
    }
    let ceiling = |name: &str| {
        rows.iter()
            .find(|r| r.case == "ceiling" && r.kernel == name)
            .map_or(f64::NAN, Row::gbps)
    };
    let (memset_gbps, memcpy_gbps) = (ceiling("runtime memset"), ceiling("runtime memcpy_dtod"));
    eprintln!("gpu_bench: ceilings: memset {memset_gbps:.1} GB/s, copy {memcpy_gbps:.1} GB/s");
    if wanted("store") || wanted("load") || wanted("copy") {
        let result = two_rank_cases(&plan, memset_gbps, memcpy_gbps, &wanted);
        record(&mut rows, "two-rank cases", result);
    }
    if wanted("all_gather") {
        for &ranks in &plan.gather_ranks {
            let result = all_gather_case(&plan, ranks, memcpy_gbps);
            record(&mut rows, &format!("all-gather at {ranks} ranks"), result);
        }
    }
    if wanted("shared_staging") {
        let result = shared_staging_case(&plan, memcpy_gbps);
        record(&mut rows, "shared staging", result);
    }
    if wanted("ping_pong") {
        let system = ping_pong_case(&plan, false).map(|r| vec![r]);
        record(&mut rows, "ping-pong", system);
        let device = ping_pong_case(&plan, true).map(|r| vec![r]);
        record(&mut rows, "ping-pong, device scope", device);
    }
    print_table(&rows);
    for e in &errors {
        println!("FAILED: {e}");
    }
    println!("JSON: {path}");
    Ok(errors.is_empty() && rows.iter().all(|r| r.correct))
}
