//! The newer collectives against the unfused iris sequence doing the same work and the
//! device's copy ceiling, measured in one run, ranks as threads of one process:
//!
//! - `all_to_all_v` (counts on the device) against `all_to_all` (fixed counts) moving the
//!   same bytes.
//! - MoE `dispatch` and `combine` at DeepSeek-V3's shapes (hidden 7168, top-8, 256 experts
//!   over the ranks, 4096 tokens a rank, bf16, routing uniform at random) against the
//!   unfused sequence: a local permute kernel (rows in destination order, the order
//!   computed on the host beforehand and not timed) then `all_to_all_v`; back,
//!   `all_to_all_v` then a weighted gather kernel.
//! - `all_reduce_rmsnorm` against `all_reduce` followed by an add + RMSNorm kernel, both
//!   algorithms, the best of each side compared.
//! - First, always: `ccl.barrier()` (the device barrier that frames the fused calls), one
//!   of 100 back to back, and one a call (timed call by call, that is the ranks' start
//!   skew and the barrier).
//! - The fused GEMMs (`all_gather_matmul`, `matmul_reduce_scatter`, `matmul_all_reduce`,
//!   bf16, 4096 x 4096 x 4096 a rank) against the collective then (or after) the same GEMM
//!   kernel, the faster algorithm of the collective, and the GEMM alone (the compute with
//!   no communication, its ceiling here); each form of the fused call (the all-gather
//!   GEMM's in place, from snapshots and copied ahead, the reductions' into owners and
//!   after the GEMM);
//!   with B as `k x n` (`staged_128`; on Hopper, as the library does, transposed first
//!   and `warpgroup_256`, in the unfused sequences too) and transposed (`warpgroup_256`,
//!   Hopper's `wgmma`).
//!
//! The ceiling is a device-to-device copy of the bytes each operation reads and writes on
//! the one device the ranks share (every byte read once, written once).
//!
//! ```text
//! cargo bench --bench ccl_ops -- [--ranks 4] [--iters 20] [--queued] [--tokens 4096]
//!     [--gemm MxNxK[,MxNxK..]] [--only gemm] [--sync-stream on]
//! ```
//! `--queued` times each sample as ten calls queued back to back (divided by ten), as a
//! program runs them; without it each call is timed alone, every rank starting it after
//! a host barrier (so a rank's host thread waking late counts against a call that begins
//! with a barrier, and not against one that begins with a GEMM).
//! `--sync-stream on` gives every rank a sync stream (`World::sync_stream`): the fused
//! GEMMs then queue their split barrier there, beside the own rows.
//! On the CPU backend it runs small shapes once (a check that it works, not a speed).
//! The last lines are a table: case, ms (median over the samples, slowest rank), GB/s, and the
//! ratio to the compared way (below 1: faster). Before each fused-GEMM case rank 0 names
//! it on standard error, so that a run that hangs says where.

use std::time::Instant;

use iris::ccl::gemm_kernels::staged_kernels::staged_128;
use iris::ccl::gemm_kernels::warpgroup_kernels::{pulled_wide, warpgroup_256};
use iris::ccl::{self, AllReduceAlgo, Ccl, MatmulElement, Moe, MoeShape};
use iris::prelude::bf16;
use iris::{BackendKind, Buffer, DevicePtr, Iris, LaunchConfig, World};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

#[path = "common/timing.rs"]
mod timing;
use timing::{arg, time, Timing};

#[iris::kernels]
mod unfused {
    use iris::prelude::*;

    /// `send[r] = x[token[r]]`, rows of `hidden` (16-byte vectors), one block a row.
    #[kernel(instances(T = [bf16]))]
    pub fn permute_rows<T: Element>(
        x: *const [T; 8],
        token: *const u64,
        send: *mut [T; 8],
        rows: u64,
        vectors: u64,
    ) {
        let mut r = block_idx_x() as u64;
        while r < rows {
            let from = unsafe { *token.add(r as usize) };
            let mut v = thread_idx_x() as u64;
            while v < vectors {
                unsafe {
                    *send.add((r * vectors + v) as usize) = *x.add((from * vectors + v) as usize)
                };
                v += block_dim_x() as u64;
            }
            r += grid_dim_x() as u64;
        }
    }

