//! Load and store bandwidth to every peer at once: every rank reads all the other ranks'
//! buffers (`iris::load`) into its own, and writes its buffer into every other rank's
//! (`iris::store`), 16 bytes (`f32x4`) a thread, neighbouring threads starting at different
//! peers so that all links are busy together. Results are checked against the
//! data the peers hold.
//!
//! ```text
//! cargo run --release --example all_load_store -- [--ranks 2,4,8] [--elems 64K,1M] [--iters K]
//! ```
//! `--elems` counts `f32`s per rank and peer (rounded up to a multiple of 4).

mod common;

use common::{gbps, human_bytes, median_ms, parse_options, slowest, yes_no, Table};
use iris::prelude::*;
use iris::{BackendKind, Iris, LaunchConfig, World};
use rand::Rng;
use std::process::ExitCode;

#[iris::kernels]
mod all_peers {
    use iris::prelude::*;

    /// `dst[p * n + i] = rank p's src[i]` for every other rank `p`.
    #[kernel]
    pub fn load_all(src: Symmetric<f32x4>, dst: *mut f32x4, n: u64, me: u32, world: u32) {
        let stride = (grid_dim_x() * block_dim_x()) as u64;
        let mut i = (block_idx_x() * block_dim_x() + thread_idx_x()) as u64;
        while i < n {
            for k in 0..world - 1 {
                let peer = (me + 1 + (k + i as u32) % (world - 1)) % world;
                unsafe {
                    *dst.add((peer as u64 * n + i) as usize) = load(src.add(i as usize), peer)
                };
            }
            i += stride;
        }
    }

    /// `rank p's dst[me * n + i] = src[i]` for every other rank `p`.
    #[kernel]
    pub fn store_all(src: *const f32x4, dst: Symmetric<f32x4>, n: u64, me: u32, world: u32) {
        let stride = (grid_dim_x() * block_dim_x()) as u64;
        let mut i = (block_idx_x() * block_dim_x() + thread_idx_x()) as u64;
        let slot = dst.add((me as u64 * n) as usize);
        while i < n {
            let v = unsafe { *src.add(i as usize) };
            for k in 0..world - 1 {
                store(
                    slot.add(i as usize),
                    v,
                    (me + 1 + (k + i as u32) % (world - 1)) % world,
                );
            }
            i += stride;
        }
    }
}

struct Row {
    op: &'static str,
    bytes: usize,
    ms: f32,
    correct: bool,
}

fn run_rank(iris: &Iris, elems: &[usize], iters: usize) -> iris::Result<Vec<Row>> {
    let world = iris.world_size();
    let me = iris.rank();
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
        let dst = iris.full(n * world, f32x4::splat(f32::NAN))?;
        let sym_dst = iris.symmetric_full(n * world, f32x4::splat(f32::NAN))?;
        let sms = u64::from(iris.device_info().multiprocessors.max(1));
        let cfg = LaunchConfig::linear((n as u64).div_ceil(256).clamp(1, sms * 4) as u32, 256);
        // What a rank's W*n buffer holds when everything arrived: every other rank's data
        // in its slot, its own slot untouched.
        let want = |got: Vec<f32x4>| {
            got.chunks(n).enumerate().all(|(p, chunk)| {
                let flat: Vec<f32> = chunk.iter().flat_map(|v| v.0).collect();
                if p == me {
                    flat.iter().all(|x| x.is_nan())
                } else {
                    flat == everyone[p]
                }
            })
        };
        let (w, m) = (world as u32, me as u32);
        let ms = median_ms(iris, iters, || {
            all_peers::load_all::launch(iris, cfg, &src, &dst, n as u64, m, w)
        })?;
        rows.push(Row {
            op: "load from all",
            bytes: n * 16 * (world - 1),
            ms,
            correct: want(dst.to_vec()?),
        });
        let ms = median_ms(iris, iters, || {
            all_peers::store_all::launch(iris, cfg, &local, &sym_dst, n as u64, m, w)
        })?;
        rows.push(Row {
            op: "store to all",
            bytes: n * 16 * (world - 1),
            ms,
            correct: want(sym_dst.to_vec()?),
        });
        iris.barrier()?;
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
    let usage = "[--ranks 2,4,8] [--elems 64K,1M (f32s per rank and peer)] [--iters K]";
    let opts = match parse_options("all_load_store", usage, &[2, 4, 8], default_elems, &[]) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("all_load_store: {e}");
            return ExitCode::from(2);
        }
    };
    let mut table = Table::new(&[
        "ranks",
        "backend",
        "op",
        "bytes/peer",
        "time (us)",
        "GB/s/rank",
        "correct",
        "device",
    ]);
    let mut all_correct = true;
    for &ranks in &opts.ranks {
        if ranks < 2 {
            eprintln!("all_load_store: skipping {ranks} rank(s): there is no peer");
            continue;
        }
        let max = opts.elems.iter().max().copied().unwrap_or(0);
        let heap = (max * 4 * (ranks + 1)).next_multiple_of(1 << 20) + (1 << 20);
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
                eprintln!("all_load_store at {ranks} ranks failed: {e}");
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
                human_bytes(row.bytes / (ranks - 1)),
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
        eprintln!("all_load_store: data read or written did not match the peers' data");
        ExitCode::FAILURE
    }
}
