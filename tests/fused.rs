//! The fused collectives of `iris::ccl` at 1, 2, 4 and 8 ranks on the CPU backend and
//! every GPU backend present, against a host reference: `all_reduce_rmsnorm` (one-shot
//! and two-shot, rows of whole 16-byte vectors and not), and the fused GEMMs
//! (`all_gather_matmul`, `matmul_reduce_scatter`, `matmul_all_reduce`, exact).

mod common;

use std::fmt::Debug;
use std::sync::{Arc, Mutex};

use common::for_every_world;
use iris::ccl::{self, AllGatherMatmulAlgo, AllReduceAlgo, Ccl, FloatElement, MatmulReduceAlgo};
use iris::prelude::{bf16, f16};
use iris::{Error, Iris, World};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// What the tests need of an element type.
trait Elem: FloatElement + Debug + PartialEq {
    const NAME: &'static str;
    /// How far a result computed in another order may be, relative to its size.
    const TOLERANCE: f32;
    fn of(x: f32) -> Self;
    fn value(self) -> f32;
}

impl Elem for f32 {
    const NAME: &'static str = "f32";
    const TOLERANCE: f32 = 1e-5;
    fn of(x: f32) -> Self {
        x
    }
    fn value(self) -> f32 {
        self
    }
}

impl Elem for f16 {
    const NAME: &'static str = "f16";
    const TOLERANCE: f32 = 2.0 / 1024.0;
    fn of(x: f32) -> Self {
        f16::from_f32(x)
    }
    fn value(self) -> f32 {
        self.to_f32()
    }
}

impl Elem for bf16 {
    const NAME: &'static str = "bf16";
    const TOLERANCE: f32 = 2.0 / 128.0;
    fn of(x: f32) -> Self {
        bf16::from_f32(x)
    }
    fn value(self) -> f32 {
        self.to_f32()
    }
}

/// `n` values in [-2, 2) from `seed`.
fn values<T: Elem>(seed: u64, n: usize) -> Vec<T> {
    let mut rng = StdRng::seed_from_u64(seed);
    (0..n).map(|_| T::of(rng.random_range(-2.0..2.0))).collect()
}

/// `all_reduce_rmsnorm` of `rows` x `hidden` with `algo`, against the host: the residual
/// exactly, the output within `T::TOLERANCE`, identical on every rank.
fn rmsnorm_of<T: Elem>(
    iris: &Iris,
    ccl: &Ccl<'_>,
    rows: usize,
    hidden: usize,
    algo: AllReduceAlgo,
) -> iris::Result<Vec<String>> {
    let world = iris.world_size();
    let me = iris.rank();
    let n = rows * hidden;
    let what = format!("{} {rows}x{hidden} {algo:?} (rank {me})", T::NAME);
    let inputs: Vec<Vec<T>> = (0..world).map(|r| values(r as u64, n)).collect();
    let residual0: Vec<T> = values(100, n);
    let gamma0: Vec<T> = values(200, hidden);
    let eps = 1e-5f32;
    let input = iris.symmetric_from_slice(&inputs[me])?;
    let residual = iris.symmetric_from_slice(&residual0)?;
    let output = iris.symmetric_full(n, T::of(-99.0))?;
    let gamma = iris.from_slice(&gamma0)?;
    ccl::all_reduce_rmsnorm(ccl, &input, &residual, &gamma, eps, &output, algo)?;
    ccl.synchronize()?;
    let (got_res, got_out) = (residual.to_vec()?, output.to_vec()?);
    let mut problems = Vec::new();
    for row in 0..rows {
        let at = row * hidden;
        let mut sums = Vec::with_capacity(hidden);
        for h in 0..hidden {
            let acc: f32 = inputs.iter().map(|x| x[at + h].value()).sum();
            sums.push(T::of(acc + residual0[at + h].value()));
        }
        let squares: f32 = sums.iter().map(|s| s.value() * s.value()).sum();
        let scale = 1.0 / (squares / hidden as f32 + eps).sqrt();
        for h in 0..hidden {
            if got_res[at + h] != sums[h] {
                problems.push(format!(
                    "{what}: residual[{row}][{h}] = {:?}, want {:?}",
                    got_res[at + h],
                    sums[h]
                ));
                return Ok(problems);
            }
            let want = sums[h].value() * scale * gamma0[h].value();
            let have = got_out[at + h].value();
            if (have - want).abs() > T::TOLERANCE * want.abs().max(1e-3) {
                problems.push(format!("{what}: output[{row}][{h}] = {have}, want {want}"));
                return Ok(problems);
            }
        }
    }
    // Every rank's result, bit for bit.
    let everyone = iris.all_gather(
        got_out
            .iter()
            .map(|x| x.value().to_bits())
            .collect::<Vec<_>>(),
    )?;
    if everyone.iter().any(|o| *o != everyone[0]) {
        problems.push(format!("{what}: the ranks' outputs differ"));
    }
    Ok(problems)
}