    /// `dst[i] = src[i]` for `n` 16-byte vectors, grid-stride.
    #[kernel]
    pub fn copy_vectors(src: *const [u32; 4], dst: *mut [u32; 4], n: u64) {
        let stride = (grid_dim_x() * block_dim_x()) as u64;
        let mut i = (block_idx_x() * block_dim_x() + thread_idx_x()) as u64;
        while i < n {
            unsafe { *dst.add(i as usize) = *src.add(i as usize) };
            i += stride;
        }
    }

    /// `out[t] = Σ_k w[t, k] · back[pos[t, k]]` in f32 (`pos` u64::MAX: nothing).
    #[kernel(instances(T = [bf16]))]
    pub fn weighted_gather<T: Element>(
        back: *const [T; 8],
        pos: *const u64,
        w: *const f32,
        out: *mut [T; 8],
        tokens: u64,
        top_k: u64,
        vectors: u64,
    ) {
        let mut t = block_idx_x() as u64;
        while t < tokens {
            let mut v = thread_idx_x() as u64;
            while v < vectors {
                let mut acc = [0.0f32; 8];
                for k in 0..top_k {
                    let p = unsafe { *pos.add((t * top_k + k) as usize) };
                    if p != u64::MAX {
                        let wk = unsafe { *w.add((t * top_k + k) as usize) };
                        let row = unsafe { *back.add((p * vectors + v) as usize) };
                        for l in 0..8 {
                            acc[l] += wk * row[l].to_f32();
                        }
                    }
                }
                let mut y = [T::ZERO; 8];
                for l in 0..8 {
                    y[l] = T::from_f32(acc[l]);
                }
                unsafe { *out.add((t * vectors + v) as usize) = y };
                v += block_dim_x() as u64;
            }
            t += grid_dim_x() as u64;
        }
    }

    /// `residual += sum`, then `out = residual * gamma / sqrt(mean(residual²) + eps)`,
    /// one block a row (`hidden` a multiple of 8).
    #[kernel(instances(T = [bf16]))]
    pub fn add_rmsnorm<T: Element>(
        sum: *const [T; 8],
        residual: *mut [T; 8],
        gamma: *const [T; 8],
        out: *mut [T; 8],
        rows: u64,
        vectors: u64,
        eps: f32,
    ) {
        let partial = shared_array::<f32, 32>();
        let mut row = block_idx_x() as u64;
        while row < rows {
            let mut squares = 0.0f32;
            let mut v = thread_idx_x() as u64;
            while v < vectors {
                let at = (row * vectors + v) as usize;
                let (s, r) = unsafe { (*sum.add(at), *residual.add(at)) };
                let mut y = [T::ZERO; 8];
                for l in 0..8 {
                    y[l] = T::from_f32(s[l].to_f32() + r[l].to_f32());
                    squares += y[l].to_f32() * y[l].to_f32();
                }
                unsafe { *residual.add(at) = y };
                v += block_dim_x() as u64;
            }
            let in_warp = warp_reduce_add(squares);
            if lane_id() == 0 {
                unsafe { *partial.add(warp_id() as usize) = in_warp };
            }
            sync_threads();
            let mut total = 0.0f32;
            for w in 0..block_dim_x() / warp_size() {
                total += unsafe { *partial.add(w as usize) };
            }
            sync_threads();
            let scale = 1.0f32 / (total / (vectors * 8) as f32 + eps).sqrt();
            let mut v = thread_idx_x() as u64;
            while v < vectors {
                let at = (row * vectors + v) as usize;
                let (r, g) = unsafe { (*residual.add(at), *gamma.add(v as usize)) };
                let mut y = [T::ZERO; 8];
                for l in 0..8 {
                    y[l] = T::from_f32(r[l].to_f32() * scale * g[l].to_f32());
                }
                unsafe { *out.add(at) = y };
                v += block_dim_x() as u64;
            }
            row += grid_dim_x() as u64;
        }
    }
}

/// One result row.
struct Row {
    case: String,
    ms: f64,
    bytes: f64,
    against: Option<(String, f64)>,
}

