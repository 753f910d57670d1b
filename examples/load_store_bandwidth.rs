//! Remote load and store bandwidth to one peer: every rank reads the next rank's buffer
//! with `iris::load` and writes into it with `iris::store`, 16 bytes (`f32x4`) a thread;
//! the same kernels on the rank's own copy give the local baseline. Each result is checked
//! against the data the peers hold.
//!
//! ```text
//! cargo run --release --example load_store_bandwidth -- [--ranks 2] [--elems 64K,1M] [--iters K]
//! ```
//! `--elems` counts `f32`s per rank (rounded up to a multiple of 4). Ranks are threads of
//! this process; with no GPU the kernels run on the CPU.

mod common;

use common::{gbps, human_bytes, median_ms, parse_options, slowest, yes_no, Table};
use iris::prelude::*;
use iris::{BackendKind, Iris, LaunchConfig, World};
use rand::Rng;
use std::process::ExitCode;

#[iris::kernels]
mod bandwidth {
    use iris::prelude::*;

    /// `dst[i] = peer's src[i]`, 16 bytes a thread, grid-stride.
    #[kernel]
    pub fn load_from(src: Symmetric<f32x4>, dst: *mut f32x4, n: u64, peer: u32) {
        let stride = (grid_dim_x() * block_dim_x()) as u64;
        let mut i = (block_idx_x() * block_dim_x() + thread_idx_x()) as u64;
        while i < n {
            unsafe { *dst.add(i as usize) = load(src.add(i as usize), peer) };
            i += stride;
        }
    }

    /// `peer's dst[i] = src[i]`, 16 bytes a thread, grid-stride.
    #[kernel]
    pub fn store_to(src: *const f32x4, dst: Symmetric<f32x4>, n: u64, peer: u32) {
        let stride = (grid_dim_x() * block_dim_x()) as u64;
        let mut i = (block_idx_x() * block_dim_x() + thread_idx_x()) as u64;
        while i < n {
            store(dst.add(i as usize), unsafe { *src.add(i as usize) }, peer);
            i += stride;
        }
    }
}

/// One measured row.
struct Row {
    op: &'static str,
    bytes: usize,
    ms: f32,
    correct: bool,
}

fn config(iris: &Iris, n: u64) -> LaunchConfig {
    let sms = u64::from(iris.device_info().multiprocessors.max(1));
    let blocks = n.div_ceil(256).clamp(1, sms * 4);
    LaunchConfig::linear(blocks as u32, 256)
}

fn run_rank(iris: &Iris, elems: &[usize], iters: usize) -> iris::Result<Vec<Row>> {
    let world = iris.world_size();
    let me = iris.rank();
    let next = ((me + 1) % world) as u32;
    let prev = (me + world - 1) % world;
    let mut rows = Vec::new();
    for &e in elems {
        let n = e.div_ceil(4).max(1);
        let mut rng = rand::rng();
        let mine: Vec<f32x4> = (0..n)
            .map(|_| f32x4::new([rng.random(), rng.random(), rng.random(), rng.random()]))
            .collect();
        let everyone = iris.all_gather(mine.iter().flat_map(|v| v.0).collect::<Vec<f32>>())?;
        let src = iris.symmetric_from_slice(&mine)?;
        let local = iris.from_slice(&mine)?;
        let dst = iris.full(n, f32x4::splat(f32::NAN))?;
        let sym_dst = iris.symmetric_full(n, f32x4::splat(f32::NAN))?;
        let cfg = config(iris, n as u64);
        let as_f32 = |v: Vec<f32x4>| v.into_iter().flat_map(|x| x.0).collect::<Vec<f32>>();
        for (op, peer) in [("remote load", next), ("local load", me as u32)] {
            let ms = median_ms(iris, iters, || {
                bandwidth::load_from::launch(iris, cfg, &src, &dst, n as u64, peer)
            })?;
            let correct = as_f32(dst.to_vec()?) == everyone[peer as usize];
            rows.push(Row {
                op,
                bytes: n * 16,
                ms,
                correct,
            });
        }
        for (op, peer, from) in [("remote store", next, prev), ("local store", me as u32, me)] {
            let ms = median_ms(iris, iters, || {
                bandwidth::store_to::launch(iris, cfg, &local, &sym_dst, n as u64, peer)
            })?;
            // Every rank stored into `peer`: this rank's copy holds what `from` stored.
            let correct = as_f32(sym_dst.to_vec()?) == everyone[from];
            iris.barrier()?;
            rows.push(Row {
                op,
                bytes: n * 16,
                ms,
                correct,
            });
        }
    }
    Ok(rows)
}

fn main() -> ExitCode {
    let default_elems = |b: BackendKind| {
        if b == BackendKind::Cpu {
            vec![1 << 14, 1 << 18]
        } else {
            vec![1 << 18, 1 << 24]
        }
    };
    let usage = "[--ranks 2] [--elems 64K,1M (f32s per rank)] [--iters K]";
    let opts = match parse_options("load_store_bandwidth", usage, &[2], default_elems, &[]) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("load_store_bandwidth: {e}");
            return ExitCode::from(2);
        }
    };
    let mut table = Table::new(&[
        "ranks",
        "backend",
        "op",
        "bytes",
        "time (us)",
        "GB/s",
        "correct",
        "device",
    ]);
    let mut all_correct = true;
    for &ranks in &opts.ranks {
        let heap = (opts.elems.iter().max().copied().unwrap_or(0) * 4 * 2)
            .next_multiple_of(1 << 20)
            + (1 << 20);
        let result = World::threads(ranks).heap_bytes(heap).run(|iris| {
            Ok((
                iris.backend_kind(),
                iris.device_info().name.clone(),
                run_rank(iris, &opts.elems, opts.iters)?,
            ))
        });
        let per_rank = match result {
            Ok(r) => r,
            Err(e) => {
                eprintln!("load_store_bandwidth at {ranks} ranks failed: {e}");
                return ExitCode::FAILURE;
            }
        };
        let (backend, device) = (per_rank[0].0, per_rank[0].1.clone());
        for (i, row) in per_rank[0].2.iter().enumerate() {
            let ms = slowest(per_rank.iter().map(|r| r.2[i].ms));
            let correct = per_rank.iter().all(|r| r.2[i].correct);
            all_correct &= correct;
            table.row(vec![
                ranks.to_string(),
                backend.to_string(),
                row.op.to_string(),
                human_bytes(row.bytes),
                format!("{:.1}", ms * 1e3),
                format!("{:.2}", gbps(row.bytes as f64, ms)),
                yes_no(correct),
                device.clone(),
            ]);
        }
    }
    table.print();
    if all_correct {
        ExitCode::SUCCESS
    } else {
        eprintln!("load_store_bandwidth: data read or written did not match the peers' data");
        ExitCode::FAILURE
    }
}