#[test]
fn all_reduce_rmsnorm_matches_the_host_one_shot_and_two_shot() {
    for_every_world("all_reduce_rmsnorm", 8 << 20, |iris, ccl| {
        let mut out = Vec::new();
        for algo in [AllReduceAlgo::OneShot, AllReduceAlgo::TwoShot] {
            out.extend(rmsnorm_of::<bf16>(iris, ccl, 9, 512, algo)?);
            out.extend(rmsnorm_of::<f16>(iris, ccl, 5, 24, algo)?);
            out.extend(rmsnorm_of::<f32>(iris, ccl, 3, 13, algo)?);
        }
        out.extend(rmsnorm_of::<bf16>(iris, ccl, 2, 7, AllReduceAlgo::TwoShot)?);
        Ok(out)
    });
}

#[test]
fn all_reduce_rmsnorm_shapes_are_checked_before_anything_runs() {
    World::threads(2)
        .heap_bytes(1 << 20)
        .run(|iris| {
            let ccl = Ccl::new(iris)?;
            let input = iris.symmetric_zeros::<f32>(100)?;
            let residual = iris.symmetric_zeros::<f32>(100)?;
            let output = iris.symmetric_zeros::<f32>(100)?;
            let gamma = iris.zeros::<f32>(30)?;
            let one = AllReduceAlgo::OneShot;
            match ccl::all_reduce_rmsnorm(&ccl, &input, &residual, &gamma, 1e-6, &output, one) {
                Err(Error::InvalidConfig(m)) => assert!(m.contains("whole rows"), "{m}"),
                other => panic!("100 elements in rows of 30: {other:?}"),
            }
            let gamma = iris.zeros::<f32>(25)?;
            let short = iris.symmetric_zeros::<f32>(75)?;
            assert!(matches!(
                ccl::all_reduce_rmsnorm(&ccl, &input, &short, &gamma, 1e-6, &output, one),
                Err(Error::LengthMismatch {
                    expected: 100,
                    got: 75,
                    ..
                })
            ));
            match ccl::all_reduce_rmsnorm(&ccl, &input, &residual, &gamma, 1e-6, &residual, one) {
                Err(Error::InvalidConfig(m)) => assert!(m.contains("same allocation"), "{m}"),
                other => panic!("residual as output: {other:?}"),
            }
            assert!(matches!(
                ccl::all_reduce_rmsnorm(&ccl, &input, &residual, &gamma, f32::NAN, &output, one),
                Err(Error::InvalidConfig(_))
            ));
            ccl.synchronize()
        })
        .unwrap();
}

/// A value exact in `bf16` and `f16` whose products and sums of a few hundred stay exact
/// in `f32`: a multiple of 1/4 in [-2, 2).
fn quarter(seed: u64, i: usize) -> f32 {
    (((i as u64).wrapping_mul(2654435761) ^ seed.wrapping_mul(40503)) % 16) as f32 / 4.0 - 2.0
}

/// `a` (`rows x k`) times `b` (`k x n`) on the host, in f32 (exact for `quarter` values).
fn host_gemm(a: &[f32], b: &[f32], rows: usize, n: usize, k: usize) -> Vec<f32> {
    let mut c = vec![0.0f32; rows * n];
    for r in 0..rows {
        for x in 0..k {
            let v = a[r * k + x];
            for j in 0..n {
                c[r * n + j] += v * b[x * n + j];
            }
        }
    }
    c
}

/// `b` (`k x n`) transposed (`n x k`).
fn transpose(b: &[f32], k: usize, n: usize) -> Vec<f32> {
    (0..n * k).map(|i| b[(i % k) * n + i / k]).collect()
}

/// `b` as the fused GEMMs take it: `k x n`, or transposed.
fn layout_of<'a>(b: &'a iris::Buffer<'_, bf16>, transposed: bool) -> ccl::MatrixB<'a, bf16> {
    if transposed {
        ccl::MatrixB::transposed(b)
    } else {
        ccl::MatrixB::k_by_n(b)
    }
}

/// The three fused GEMMs at one world, with B as `k x n` (`staged_128`) and transposed
/// (`warpgroup_256`), each twice (the second call reuses A, B and the staging buffer),
/// compared exactly with the host.
fn matmuls_of(iris: &Iris, ccl: &Ccl<'_>) -> iris::Result<Vec<String>> {
    // Bᵀ runs the 128 x 256 kernel: n a multiple of 256.
    let mut problems = matmuls_in(iris, ccl, false, (128, 128, 128), true)?;
    problems.extend(matmuls_in(iris, ccl, true, (128, 256, 64), true)?);
    Ok(problems)
}