/// A copy of `bytes` on the device by a grid-stride kernel of 16-byte vectors, on rank
/// 0's stream while the other ranks wait (the ceiling's measure: the ranks share one
/// device, so this is every rank's traffic at once).
fn copy_ms(iris: &Iris, bytes: usize, timing: Timing) -> iris::Result<f64> {
    let vectors = bytes / 16;
    let a = iris.zeros::<u32>(vectors * 4)?;
    let b = iris.zeros::<u32>(vectors * 4)?;
    let (av, bv) = (
        a.device_ptr().cast::<[u32; 4]>(),
        b.device_ptr().cast::<[u32; 4]>(),
    );
    let sms = iris.device_info().multiprocessors.max(1);
    let me = iris.rank();
    time(iris, timing, || {
        if me == 0 {
            unfused::copy_vectors::launch(
                iris,
                LaunchConfig::linear(sms * 8, 256),
                &av,
                &bv,
                vectors as u64,
            )?;
        }
        Ok(())
    })
}

fn blocks(rows: usize) -> LaunchConfig {
    LaunchConfig::linear(rows.clamp(1, 4096) as u32, 256)
}

/// Shapes: (tokens, hidden, top_k, experts per rank, rmsnorm row counts).
struct Shapes {
    tokens: usize,
    hidden: usize,
    top_k: usize,
    experts_per_rank: usize,
    norm_rows: Vec<usize>,
    /// The fused GEMMs' shapes: (rows a rank, n, k).
    gemm: Vec<(usize, usize, usize)>,
    /// Only the fused GEMMs (`--only gemm`).
    only_gemm: bool,
}

fn run(iris: &Iris, s: &Shapes, timing: Timing) -> iris::Result<Vec<Row>> {
    let ccl = Ccl::new(iris)?;
    // The device barrier that frames every fused call: one of 100 back to back.
    let barriers = time(iris, timing, || (0..100).try_for_each(|_| ccl.barrier()))?;
    // One barrier a call: timed call by call, the slowest rank's time is the ranks' start
    // skew (the earliest waits for the last) plus the barrier; queued, the barrier alone.
    let one = time(iris, timing, || ccl.barrier())?;
    let mut rows = vec![
        Row {
            case: "ccl.barrier, one of 100 back to back".into(),
            ms: barriers / 100.0,
            bytes: 0.0,
            against: None,
        },
        Row {
            case: "ccl.barrier, one a call (timed per call: with the start skew)".into(),
            ms: one,
            bytes: 0.0,
            against: None,
        },
    ];
    if !s.only_gemm {
        rows.extend(collective_rows(iris, &ccl, s, timing)?);
    }
    // The fused GEMMs against the unfused sequences (all_gather then one GEMM; one GEMM
    // then reduce_scatter; one GEMM then all_reduce, the better algorithm), with B as
    // k x n (staged_128) and transposed (warpgroup_256, Hopper's wgmma).
    for &shape in &s.gemm {
        for transposed in [false, true] {
            rows.extend(gemm_rows(iris, &ccl, shape, transposed, timing)?);
        }
    }
    ccl.synchronize()?;
    Ok(rows)
}

