//! The fused collectives of `iris::ccl` at 1, 2, 4 and 8 ranks on the CPU backend and
//! every GPU backend present, against a host reference: `all_reduce_rmsnorm` (one-shot
//! and two-shot, rows of whole 16-byte vectors and not).

mod common;

use std::fmt::Debug;

use common::{backends, world_sizes};
use iris::ccl::{self, AllReduceAlgo, Ccl, FloatElement};
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

/// Runs `check` on every rank of every world size and backend; fails with every problem.
fn for_every_world(
    name: &str,
    check: impl Fn(&Iris, &Ccl<'_>) -> iris::Result<Vec<String>> + Sync,
) {
    let mut problems = Vec::new();
    for backend in backends() {
        for world in world_sizes() {
            let start = std::time::Instant::now();
            let reports = World::threads(world)
                .backend(backend)
                .heap_bytes(8 << 20)
                .run(|iris| {
                    let ccl = Ccl::new(iris)?;
                    let report = check(iris, &ccl)?;
                    ccl.synchronize()?;
                    Ok(report)
                })
                .unwrap_or_else(|e| panic!("{name} on {backend} at {world} ranks: {e}"));
            for (rank, report) in reports.into_iter().enumerate() {
                for p in report {
                    problems.push(format!(
                        "{name} on {backend} at {world} ranks, rank {rank}: {p}"
                    ));
                }
            }
            eprintln!(
                "{name}: {backend} at {world} ranks in {:.2?}",
                start.elapsed()
            );
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn all_reduce_rmsnorm_matches_the_host_one_shot_and_two_shot() {
    for_every_world("all_reduce_rmsnorm", |iris, ccl| {
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