/// The fused GEMMs with `m` rows a rank (of A in the all-gather GEMM, of the product's
/// part in the reductions), `n` and `k`; every all-gather form when `every_form`, else
/// `Auto` once.
fn matmuls_in(
    iris: &Iris,
    ccl: &Ccl<'_>,
    transposed: bool,
    (m, n, k): (usize, usize, usize),
    every_form: bool,
) -> iris::Result<Vec<String>> {
    let (world, me) = (iris.world_size(), iris.rank());
    let mut problems = Vec::new();
    let layout = if transposed { "Bᵀ" } else { "B" };
    let matrix =
        |seed: u64, len: usize| -> Vec<f32> { (0..len).map(|i| quarter(seed, i)).collect() };
    let to_bf16 = |v: &[f32]| -> Vec<bf16> { v.iter().map(|&x| bf16::from_f32(x)).collect() };
    let upload_b = |b: &[f32]| {
        let b = if transposed {
            transpose(b, k, n)
        } else {
            b.to_vec()
        };
        iris.from_slice(&to_bf16(&b))
    };

    // all_gather_matmul: every rank's rows, times this rank's own B; the rows read in
    // place, copied ahead (twice: the task counter and the flags carry over; then, up to
    // 4 ranks, two block rows a rank with three k steps: the copy's vector loop and its
    // remainder), and from snapshots (three calls: both halves and the first again;
    // then a larger A, which grows the workspace). (algo, m, k, calls)
    let mut gathers = vec![(AllGatherMatmulAlgo::Auto, m, k, 2)];
    if every_form {
        gathers.push((AllGatherMatmulAlgo::InPlace, m, k, 1));
        gathers.push((AllGatherMatmulAlgo::CopyAhead, m, k, 2));
    }
    if every_form {
        // Three calls: both halves of the snapshot workspace, then the first again.
        gathers.push((AllGatherMatmulAlgo::Snapshot, m, k, 3));
    }
    if every_form && world <= 4 {
        gathers.push((AllGatherMatmulAlgo::CopyAhead, 2 * m, k + 64, 1));
        // A larger A: the workspace grows (after a barrier).
        gathers.push((AllGatherMatmulAlgo::Snapshot, 2 * m, k + 64, 2));
    }
    for (algo, m, k, calls) in gathers {
        let a_rows: Vec<Vec<f32>> = (0..world).map(|r| matrix(10 + r as u64, m * k)).collect();
        let b_mine = matrix(100 + me as u64, k * n);
        let a = iris.symmetric_from_slice(&to_bf16(&a_rows[me]))?;
        let b = if transposed {
            iris.from_slice(&to_bf16(&transpose(&b_mine, k, n)))?
        } else {
            iris.from_slice(&to_bf16(&b_mine))?
        };
        let want = host_gemm(&a_rows.concat(), &b_mine, world * m, n, k);
        for call in 0..calls {
            let c = iris.symmetric_full(world * m * n, f32::NAN)?;
            ccl::all_gather_matmul_with(ccl, &a, layout_of(&b, transposed), &c, k, algo)?;
            ccl.synchronize()?;
            if c.to_vec()? != want {
                problems.push(format!(
                    "all_gather_matmul {algo:?} {}x{n}x{k} with {layout} (rank {me}, call {call}): C differs from the host's",
                    world * m
                ));
            }
        }
    }

    // matmul_reduce_scatter / matmul_all_reduce: A is M x k on every rank (its share of
    // the inner dimension), B k x n.
    let rows = m * world;
    let a_of = |r: usize| matrix(20 + r as u64, rows * k);
    let b_of = |r: usize| matrix(200 + r as u64, k * n);
    // The sum of every rank's partial product, computed once per world and shape (by the
    // first rank to get here) and shared.
    type Totals = Vec<((usize, usize, usize, usize), Arc<Vec<f32>>)>;
    static TOTALS: Mutex<Totals> = Mutex::new(Vec::new());
    let total = {
        let mut totals = TOTALS.lock().unwrap_or_else(|p| p.into_inner());
        match totals.iter().find(|(key, _)| *key == (world, m, n, k)) {
            Some((_, t)) => Arc::clone(t),
            None => {
                let mut t = vec![0.0f32; rows * n];
                for r in 0..world {
                    for (t, p) in t.iter_mut().zip(host_gemm(&a_of(r), &b_of(r), rows, n, k)) {
                        *t += p;
                    }
                }
                let t = Arc::new(t);
                totals.push(((world, m, n, k), Arc::clone(&t)));
                t
            }
        }
    };
    let a = iris.from_slice(&to_bf16(&a_of(me)))?;
    let b = upload_b(&b_of(me))?;
    // The same as symmetric allocations, which `Pull` reads in the peers' memory (Bᵀ).
    let a_shared = iris.symmetric_from_slice(&to_bf16(&a_of(me)))?;
    let b_shared = iris.symmetric_from_slice(&b.to_vec()?)?;
    let staging = iris.symmetric_zeros::<f32>(rows * n)?;
    // Every form twice, one after another on the same staging (each form's calls must
    // leave it as the next form expects).
    // (form, whether A and B are the symmetric copies: with Bᵀ, `Auto` then pulls where
    // the ranks share a device, as on the CPU backend and one GPU).
    let mut forms = vec![(MatmulReduceAlgo::Auto, false)];
    if every_form {
        forms.extend([
            (MatmulReduceAlgo::IntoOwners, false),
            (MatmulReduceAlgo::AfterGemm, false),
        ]);
    }
    if transposed {
        forms.extend([
            (MatmulReduceAlgo::Pull, true),
            (MatmulReduceAlgo::Auto, true),
        ]);
    }
    for call in 0..2 {
        for &(algo, pull) in &forms {
            let part = iris.symmetric_full(m * n, f32::NAN)?;
            let whole = iris.symmetric_full(rows * n, f32::NAN)?;
            let b = || {
                if pull {
                    ccl::MatrixB::transposed(&b_shared)
                } else {
                    layout_of(&b, transposed)
                }
            };
            if pull {
                ccl::matmul_reduce_scatter_with(ccl, &a_shared, b(), &staging, &part, k, algo)?;
            } else {
                ccl::matmul_reduce_scatter_with(ccl, &a, b(), &staging, &part, k, algo)?;
            }
            ccl.synchronize()?;
            if part.to_vec()? != total[me * m * n..(me + 1) * m * n] {
                problems.push(format!(
                    "matmul_reduce_scatter {algo:?} with {layout}, symmetric A and B {pull} (rank {me}, call {call}): rows differ from the host's"
                ));
            }
            if pull {
                ccl::matmul_all_reduce_with(ccl, &a_shared, b(), &staging, &whole, k, algo)?;
            } else {
                ccl::matmul_all_reduce_with(ccl, &a, b(), &staging, &whole, k, algo)?;
            }
            ccl.synchronize()?;
            if whole.to_vec()? != *total {
                problems.push(format!(
                    "matmul_all_reduce {algo:?} with {layout}, symmetric A and B {pull} (rank {me}, call {call}): C differs from the host's"
                ));
            }
        }
    }
    Ok(problems)
}