/// all_to_all_v, MoE dispatch and combine, all_reduce_rmsnorm.
fn collective_rows(
    iris: &Iris,
    ccl: &Ccl<'_>,
    s: &Shapes,
    timing: Timing,
) -> iris::Result<Vec<Row>> {
    let world = iris.world_size();
    let me = iris.rank();
    let mut rows = Vec::new();
    let (tokens, hidden, top_k) = (s.tokens, s.hidden, s.top_k);
    let experts = s.experts_per_rank * world;

    // all_to_all_v against all_to_all: tokens x hidden elements a rank, equal parts.
    {
        let n = tokens * hidden / world * world;
        let input = iris.symmetric_full(n, bf16::from_f32(1.0))?;
        let output = iris.symmetric_zeros::<bf16>(n)?;
        let counts = iris.symmetric_from_slice(&vec![(n / world) as u64; world])?;
        let recv_counts = iris.symmetric_zeros::<u64>(world)?;
        let v = time(iris, timing, || {
            ccl::all_to_all_v(ccl, &input, &counts, &output, &recv_counts).map(|_| ())
        })?;
        let fixed = time(iris, timing, || ccl::all_to_all(ccl, &input, &output))?;
        let bytes = (n * 2 * world) as f64; // every rank's input, read once and written once
        let ceiling = copy_ms(iris, n * 2 * world, timing)?;
        rows.push(Row {
            case: format!("all_to_all_v {}x{hidden} bf16", tokens),
            ms: v,
            bytes,
            against: Some(("all_to_all".into(), fixed)),
        });
        rows.push(Row {
            case: "  all_to_all (fixed counts)".into(),
            ms: fixed,
            bytes,
            against: None,
        });
        rows.push(Row {
            case: "  device copy of every rank's bytes (copy kernel)".into(),
            ms: ceiling,
            bytes,
            against: None,
        });
    }

    // MoE: routing uniform at random, top_k distinct experts a token.
    {
        let mut rng = StdRng::seed_from_u64(7 + me as u64);
        let mut ids = Vec::with_capacity(tokens * top_k);
        for _ in 0..tokens {
            let mut picked: Vec<i64> = Vec::new();
            while picked.len() < top_k.min(experts) {
                let e = rng.random_range(0..experts) as i64;
                if !picked.contains(&e) {
                    picked.push(e);
                }
            }
            ids.extend(picked);
        }
        let tables = iris.all_gather(ids.clone())?;
        // Rows each rank receives; the most any rank does, with room to spare.
        let per_rank = s.experts_per_rank;
        let received = |d: usize| {
            tables
                .iter()
                .flatten()
                .filter(|&&e| e as usize / per_rank == d)
                .count()
        };
        let capacity = (0..world).map(received).max().unwrap_or(0) + 64;
        let shape = MoeShape {
            tokens,
            hidden,
            top_k,
            experts,
            capacity,
        };
        let moe = Moe::new(ccl, shape)?;
        let x = iris.full(tokens * hidden, bf16::from_f32(0.5))?;
        let idx = iris.from_slice(&ids)?;
        let weights = iris.full(tokens * top_k, 0.125f32)?;
        let recv = iris.symmetric_zeros::<bf16>(capacity * hidden)?;
        let out = iris.zeros::<bf16>(tokens * hidden)?;
        let dispatch = time(iris, timing, || moe.dispatch(ccl, &x, &idx, &recv))?;
        let combine = time(iris, timing, || {
            moe.combine(ccl, &recv, &idx, &weights, &out)
        })?;
        moe.check()?;

        // The unfused sequence: send rows in destination order (host-computed), then
        // all_to_all_v; back the same way, then the weighted gather.
        let mut order: Vec<u64> = Vec::new();
        let mut pos = vec![u64::MAX; tokens * top_k];
        let mut counts = vec![0u64; world];
        for (d, count) in counts.iter_mut().enumerate() {
            for (p, &e) in ids.iter().enumerate() {
                if e as usize / per_rank == d {
                    pos[p] = order.len() as u64;
                    order.push((p / top_k) as u64);
                    *count += hidden as u64;
                }
            }
        }
        let send_rows = order.len();
        let most_sent = iris.all_gather(send_rows)?.into_iter().max().unwrap_or(0);
        let room = most_sent.max(capacity) * hidden;
        let token_of = iris.from_slice(&order)?;
        let pos = iris.from_slice(&pos)?;
        let send = iris.symmetric_zeros::<bf16>(room)?;
        let arrived = iris.symmetric_zeros::<bf16>(room)?;
        let back = iris.symmetric_zeros::<bf16>(room)?;
        let send_counts = iris.symmetric_from_slice(&counts)?;
        let recv_counts = iris.symmetric_zeros::<u64>(world)?;
        let vectors = (hidden / 8) as u64;
        let xv = x.device_ptr().cast::<[bf16; 8]>();
        let sendv = send.local_ptr().cast::<[bf16; 8]>();
        let unfused_dispatch = time(iris, timing, || {
            unfused::permute_rows::launch(
                iris,
                blocks(send_rows),
                &xv,
                &token_of,
                &sendv,
                send_rows as u64,
                vectors,
            )?;
            ccl::all_to_all_v(ccl, &send, &send_counts, &arrived, &recv_counts).map(|_| ())
        })?;
        let backv = back.local_ptr().cast::<[bf16; 8]>();
        let outv = out.device_ptr().cast::<[bf16; 8]>();
        let unfused_combine = time(iris, timing, || {
            ccl::all_to_all_v(ccl, &arrived, &recv_counts, &back, &send_counts)?;
            unfused::weighted_gather::launch(
                iris,
                blocks(tokens),
                &backv,
                &pos,
                &weights,
                &outv,
                tokens as u64,
                top_k as u64,
                vectors,
            )
        })?;
        let moved = (ids.len() * hidden * 2) as f64; // this rank's rows, read and written
        let all_moved = moved * world as f64;
        let ceiling = copy_ms(iris, all_moved as usize, timing)?;
        let what = format!("{tokens} tokens x {hidden}, top-{top_k}, {experts} experts");
        rows.push(Row {
            case: format!("moe dispatch ({what})"),
            ms: dispatch,
            bytes: all_moved,
            against: Some(("permute + all_to_all_v".into(), unfused_dispatch)),
        });
        rows.push(Row {
            case: "moe combine".into(),
            ms: combine,
            bytes: all_moved,
            against: Some(("all_to_all_v + weighted gather".into(), unfused_combine)),
        });
        rows.push(Row {
            case: "  unfused dispatch (permute + all_to_all_v)".into(),
            ms: unfused_dispatch,
            bytes: all_moved,
            against: None,
        });
        rows.push(Row {
            case: "  unfused combine (all_to_all_v + weighted gather)".into(),
            ms: unfused_combine,
            bytes: all_moved,
            against: None,
        });
        rows.push(Row {
            case: "  device copy of every rank's rows (copy kernel)".into(),
            ms: ceiling,
            bytes: all_moved,
            against: None,
        });
    }

    // all_reduce + residual add + RMSNorm: fused against unfused, each its best algorithm.
    for &norm_rows in &s.norm_rows {
        let n = norm_rows * hidden;
        let input = iris.symmetric_full(n, bf16::from_f32(0.25))?;
        let residual = iris.symmetric_full(n, bf16::from_f32(1.0))?;
        let output = iris.symmetric_zeros::<bf16>(n)?;
        let reduced = iris.symmetric_zeros::<bf16>(n)?;
        let gamma: Buffer<'_, bf16> = iris.full(hidden, bf16::from_f32(1.0))?;
        let mut fused = Vec::new();
        let mut unfused_ms = Vec::new();
        let vectors = (hidden / 8) as u64;
        let (sumv, resv, outv, gv) = (
            reduced.local_ptr().cast::<[bf16; 8]>(),
            residual.local_ptr().cast::<[bf16; 8]>(),
            output.local_ptr().cast::<[bf16; 8]>(),
            gamma.device_ptr().cast::<[bf16; 8]>(),
        );
        for algo in [AllReduceAlgo::OneShot, AllReduceAlgo::TwoShot] {
            fused.push(time(iris, timing, || {
                ccl::all_reduce_rmsnorm(ccl, &input, &residual, &gamma, 1e-6, &output, algo)
            })?);
            unfused_ms.push(time(iris, timing, || {
                ccl::all_reduce(ccl, &input, &reduced, ccl::ReduceOp::Sum, algo)?;
                unfused::add_rmsnorm::launch(
                    iris,
                    blocks(norm_rows),
                    &sumv,
                    &resv,
                    &gv,
                    &outv,
                    norm_rows as u64,
                    vectors,
                    1e-6f32,
                )
            })?);
        }
        let best = |v: &[f64]| {
            if v[0] <= v[1] {
                (v[0], "one-shot")
            } else {
                (v[1], "two-shot")
            }
        };
        let ((f, fa), (u, ua)) = (best(&fused), best(&unfused_ms));
        let bytes = (n * 2 * world) as f64;
        rows.push(Row {
            case: format!("all_reduce_rmsnorm {norm_rows}x{hidden} bf16 ({fa})"),
            ms: f,
            bytes,
            against: Some((format!("all_reduce + add_rmsnorm ({ua})"), u)),
        });
        for (i, name) in ["one-shot", "two-shot"].iter().enumerate() {
            rows.push(Row {
                case: format!("  fused {name} / unfused {name}"),
                ms: fused[i],
                bytes,
                against: Some(("unfused".into(), unfused_ms[i])),
            });
        }
    }
    Ok(rows)
}