#[test]
fn fused_matmuls_match_the_host_exactly() {
    for_every_world("fused matmuls", 8 << 20, matmuls_of);
}

/// On a GPU the fused GEMMs run a rank's own rows first, between the halves of a split
/// barrier, only where the own rows of the ranks on the device fill it at least once
/// (the shapes above are smaller, so there they run the one-launch form): 4 ranks with
/// 1024 rows each and `n` = 1024 (B, 64 tiles a step) or 2048 (Bᵀ, 64 tiles) take the
/// split form on a device of up to 256 multiprocessors. The CPU backend runs the split
/// form at every shape, so `fused_matmuls_match_the_host_exactly` covers it there.
#[test]
fn fused_matmuls_with_the_own_rows_first_match_the_host_on_a_gpu() {
    let gpus: Vec<_> = common::backends()
        .into_iter()
        .filter(|b| *b != iris::BackendKind::Cpu)
        .collect();
    if gpus.is_empty() {
        eprintln!(
            "skipped: no GPU backend here (the CPU backend runs the split form at every \
             shape: fused_matmuls_match_the_host_exactly)"
        );
        return;
    }
    for backend in gpus {
        let problems = World::threads(4)
            .backend(backend)
            .heap_bytes(256 << 20)
            .run(|iris| {
                let ccl = Ccl::new(iris)?;
                let mut p = matmuls_in(iris, &ccl, false, (1024, 1024, 64), false)?;
                p.extend(matmuls_in(iris, &ccl, true, (1024, 2048, 64), false)?);
                ccl.synchronize()?;
                Ok(p)
            })
            .unwrap_or_else(|e| panic!("{backend}: {e}"));
        let problems: Vec<String> = problems.into_iter().flatten().collect();
        assert!(problems.is_empty(), "{backend}: {}", problems.join("\n"));
    }
}

/// With a sync stream (`World::sync_stream`) a rank queues the split barrier there, beside
/// its own rows: the same exact results at 2 and 4 ranks on every backend (on a GPU at
/// the shapes where the split form runs, as above; the CPU backend takes it at every
/// shape and runs the sync stream as a second stream thread).
#[test]
fn fused_matmuls_with_a_sync_stream_match_the_host() {
    for backend in common::backends() {
        let gpu = backend != iris::BackendKind::Cpu;
        for world in [2usize, 4] {
            let problems = World::threads(world)
                .backend(backend)
                .heap_bytes(if gpu { 256 << 20 } else { 8 << 20 })
                .sync_stream(true)
                .run(|iris| {
                    let mut p = Vec::new();
                    if !iris.has_sync_stream() {
                        p.push("the rank has no sync stream".to_string());
                    }
                    let ccl = Ccl::new(iris)?;
                    let (m, n_b, n_t) = if gpu {
                        (1024, 1024, 2048)
                    } else {
                        (128, 128, 256)
                    };
                    p.extend(matmuls_in(iris, &ccl, false, (m, n_b, 64), false)?);
                    p.extend(matmuls_in(iris, &ccl, true, (m, n_t, 64), false)?);
                    ccl.synchronize()?;
                    Ok(p)
                })
                .unwrap_or_else(|e| panic!("{backend} at {world} ranks: {e}"));
            let problems: Vec<String> = problems.into_iter().flatten().collect();
            assert!(
                problems.is_empty(),
                "{backend} at {world} ranks: {}",
                problems.join("\n")
            );
        }
    }
}

#[path = "common/spin.rs"]
mod spin;

#[iris::kernels(uses(crate::spin::rounds))]
mod late {
    use iris::prelude::*;

    /// After thread 0's `spins` rounds of arithmetic, `dst[i] = src[i]` for `i < n`
    /// (one block).
    #[kernel]
    pub fn slow_copy(dst: *mut bf16, src: *const bf16, n: u32, spins: u32) {
        let t = thread_idx_x();
        // Never 0: the test keeps the loop.
        if t == 0 && spin(spins, spins) == 0 {
            unsafe { *dst = *src };
        }
        sync_threads();
        let mut i = t;
        while i < n {
            unsafe { *dst.add(i as usize) = *src.add(i as usize) };
            i += block_dim_x();
        }
    }
}

/// A fused GEMM reads a peer's rows only after the peer's work queued before the call:
/// every rank writes its A with a kernel queued just before the all-gather GEMM, the
/// last rank's slowly (no host barrier between), and every C must match the host. On
/// one stream and with a sync stream (`World::sync_stream`), at 2 and 4 ranks; on a GPU
/// at a shape where the own rows go first (4 ranks), else the one-launch form.
#[test]
fn a_fused_gemm_waits_for_a_peer_still_writing_its_rows() {
    const SPINS: u32 = 20_000_000;
    for backend in common::backends() {
        let gpu = backend != iris::BackendKind::Cpu;
        let (m, n, k) = if gpu {
            (1024, 2048, 64)
        } else {
            (128, 256, 64)
        };
        for world in [2usize, 4] {
            for sync in [false, true] {
                let results = World::threads(world)
                    .backend(backend)
                    .heap_bytes(if gpu { 256 << 20 } else { 8 << 20 })
                    .sync_stream(sync)
                    .run(|iris| {
                        let me = iris.rank();
                        let ccl = Ccl::new(iris)?;
                        let rows = |r: usize| -> Vec<f32> {
                            (0..m * k).map(|i| quarter(30 + r as u64, i)).collect()
                        };
                        let b_host: Vec<f32> = (0..k * n).map(|i| quarter(300, i)).collect();
                        let to_bf16 = |v: &[f32]| -> Vec<bf16> {
                            v.iter().map(|&x| bf16::from_f32(x)).collect()
                        };
                        let a = iris.symmetric_zeros::<bf16>(m * k)?;
                        let c = iris.symmetric_full(world * m * n, f32::NAN)?;
                        let src = iris.from_slice(&to_bf16(&rows(me)))?;
                        let b = iris.from_slice(&to_bf16(&transpose(&b_host, k, n)))?;
                        iris.barrier()?;
                        let spins = if me == world - 1 { SPINS } else { 0 };
                        late::slow_copy::launch(
                            iris,
                            (1, 256),
                            &a.local_ptr(),
                            &src,
                            (m * k) as u32,
                            spins,
                        )?;
                        ccl::all_gather_matmul(&ccl, &a, layout_of(&b, true), &c, k)?;
                        ccl.synchronize()?;
                        let all: Vec<f32> = (0..world).flat_map(rows).collect();
                        Ok(c.to_vec()? == host_gemm(&all, &b_host, world * m, n, k))
                    })
                    .unwrap_or_else(|e| panic!("{backend} at {world} ranks: {e}"));
                let wrong: Vec<usize> = (0..world).filter(|&r| !results[r]).collect();
                assert!(
                    wrong.is_empty(),
                    "{backend} at {world} ranks, sync stream {sync}: C differs from the host's on ranks {wrong:?}"
                );
            }
        }
    }
}