/// The three fused GEMMs and their unfused sequences, with B as `k x n` or transposed:
/// `m` rows of A a rank (all-gather), `world * m` rows (the reductions).
fn gemm_rows(
    iris: &Iris,
    ccl: &Ccl<'_>,
    (m, n, k): (usize, usize, usize),
    transposed: bool,
    timing: Timing,
) -> iris::Result<Vec<Row>> {
    let (world, me) = (iris.world_size(), iris.rank());
    let mut rows = Vec::new();
    // B as `k x n` goes where the library's fused calls take it: on Hopper through a
    // transpose into `warpgroup_256` (n whole 256-wide tiles), elsewhere `staged_128`.
    let via_bt = !transposed && ccl::fused_kernel_takes_bt(iris, false, n);
    let kernel = if transposed {
        "warpgroup_256, Bᵀ"
    } else if via_bt {
        "B transposed, warpgroup_256"
    } else {
        "staged_128, B"
    };
    // Bᵀ for the unfused GEMMs where B is transposed first (written before each GEMM).
    let b_t = iris.zeros::<bf16>(if via_bt { k * n } else { 0 })?;
    // Which case runs, on standard error (a run that hangs names it).
    let case = |what: &str| {
        if me == 0 {
            eprintln!("ccl_ops: {m}x{n}x{k} a rank ({kernel}): {what}");
        }
    };
    // The fused calls' own GEMM, alone: `rows` rows of `a` times `b` into `c`.
    let gemm_of = |a: &DevicePtr<bf16>,
                   b: &DevicePtr<bf16>,
                   c: &iris::SymmetricBuffer<'_, f32>,
                   rows: usize| {
        if transposed || via_bt {
            let bt = if via_bt {
                bf16::launch_transpose(iris, *b, b_t.device_ptr(), k as u32, n as u32)?;
                b_t.device_ptr()
            } else {
                *b
            };
            return warpgroup_256::launch::<bf16>(
                iris,
                LaunchConfig::linear((rows / 128 * (n / 256)) as u32, 256),
                a,
                &bt,
                c,
                n as u32,
                k as u32,
                0,
                me as u32,
                1,
                world as u32,
            );
        }
        let warp = if iris.backend_kind() == BackendKind::Hip {
            64
        } else {
            32
        };
        staged_128::launch::<bf16>(
            iris,
            LaunchConfig::linear((rows / 128 * (n / 128)) as u32, 4 * warp),
            a,
            b,
            c,
            n as u32,
            k as u32,
            0,
            me as u32,
            1,
            world as u32,
        )
    };
    let flops = |rows: usize| 2.0 * (rows * n * k) as f64 * world as f64;
    let b = iris.full(k * n, bf16::from_f32(0.25))?;
    let as_b = || {
        if transposed {
            ccl::MatrixB::transposed(&b)
        } else {
            ccl::MatrixB::k_by_n(&b)
        }
    };
    // all_gather_matmul: m rows a rank.
    let a = iris.symmetric_full(m * k, bf16::from_f32(0.5))?;
    let c = iris.symmetric_zeros::<f32>(world * m * n)?;
    let gathered = iris.symmetric_zeros::<bf16>(world * m * k)?;
    // The unfused way at its best: the faster all-gather (push or pull), then the GEMM.
    let mut unfused = f64::MAX;
    for gather in [ccl::AllGatherAlgo::Push, ccl::AllGatherAlgo::Pull] {
        case(&format!("all_gather ({gather:?}) + GEMM"));
        unfused = unfused.min(time(iris, timing, || {
            ccl::all_gather(ccl, &a, &gathered, gather)?;
            gemm_of(&gathered.local_ptr(), &b.device_ptr(), &c, world * m)
        })?);
    }
    // Each way of bringing A's rows (`Auto` takes the snapshots where the ranks share a
    // device, copied ahead across devices).
    for (algo, how) in [
        (ccl::AllGatherMatmulAlgo::InPlace, "in place"),
        (ccl::AllGatherMatmulAlgo::Snapshot, "from snapshots"),
        (ccl::AllGatherMatmulAlgo::CopyAhead, "copied ahead"),
    ] {
        case(&format!("all_gather_matmul, {how}"));
        let fused = time(iris, timing, || {
            ccl::all_gather_matmul_with(ccl, &a, as_b(), &c, k, algo)
        })?;
        rows.push(gemm_row(
            format!(
                "all_gather_matmul {}x{n}x{k} bf16 ({kernel}, {how})",
                world * m
            ),
            fused,
            flops(world * m),
            "all_gather (best) + GEMM",
            unfused,
        ));
    }
    // matmul_reduce_scatter / matmul_all_reduce: M = world * m rows, k a rank's share.
    let big = world * m;
    let a = iris.full(big * k, bf16::from_f32(0.5))?;
    let staging = iris.symmetric_zeros::<f32>(big * n)?;
    let part = iris.symmetric_zeros::<f32>(m * n)?;
    let whole = iris.symmetric_zeros::<f32>(big * n)?;
    let partial = iris.symmetric_zeros::<f32>(big * n)?;
    // The same A and B as symmetric allocations, which `Pull` reads in the peers'
    // memory (with Bᵀ only).
    let a_shared = iris.symmetric_full(big * k, bf16::from_f32(0.5))?;
    let b_shared = iris.symmetric_full(k * n, bf16::from_f32(0.25))?;
    // Each way of adding the parts (`Auto` takes one of them: into owners, except where
    // the ranks share a device and their own rows are under a wave).
    let mut forms = vec![
        (ccl::MatmulReduceAlgo::IntoOwners, "into owners"),
        (ccl::MatmulReduceAlgo::AfterGemm, "after the GEMM"),
    ];
    if transposed {
        forms.push((ccl::MatmulReduceAlgo::Pull, "pulled by the owners"));
    }
    let pulled = |algo| algo == ccl::MatmulReduceAlgo::Pull;
    case("GEMM + reduce_scatter");
    let unfused = time(iris, timing, || {
        gemm_of(&a.device_ptr(), &b.device_ptr(), &partial, big)?;
        ccl::reduce_scatter(ccl, &partial, &part, ccl::ReduceOp::Sum)
    })?;
    for &(algo, how) in &forms {
        case(&format!("matmul_reduce_scatter, {how}"));
        let fused = time(iris, timing, || {
            if pulled(algo) {
                let bt = ccl::MatrixB::transposed(&b_shared);
                ccl::matmul_reduce_scatter_with(ccl, &a_shared, bt, &staging, &part, k, algo)
            } else {
                ccl::matmul_reduce_scatter_with(ccl, &a, as_b(), &staging, &part, k, algo)
            }
        })?;
        rows.push(gemm_row(
            format!("matmul_reduce_scatter {big}x{n}x{k} bf16 ({kernel}, {how})"),
            fused,
            flops(big),
            "GEMM + reduce_scatter",
            unfused,
        ));
    }
    let mut best = f64::MAX;
    for algo in [AllReduceAlgo::OneShot, AllReduceAlgo::TwoShot] {
        case(&format!("GEMM + all_reduce ({algo:?})"));
        best = best.min(time(iris, timing, || {
            gemm_of(&a.device_ptr(), &b.device_ptr(), &partial, big)?;
            ccl::all_reduce(ccl, &partial, &whole, ccl::ReduceOp::Sum, algo)
        })?);
    }
    for &(algo, how) in &forms {
        case(&format!("matmul_all_reduce, {how}"));
        let fused = time(iris, timing, || {
            if pulled(algo) {
                let bt = ccl::MatrixB::transposed(&b_shared);
                ccl::matmul_all_reduce_with(ccl, &a_shared, bt, &staging, &whole, k, algo)
            } else {
                ccl::matmul_all_reduce_with(ccl, &a, as_b(), &staging, &whole, k, algo)
            }
        })?;
        rows.push(gemm_row(
            format!("matmul_all_reduce {big}x{n}x{k} bf16 ({kernel}, {how})"),
            fused,
            flops(big),
            "GEMM + all_reduce (best)",
            best,
        ));
    }
    case("the GEMM alone");
    let local = time(iris, timing, || {
        gemm_of(&a.device_ptr(), &b.device_ptr(), &partial, big)
    })?;
    rows.push(gemm_row(
        format!("  the GEMM alone ({kernel}, no communication)"),
        local,
        flops(big),
        "",
        0.0,
    ));
    // The owners' pulled GEMM alone (`Pull` without its two barriers: the peers' A and
    // B do not change here), storing into this rank's `c` and into every rank's.
    if transposed {
        for (everywhere, what) in [(0u32, "into this rank"), (1, "into every rank")] {
            case(&format!("the pulled GEMM alone, {what}"));
            let c = if everywhere == 0 { &part } else { &whole };
            let pulled = time(iris, timing, || {
                pulled_wide::launch::<bf16>(
                    iris,
                    LaunchConfig::linear((m / 128 * (n / 256)) as u32, 256),
                    &a_shared,
                    &b_shared,
                    c,
                    ccl.signals(),
                    m as u32,
                    n as u32,
                    k as u32,
                    me as u32,
                    world as u32,
                    everywhere,
                )
            })?;
            rows.push(gemm_row(
                format!("  the pulled GEMM alone, {what} (no barriers)"),
                pulled,
                flops(big),
                "",
                0.0,
            ));
        }
    }
    // The GEMM between two device barriers (the ranks' arrival skew included): what a
    // fused call framed by barriers would cost; the fused calls run their own rows
    // before the first barrier, so the skew is spent computing.
    case("the GEMM between two device barriers");
    let framed = time(iris, timing, || {
        ccl.barrier()?;
        gemm_of(&a.device_ptr(), &b.device_ptr(), &partial, big)?;
        ccl.barrier()
    })?;
    rows.push(gemm_row(
        format!("  the GEMM between two device barriers ({kernel})"),
        framed,
        flops(big),
        "",
        0.0,
    ));
    Ok(rows)
}