/// A rank may rewrite its A as soon as a snapshot all-gather GEMM is done on its own
/// stream, though a peer still reads its rows: the last rank starts late (a slow kernel
/// queued before the call) and has a B eight times as wide (each step eight times the
/// tiles), so rank `W - 2` (whose rows the last rank reads last) finishes long before
/// the last rank gets to its rows, and then overwrites its A with zeros, no barrier
/// between. Every C must match the host's product of the A from before. With `InPlace`
/// (a barrier ends the call) the same program is right too; read in place without that
/// barrier, the last rank reads the zeros. At 2 and 4 ranks.
#[test]
fn a_rank_may_rewrite_its_a_once_its_snapshot_gemm_is_done() {
    const SPINS: u32 = 20_000_000;
    const WIDER: usize = 8;
    for backend in common::backends() {
        let gpu = backend != iris::BackendKind::Cpu;
        let (m, n, k) = if gpu { (1024, 512, 64) } else { (128, 256, 64) };
        for world in [2usize, 4] {
            for algo in [AllGatherMatmulAlgo::Snapshot, AllGatherMatmulAlgo::InPlace] {
                let results = World::threads(world)
                    .backend(backend)
                    .heap_bytes(if gpu { 256 << 20 } else { 8 << 20 })
                    .run(|iris| {
                        let me = iris.rank();
                        let (late, rewriter) = (world - 1, world - 2);
                        let ccl = Ccl::new(iris)?;
                        // Symmetric allocations are the same size on every rank: both
                        // Cs on each, the late rank's the wide one.
                        let narrow = iris.symmetric_full(world * m * n, f32::NAN)?;
                        let wide = iris.symmetric_full(world * m * WIDER * n, f32::NAN)?;
                        let (c, n) = if me == late {
                            (&wide, WIDER * n)
                        } else {
                            (&narrow, n)
                        };
                        let rows = |r: usize| -> Vec<f32> {
                            (0..m * k).map(|i| quarter(40 + r as u64, i)).collect()
                        };
                        let b_host: Vec<f32> = (0..k * n).map(|i| quarter(400, i)).collect();
                        let to_bf16 = |v: &[f32]| -> Vec<bf16> {
                            v.iter().map(|&x| bf16::from_f32(x)).collect()
                        };
                        let a = iris.symmetric_from_slice(&to_bf16(&rows(me)))?;
                        let zeros = iris.zeros::<bf16>(m * k)?;
                        let b = iris.from_slice(&to_bf16(&transpose(&b_host, k, n)))?;
                        let scratch = iris.zeros::<bf16>(1)?;
                        iris.barrier()?;
                        if me == late {
                            late::slow_copy::launch(iris, (1, 256), &scratch, &zeros, 1, SPINS)?;
                        }
                        ccl::all_gather_matmul_with(&ccl, &a, layout_of(&b, true), c, k, algo)?;
                        if me == rewriter {
                            late::slow_copy::launch(
                                iris,
                                (1, 256),
                                &a.local_ptr(),
                                &zeros,
                                (m * k) as u32,
                                0,
                            )?;
                        }
                        ccl.synchronize()?;
                        let all: Vec<f32> = (0..world).flat_map(rows).collect();
                        Ok(c.to_vec()? == host_gemm(&all, &b_host, world * m, n, k))
                    })
                    .unwrap_or_else(|e| panic!("{backend} at {world} ranks, {algo:?}: {e}"));
                let wrong: Vec<usize> = (0..world).filter(|&r| !results[r]).collect();
                assert!(
                    wrong.is_empty(),
                    "{backend} at {world} ranks, {algo:?}: C differs from the host's on ranks {wrong:?}"
                );
            }
        }
    }
}

#[test]
fn fused_matmul_shapes_are_checked_before_anything_runs() {
    World::threads(2)
        .heap_bytes(4 << 20)
        .run(|iris| {
            let ccl = Ccl::new(iris)?;
            let a = iris.symmetric_zeros::<bf16>(100 * 64)?;
            let b = iris.zeros::<bf16>(64 * 128)?;
            let c = iris.symmetric_zeros::<f32>(200 * 128)?;
            match ccl::all_gather_matmul(&ccl, &a, &b, &c, 64) {
                Err(Error::InvalidConfig(m)) => assert!(m.contains("whole tiles"), "{m}"),
                other => panic!("100 rows: {other:?}"),
            }
            let a = iris.symmetric_zeros::<bf16>(128 * 64)?;
            assert!(matches!(
                ccl::all_gather_matmul(&ccl, &a, &b, &c, 64),
                Err(Error::LengthMismatch { .. })
            ));
            match ccl::all_gather_matmul(&ccl, &a, &b, &c, 60) {
                Err(Error::InvalidConfig(m)) => assert!(m.contains("whole rows of k"), "{m}"),
                other => panic!("k = 60: {other:?}"),
            }
            let a = iris.zeros::<bf16>(384 * 64)?;
            let staging = iris.symmetric_zeros::<f32>(384 * 128)?;
            let part = iris.symmetric_zeros::<f32>(192 * 128)?;
            match ccl::matmul_reduce_scatter(&ccl, &a, &b, &staging, &part, 64) {
                Err(Error::InvalidConfig(m)) => assert!(m.contains("whole tiles"), "{m}"),
                other => panic!("192 rows a rank: {other:?}"),
            }
            // Bᵀ: n a multiple of 256.
            let a = iris.symmetric_zeros::<bf16>(128 * 64)?;
            let c = iris.symmetric_zeros::<f32>(256 * 128)?;
            match ccl::all_gather_matmul(&ccl, &a, ccl::MatrixB::transposed(&b), &c, 64) {
                Err(Error::InvalidConfig(m)) => assert!(m.contains("n of 256"), "{m}"),
                other => panic!("Bᵀ with n = 128: {other:?}"),
            }
            // matmul_all_reduce's c is M x n on every rank.
            let a = iris.zeros::<bf16>(256 * 64)?;
            let staging = iris.symmetric_zeros::<f32>(256 * 128)?;
            let c = iris.symmetric_zeros::<f32>(128 * 128)?;
            assert!(matches!(
                ccl::matmul_all_reduce(&ccl, &a, &b, &staging, &c, 64),
                Err(Error::LengthMismatch { .. })
            ));
            // Pull reads A and Bᵀ in the peers' memory: both symmetric, B transposed.
            let pull = MatmulReduceAlgo::Pull;
            let bt = iris.symmetric_zeros::<bf16>(256 * 64)?;
            let a_shared = iris.symmetric_zeros::<bf16>(256 * 64)?;
            let staging = iris.symmetric_zeros::<f32>(256 * 256)?;
            let part = iris.symmetric_zeros::<f32>(128 * 256)?;
            let local_bt = iris.zeros::<bf16>(256 * 64)?;
            let refused = |result: iris::Result<()>, which: &str| match result {
                Err(Error::InvalidConfig(m)) => assert!(m.contains("SymmetricBuffers"), "{m}"),
                other => panic!("Pull with {which}: {other:?}"),
            };
            macro_rules! pulled {
                ($a:expr, $b:expr) => {
                    ccl::matmul_reduce_scatter_with(&ccl, $a, $b, &staging, &part, 64, pull)
                };
            }
            refused(pulled!(&a, ccl::MatrixB::transposed(&bt)), "A local");
            refused(
                pulled!(&a_shared, ccl::MatrixB::transposed(&local_bt)),
                "Bᵀ local",
            );
            refused(
                pulled!(&a_shared, ccl::MatrixB::k_by_n(&bt)),
                "B not transposed",
            );
            ccl.synchronize()
        })
        .unwrap();
}

/// `matmul_reduce_scatter_with` (or `matmul_all_reduce_with` when `everywhere`).
#[allow(clippy::too_many_arguments)]
fn reduce_with(
    ccl: &Ccl<'_>,
    a: &iris::Buffer<'_, bf16>,
    b: ccl::MatrixB<'_, bf16>,
    staging: &iris::SymmetricBuffer<'_, f32>,
    c: &iris::SymmetricBuffer<'_, f32>,
    k: usize,
    algo: MatmulReduceAlgo,
    everywhere: bool,
) -> iris::Result<()> {
    if everywhere {
        ccl::matmul_all_reduce_with(ccl, a, b, staging, c, k, algo)
    } else {
        ccl::matmul_reduce_scatter_with(ccl, a, b, staging, c, k, algo)
    }
}