/// `--gemm MxNxK[,MxNxK..]` (rows a rank, n, k), if given.
fn gemm_shapes() -> Option<Vec<(usize, usize, usize)>> {
    let text = arg::<String>("--gemm")?;
    let shape = |s: &str| -> Option<(usize, usize, usize)> {
        let v: Vec<usize> = s
            .split('x')
            .map(|d| d.parse().ok())
            .collect::<Option<_>>()?;
        (v.len() == 3).then(|| (v[0], v[1], v[2]))
    };
    let shapes: Option<Vec<_>> = text.split(',').map(shape).collect();
    if shapes.is_none() {
        eprintln!("ccl_ops: --gemm {text}: expected MxNxK[,MxNxK..] (rows a rank, n, k)");
        std::process::exit(2);
    }
    shapes
}

/// A GEMM row: its rate in TFLOP/s goes in the GB/s column (said in the case's name).
fn gemm_row(case: String, ms: f64, flops: f64, against: &str, other: f64) -> Row {
    Row {
        case: format!("{case} [TFLOP/s]"),
        ms,
        // Printed as bytes / s / 1e9: flops / 1e3 gives TFLOP/s there.
        bytes: flops / 1e3,
        against: (!against.is_empty()).then(|| (against.to_string(), other)),
    }
}