/// A fused GEMM whose wait gives up on a rank that never came writes nothing into that
/// rank's memory (the rank may only be late, and using its buffers for something else):
/// rank 1 skips the call; rank 0's call fails naming it, rank 1's `staging` and `c` keep
/// what they held, and rank 0's `c` too (its own rows of the product, computed before the
/// wait, stay in its own `staging`). Every form of both reductions with B and with Bᵀ
/// (each GEMM kernel checks), each on a fresh communicator (one that gave up stays
/// broken).
#[test]
fn a_fused_gemm_that_gives_up_on_a_rank_writes_nothing_of_it() {
    for backend in common::backends() {
        let problems = World::threads(2)
            .backend(backend)
            .heap_bytes(16 << 20)
            .timeout(std::time::Duration::from_secs(60))
            .run(|iris| {
                let (part, n, k) = (128, 256, 64);
                let rows = 2 * part;
                let a = iris.full(rows * k, bf16::from_f32(0.5))?;
                let b = iris.full(k * n, bf16::from_f32(0.25))?;
                let mut problems = Vec::new();
                let mut forms = Vec::new();
                for algo in [MatmulReduceAlgo::IntoOwners, MatmulReduceAlgo::AfterGemm] {
                    for everywhere in [false, true] {
                        for transposed in [false, true] {
                            forms.push((algo, everywhere, transposed));
                        }
                    }
                }
                for (algo, everywhere, transposed) in forms {
                    let layout = if transposed { "Bᵀ" } else { "B" };
                    let what = if everywhere {
                        format!("all_reduce, {layout}")
                    } else {
                        format!("reduce_scatter, {layout}")
                    };
                    let c_len = if everywhere { rows * n } else { part * n };
                    let ccl = Ccl::new(iris)?.with_autotune(false);
                    // Every rank once (its kernels loaded), then fresh buffers.
                    let staging = iris.symmetric_zeros::<f32>(rows * n)?;
                    let c = iris.symmetric_zeros::<f32>(c_len)?;
                    let b_of = || layout_of(&b, transposed);
                    reduce_with(&ccl, &a, b_of(), &staging, &c, k, algo, everywhere)?;
                    ccl.synchronize()?;
                    let staging = iris.symmetric_full(rows * n, 7.0f32)?;
                    let c = iris.symmetric_full(c_len, f32::NAN)?;
                    iris.barrier()?;
                    if iris.rank() == 0 {
                        let ccl = ccl.with_wait_limit(std::time::Duration::from_millis(200));
                        reduce_with(&ccl, &a, b_of(), &staging, &c, k, algo, everywhere)?;
                        match ccl.synchronize() {
                            Err(e) if e.to_string().contains("rank 1 did not arrive") => {}
                            other => problems.push(format!(
                                "{algo:?} {what}: rank 0 should give up on rank 1: {other:?}"
                            )),
                        }
                        if c.to_vec()?.iter().any(|x| !x.is_nan()) {
                            problems.push(format!("{algo:?} {what}: rank 0's c was written"));
                        }
                    }
                    iris.barrier()?;
                    if iris.rank() == 1 {
                        if staging.to_vec()?.iter().any(|&x| x != 7.0) {
                            problems.push(format!("{algo:?} {what}: rank 1's staging was written"));
                        }
                        if c.to_vec()?.iter().any(|x| !x.is_nan()) {
                            problems.push(format!("{algo:?} {what}: rank 1's c was written"));
                        }
                    }
                }
                Ok(problems)
            })
            .unwrap_or_else(|e| panic!("{backend}: {e}"));
        let problems: Vec<String> = problems.into_iter().flatten().collect();
        assert!(problems.is_empty(), "{backend}: {}", problems.join("\n"));
    }
}

/// The kernel that puts B in the layout of a device's fused GEMM kernel (`transpose_32`:
/// on Hopper a B given `k x n` goes to `warpgroup_256` as Bᵀ, on other GPUs a Bᵀ to
/// `staged_128` as `k x n`) against the host, both ways, bf16 and f16, on every backend.
/// The fused calls through it are the GPU runs above with B at `n` = 1024 (on an H100:
/// `fused_matmuls_with_the_own_rows_first_match_the_host_on_a_gpu`, the sync-stream
/// test); the CPU backend runs the kernel of the layout given.
#[test]
fn the_transpose_into_the_kernels_layout_matches_the_host() {
    use iris::ccl::gemm_kernels::transpose_kernels::transpose_32;
    use iris::LaunchConfig;
    for backend in common::backends() {
        World::threads(1)
            .backend(backend)
            .heap_bytes(1 << 20)
            .run(|iris| {
                for (rows, cols) in [(64usize, 128usize), (256, 96), (32, 32)] {
                    let host: Vec<f32> = (0..rows * cols).map(|i| quarter(7, i)).collect();
                    let want: Vec<f32> = (0..rows * cols)
                        .map(|i| host[(i % rows) * cols + i / rows])
                        .collect();
                    let config = LaunchConfig::linear(((rows / 32) * (cols / 32)) as u32, 256);
                    // Each element type's instance, to the host's transpose.
                    macro_rules! check {
                        ($t:ty) => {{
                            let values: Vec<$t> = host.iter().map(|&x| <$t>::from_f32(x)).collect();
                            let (b, t) =
                                (iris.from_slice(&values)?, iris.zeros::<$t>(rows * cols)?);
                            let (r, c) = (rows as u32, cols as u32);
                            transpose_32::launch::<$t>(
                                iris,
                                config,
                                &b.device_ptr(),
                                &t.device_ptr(),
                                r,
                                c,
                            )?;
                            let got: Vec<f32> = t.to_vec()?.iter().map(|x| x.to_f32()).collect();
                            let name = stringify!($t);
                            assert_eq!(got, want, "{backend}: {name} {rows} x {cols}");
                        }};
                    }
                    check!(bf16);
                    check!(f16);
                }
                Ok(())
            })
            .unwrap_or_else(|e| panic!("{backend}: {e}"));
    }
}