fn main() -> std::process::ExitCode {
    let ranks = arg("--ranks").unwrap_or(4);
    let start = Instant::now();
    let gpu = !matches!(World::default_backend(), Ok(BackendKind::Cpu) | Err(_));
    let timing = Timing::from_args(if gpu { 20 } else { 1 });
    let only_gemm = arg::<String>("--only").is_some_and(|o| o == "gemm");
    let shapes = if gpu {
        Shapes {
            tokens: arg("--tokens").unwrap_or(4096),
            hidden: 7168,
            top_k: 8,
            experts_per_rank: 256 / ranks.max(1),
            norm_rows: vec![128, 4096],
            // A square GEMM, then a tensor-parallel column shard (n = 4096 / 4): more
            // communication per multiply.
            gemm: gemm_shapes().unwrap_or(vec![(1024, 4096, 4096), (1024, 1024, 4096)]),
            only_gemm,
        }
    } else {
        Shapes {
            tokens: 64,
            hidden: 64,
            top_k: 4,
            experts_per_rank: 4,
            norm_rows: vec![16],
            gemm: gemm_shapes().unwrap_or(vec![(128, 256, 64)]),
            only_gemm,
        }
    };
    let heap = if gpu { 6usize << 30 } else { 64 << 20 };
    let sync_stream = arg::<String>("--sync-stream").is_some_and(|v| v == "on");
    let result = World::threads(ranks)
        .heap_bytes(heap)
        .sync_stream(sync_stream)
        .run(|iris| run(iris, &shapes, timing));
    let rows = match result {
        Ok(mut all) => all.swap_remove(0),
        Err(e) => {
            eprintln!("ccl_ops: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    println!(
        "ccl_ops: {ranks} ranks as threads on {}{}, {}, slowest rank; {:.1} s",
        if gpu { "the GPU" } else { "the CPU backend" },
        if sync_stream {
            " with sync streams"
        } else {
            ""
        },
        timing.describe(),
        start.elapsed().as_secs_f64()
    );
    println!("{:<62} {:>9} {:>8}  against", "case", "ms", "GB/s");
    for r in rows {
        let against = r
            .against
            .map(|(name, ms)| format!("{:.2}x of {name} ({ms:.3} ms)", r.ms / ms))
            .unwrap_or_default();
        println!(
            "{:<62} {:>9.4} {:>8.1}  {against}",
            r.case,
            r.ms,
            r.bytes / (r.ms * 1e-3) / 1e9
        );
    }
    std::process::ExitCode::SUCCESS
}
