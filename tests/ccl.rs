//! The collectives of `iris::ccl` at 1, 2, 4 and 8 ranks, for every element type, on the
//! CPU backend and on every GPU backend present: random inputs, poisoned outputs, results
//! compared with a host reference computed in the same rank order (integers exactly,
//! floats within their precision), and every rank's result identical bit for bit.

mod common;

use std::fmt::Debug;
use std::sync::{Mutex, MutexGuard};

use common::{backends, world_sizes};
use iris::ccl::{self, AllGatherAlgo, AllReduceAlgo, Ccl, CclElement, ReduceOp};
use iris::prelude::{bf16, f16};
use iris::{BackendKind, Error, Iris, SymmetricBuffer, World};
use rand::Rng;

/// What the tests need of an element type besides the collectives.
trait Elem: CclElement + Debug + PartialEq {
    const NAME: &'static str;
    /// Relative tolerance of a reduction (0 for integers).
    const TOLERANCE: f64;
    fn random(rng: &mut impl Rng) -> Self;
    /// A value the collectives never produce from random inputs.
    fn poison() -> Self;
    /// The reduction of `values` in order, as the kernels compute it.
    fn reduce(values: &[Self], op: ReduceOp) -> Self;
    fn to_f64(self) -> f64;
    fn bits(self) -> u64;
}

macro_rules! float_elem {
    ($t:ident, $acc:ident, $tol:expr, |$r:ident| $random:expr, |$x:ident| $to:expr, |$a:ident| $from:expr) => {
        impl Elem for $t {
            const NAME: &'static str = stringify!($t);
            const TOLERANCE: f64 = $tol;
            fn random($r: &mut impl Rng) -> Self {
                $random
            }
            fn poison() -> Self {
                <$t>::NAN
            }
            fn reduce(values: &[Self], op: ReduceOp) -> Self {
                let to = |$x: $t| -> $acc { $to };
                let mut acc = to(values[0]);
                for &v in &values[1..] {
                    let v = to(v);
                    acc = match op {
                        ReduceOp::Sum => acc + v,
                        ReduceOp::Min => acc.min(v),
                        ReduceOp::Max => acc.max(v),
                    };
                }
                let $a = acc;
                $from
            }
            fn to_f64(self) -> f64 {
                let $x = self;
                ($to) as f64
            }
            fn bits(self) -> u64 {
                self.to_bits() as u64
            }
        }
    };
}

float_elem!(
    f32,
    f32,
    1e-6,
    |r| r.random_range(-1.0f32..1.0),
    |x| x,
    |a| a
);
float_elem!(
    f64,
    f64,
    1e-12,
    |r| r.random_range(-1.0f64..1.0),
    |x| x,
    |a| a
);
float_elem!(
    f16,
    f32,
    1e-3,
    |r| f16::from_f32(r.random_range(-1.0f32..1.0)),
    |x| x.to_f32(),
    |a| f16::from_f32(a)
);
float_elem!(
    bf16,
    f32,
    8e-3,
    |r| bf16::from_f32(r.random_range(-1.0f32..1.0)),
    |x| x.to_f32(),
    |a| bf16::from_f32(a)
);

macro_rules! int_elem {
    ($($t:ident),*) => {$(
        impl Elem for $t {
            const NAME: &'static str = stringify!($t);
            const TOLERANCE: f64 = 0.0;
            fn random(r: &mut impl Rng) -> Self {
                r.random()
            }
            fn poison() -> Self {
                0x5A5A_5A5A as $t
            }
            fn reduce(values: &[Self], op: ReduceOp) -> Self {
                values[1..].iter().fold(values[0], |acc, &v| match op {
                    ReduceOp::Sum => acc.wrapping_add(v),
                    ReduceOp::Min => acc.min(v),
                    ReduceOp::Max => acc.max(v),
                })
            }
            fn to_f64(self) -> f64 {
                self as f64
            }
            fn bits(self) -> u64 {
                self as u64
            }
        }
    )*};
}

int_elem!(i32, u32, i64, u64);

fn random_vec<T: Elem>(n: usize) -> Vec<T> {
    let mut rng = rand::rng();
    (0..n).map(|_| T::random(&mut rng)).collect()
}

/// Where `got` differs from `want` beyond the type's tolerance (scaled by `scale[i]`, the
/// sum of the magnitudes that went into element `i`), as a message; `None` if it does not.
fn compare<T: Elem>(what: &str, got: &[T], want: &[T], scale: Option<&[f64]>) -> Option<String> {
    if got.len() != want.len() {
        return Some(format!(
            "{what}: {} elements, want {}",
            got.len(),
            want.len()
        ));
    }
    let bad: Vec<usize> = (0..got.len())
        .filter(|&i| {
            if T::TOLERANCE == 0.0 || scale.is_none() {
                return got[i].bits() != want[i].bits();
            }
            let (g, w) = (got[i].to_f64(), want[i].to_f64());
            let s = scale
                .map_or(1.0, |s| s[i])
                .max(w.abs())
                .max(f64::MIN_POSITIVE);
            // NaN (an element nobody wrote) is never within tolerance.
            let within = (g - w).abs() <= T::TOLERANCE * s;
            !within
        })
        .collect();
    bad.first().map(|&i| {
        format!(
            "{what}: {} of {} elements wrong, e.g. [{i}] = {:?}, want {:?}",
            bad.len(),
            got.len(),
            got[i],
            want[i]
        )
    })
}

/// Every rank holds the same `mine` (bit for bit), or a message.
fn identical_everywhere<T: Elem>(
    iris: &Iris,
    what: &str,
    mine: Vec<T>,
) -> iris::Result<Option<String>> {
    let everyone = iris.all_gather(mine)?;
    for (r, theirs) in everyone.iter().enumerate() {
        if theirs
            .iter()
            .zip(&everyone[0])
            .any(|(a, b)| a.bits() != b.bits())
        {
            return Ok(Some(format!(
                "{what}: rank {r}'s result differs from rank 0's"
            )));
        }
    }
    Ok(None)
}

/// A symmetric buffer of `len` poisoned elements.
fn poisoned<'a, T: Elem>(iris: &'a Iris, len: usize) -> iris::Result<SymmetricBuffer<'a, T>> {
    iris.symmetric_full(len, T::poison())
}

/// Sum of magnitudes per element (the scale of a sum's rounding error).
fn magnitudes<T: Elem>(
    inputs: &[Vec<T>],
    pick: impl Fn(&Vec<T>, usize) -> T,
    len: usize,
) -> Vec<f64> {
    (0..len)
        .map(|i| inputs.iter().map(|v| pick(v, i).to_f64().abs()).sum())
        .collect()
}

const OPS: [ReduceOp; 3] = [ReduceOp::Sum, ReduceOp::Min, ReduceOp::Max];

/// One world at a time: the barriers spin, and two worlds of spinning ranks on few cores
/// only slow each other down.
static ONE_WORLD_AT_A_TIME: Mutex<()> = Mutex::new(());

fn one_world_at_a_time() -> MutexGuard<'static, ()> {
    ONE_WORLD_AT_A_TIME
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Runs `check` for every element type on every rank of every world size and backend, and
/// fails with every problem any rank reported.
fn for_every_world(
    name: &str,
    check: impl Fn(&Iris, &Ccl<'_>) -> iris::Result<Vec<String>> + Sync,
) {
    let _one = one_world_at_a_time();
    let mut problems = Vec::new();
    for backend in backends() {
        for world in world_sizes() {
            let start = std::time::Instant::now();
            let reports = World::threads(world)
                .backend(backend)
                .heap_bytes(4 << 20)
                .run(|iris| {
                    let ccl = Ccl::new(iris)?;
                    let report = check(iris, &ccl)?;
                    ccl.synchronize()?;
                    Ok((report, ccl.longest_wait()?))
                })
                .unwrap_or_else(|e| panic!("{name} on {backend} at {world} ranks: {e}"));
            let mut longest = std::time::Duration::ZERO;
            for (rank, (report, wait)) in reports.into_iter().enumerate() {
                longest = longest.max(wait);
                for p in report {
                    problems.push(format!(
                        "{name} on {backend} at {world} ranks, rank {rank}: {p}"
                    ));
                }
            }
            // `scripts/ccl-stress.sh` reads this line.
            eprintln!(
                "{name}: {backend} at {world} ranks in {:.2?}, longest barrier wait {longest:.2?}",
                start.elapsed()
            );
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

macro_rules! for_each_type {
    ($f:ident, $iris:expr, $ccl:expr, $out:expr) => {
        $out.extend($f::<f32>($iris, $ccl)?);
        $out.extend($f::<f64>($iris, $ccl)?);
        $out.extend($f::<f16>($iris, $ccl)?);
        $out.extend($f::<bf16>($iris, $ccl)?);
        $out.extend($f::<i32>($iris, $ccl)?);
        $out.extend($f::<u32>($iris, $ccl)?);
        $out.extend($f::<i64>($iris, $ccl)?);
        $out.extend($f::<u64>($iris, $ccl)?);
    };
}

fn all_reduce_of<T: Elem>(iris: &Iris, ccl: &Ccl<'_>) -> iris::Result<Vec<String>> {
    // Not a multiple of any world size or vector: two-shot's last shares are short, and
    // both the 16-byte and the element-wise paths run.
    let n = 1237;
    let mut problems = Vec::new();
    let input = iris.symmetric_from_slice(&random_vec::<T>(n))?;
    let inputs = iris.all_gather(input.to_vec()?)?;
    let scale = magnitudes(&inputs, |v, i| v[i], n);
    for algo in [AllReduceAlgo::OneShot, AllReduceAlgo::TwoShot] {
        for op in OPS {
            let output = poisoned::<T>(iris, n)?;
            ccl::all_reduce(ccl, &input, &output, op, algo)?;
            ccl.synchronize()?;
            let got = output.to_vec()?;
            let want: Vec<T> = (0..n)
                .map(|i| T::reduce(&inputs.iter().map(|v| v[i]).collect::<Vec<_>>(), op))
                .collect();
            let what = format!("all_reduce {} {algo:?} {op:?}", T::NAME);
            let scale = (op == ReduceOp::Sum).then_some(&scale[..]);
            problems.extend(compare(&what, &got, &want, scale));
            problems.extend(identical_everywhere(iris, &what, got)?);
        }
    }
    Ok(problems)
}

fn all_gather_of<T: Elem>(iris: &Iris, ccl: &Ccl<'_>) -> iris::Result<Vec<String>> {
    let world = iris.world_size();
    let mut problems = Vec::new();
    // Whole 16-byte vectors for every element size, and not.
    for n in [336, 333] {
        let input = iris.symmetric_from_slice(&random_vec::<T>(n))?;
        let want: Vec<T> = iris.all_gather(input.to_vec()?)?.concat();
        for algo in [AllGatherAlgo::Push, AllGatherAlgo::Pull] {
            let output = poisoned::<T>(iris, n * world)?;
            ccl::all_gather(ccl, &input, &output, algo)?;
            ccl.synchronize()?;
            problems.extend(compare(
                &format!("all_gather {} {algo:?} n={n}", T::NAME),
                &output.to_vec()?,
                &want,
                None,
            ));
        }
    }
    Ok(problems)
}

fn reduce_scatter_of<T: Elem>(iris: &Iris, ccl: &Ccl<'_>) -> iris::Result<Vec<String>> {
    let (world, me) = (iris.world_size(), iris.rank());
    let mut problems = Vec::new();
    // Blocks of whole 16-byte vectors, and not.
    for c in [128, 129] {
        let input = iris.symmetric_from_slice(&random_vec::<T>(c * world))?;
        let inputs = iris.all_gather(input.to_vec()?)?;
        let scale = magnitudes(&inputs, |v, j| v[me * c + j], c);
        for op in OPS {
            let output = poisoned::<T>(iris, c)?;
            ccl::reduce_scatter(ccl, &input, &output, op)?;
            ccl.synchronize()?;
            let want: Vec<T> = (0..c)
                .map(|j| {
                    T::reduce(
                        &inputs.iter().map(|v| v[me * c + j]).collect::<Vec<_>>(),
                        op,
                    )
                })
                .collect();
            let scale = (op == ReduceOp::Sum).then_some(&scale[..]);
            problems.extend(compare(
                &format!("reduce_scatter {} {op:?} c={c}", T::NAME),
                &output.to_vec()?,
                &want,
                scale,
            ));
        }
    }
    Ok(problems)
}

fn all_to_all_of<T: Elem>(iris: &Iris, ccl: &Ccl<'_>) -> iris::Result<Vec<String>> {
    let (world, me) = (iris.world_size(), iris.rank());
    let mut problems = Vec::new();
    // Blocks of whole 16-byte vectors, and not.
    for c in [80, 77] {
        let input = iris.symmetric_from_slice(&random_vec::<T>(c * world))?;
        let inputs = iris.all_gather(input.to_vec()?)?;
        let output = poisoned::<T>(iris, c * world)?;
        ccl::all_to_all(ccl, &input, &output)?;
        ccl.synchronize()?;
        let want: Vec<T> = (0..world)
            .flat_map(|r| inputs[r][me * c..(me + 1) * c].to_vec())
            .collect();
        problems.extend(compare(
            &format!("all_to_all {} c={c}", T::NAME),
            &output.to_vec()?,
            &want,
            None,
        ));
    }
    Ok(problems)
}

fn broadcast_of<T: Elem>(iris: &Iris, ccl: &Ccl<'_>) -> iris::Result<Vec<String>> {
    let n = 555;
    let world = iris.world_size();
    let mut problems = Vec::new();
    let input = iris.symmetric_from_slice(&random_vec::<T>(n))?;
    let inputs = iris.all_gather(input.to_vec()?)?;
    for root in [0, world - 1] {
        let output = poisoned::<T>(iris, n)?;
        ccl::broadcast(ccl, &input, &output, root)?;
        ccl.synchronize()?;
        problems.extend(compare(
            &format!("broadcast {} from {root}", T::NAME),
            &output.to_vec()?,
            &inputs[root],
            None,
        ));
    }
    Ok(problems)
}

fn rooted_of<T: Elem>(iris: &Iris, ccl: &Ccl<'_>) -> iris::Result<Vec<String>> {
    // Not a multiple of any vector: the 16-byte and the element-wise paths both run.
    let n = 333;
    let world = iris.world_size();
    let me = iris.rank();
    let mut problems = Vec::new();
    let input = iris.symmetric_from_slice(&random_vec::<T>(n))?;
    let inputs = iris.all_gather(input.to_vec()?)?;
    let scale = magnitudes(&inputs, |v, i| v[i], n);
    let wide = iris.symmetric_from_slice(&random_vec::<T>(n * world))?;
    let wides = iris.all_gather(wide.to_vec()?)?;
    for root in [0, world - 1] {
        for op in OPS {
            let output = poisoned::<T>(iris, n)?;
            let before = output.to_vec()?;
            ccl::reduce(ccl, &input, &output, op, root)?;
            ccl.synchronize()?;
            let got = output.to_vec()?;
            let what = format!("reduce {} {op:?} to {root}", T::NAME);
            if me == root {
                let want: Vec<T> = (0..n)
                    .map(|i| T::reduce(&inputs.iter().map(|v| v[i]).collect::<Vec<_>>(), op))
                    .collect();
                let scale = (op == ReduceOp::Sum).then_some(&scale[..]);
                problems.extend(compare(&what, &got, &want, scale));
            } else {
                problems.extend(compare(
                    &format!("{what} (not the root: untouched)"),
                    &got,
                    &before,
                    None,
                ));
            }
        }
        let gathered = poisoned::<T>(iris, n * world)?;
        let before = gathered.to_vec()?;
        ccl::gather(ccl, &input, &gathered, root)?;
        ccl.synchronize()?;
        let want: Vec<T> = if me == root {
            inputs.iter().flatten().copied().collect()
        } else {
            before
        };
        problems.extend(compare(
            &format!("gather {} to {root} (rank {me})", T::NAME),
            &gathered.to_vec()?,
            &want,
            None,
        ));
        let part = poisoned::<T>(iris, n)?;
        ccl::scatter(ccl, &wide, &part, root)?;
        ccl.synchronize()?;
        problems.extend(compare(
            &format!("scatter {} from {root} (rank {me})", T::NAME),
            &part.to_vec()?,
            &wides[root][me * n..(me + 1) * n],
            None,
        ));
    }
    Ok(problems)
}

#[test]
fn rooted_reduce_gather_scatter_every_type() {
    for_every_world("reduce+gather+scatter", |iris, ccl| {
        let mut out = Vec::new();
        for_each_type!(rooted_of, iris, ccl, out);
        Ok(out)
    });
}

fn point_to_point_of<T: Elem>(iris: &Iris, ccl: &Ccl<'_>) -> iris::Result<Vec<String>> {
    let world = iris.world_size();
    let me = iris.rank();
    let mut problems = Vec::new();
    if world < 2 {
        return Ok(problems);
    }
    let dst = poisoned::<T>(iris, 700)?;
    // Three rounds of a ring (even ranks send first, odd ranks receive first, so that no
    // stream's send waits behind its own receive), each a different length.
    let (next, prev) = ((me + 1) % world, (me + world - 1) % world);
    for (round, n) in [1usize, 699, 64].into_iter().enumerate() {
        let mine = random_vec::<T>(n);
        let src = iris.symmetric_from_slice(&mine)?;
        let all = iris.all_gather(mine)?;
        if me % 2 == 0 {
            ccl::send(ccl, &src, &dst, next)?;
            ccl::recv(ccl, &dst, prev)?;
        } else {
            ccl::recv(ccl, &dst, prev)?;
            ccl::send(ccl, &src, &dst, next)?;
        }
        iris.synchronize()?;
        problems.extend(compare(
            &format!("{} ring round {round}: rank {me} from {prev}", T::NAME),
            &dst.to_vec()?[..n],
            &all[prev],
            None,
        ));
        // The destination is reused only after every rank has read it.
        iris.host_barrier()?;
    }
    Ok(problems)
}

#[test]
fn send_and_recv_around_a_ring_every_type() {
    for_every_world("send+recv", |iris, ccl| {
        let mut out = Vec::new();
        for_each_type!(point_to_point_of, iris, ccl, out);
        Ok(out)
    });
}

/// Two ranks of `backend` whose waits give up after 2 s, for the point-to-point tests of
/// a side that never comes.
fn two_ranks_giving_up_in_2s(backend: iris::BackendKind) -> World {
    World::threads(2)
        .backend(backend)
        .heap_bytes(1 << 20)
        .timeout(std::time::Duration::from_secs(2))
}

/// A `recv` whose `send` never comes gives up at the world's wait limit and is an error
/// at the next synchronization, naming the signal wait; a send to itself is refused.
#[test]
fn a_recv_without_its_send_is_an_error_not_a_hang() {
    let _one = one_world_at_a_time();
    for backend in backends() {
        let start = std::time::Instant::now();
        let results = two_ranks_giving_up_in_2s(backend)
            .run(|iris| {
                let ccl = Ccl::new(iris)?;
                let dst = iris.symmetric_zeros::<u32>(16)?;
                assert!(matches!(
                    ccl::send(&ccl, &dst, &dst, iris.rank()),
                    Err(Error::InvalidConfig(_))
                ));
                if iris.rank() == 0 {
                    ccl::recv(&ccl, &dst, 1)?;
                    return Ok(iris.synchronize().map_err(|e| e.to_string()));
                }
                Ok(Ok(()))
            })
            .unwrap_or_else(|e| panic!("{backend}: {e}"));
        let err = results[0].clone().expect_err("the wait must give up");
        assert!(err.contains("signal"), "{backend}: {err}");
        eprintln!("{backend}: gave up after {:.1?}: {err}", start.elapsed());
    }
}

/// A send whose receiver never gets ready gives up and writes nothing into it (the
/// receiver's `dst` may still be in use: that is what its readiness says): rank 0 sends,
/// rank 1 never receives and finds its `dst` as it was. Rank 1 waits for rank 0's
/// outcome on the host before the world's barrier (whose time limit is the world's,
/// only a little above the device wait's).
#[test]
fn a_send_without_its_recv_is_an_error_and_writes_nothing() {
    use std::sync::atomic::{AtomicBool, Ordering};
    static SENT: AtomicBool = AtomicBool::new(false);
    let _one = one_world_at_a_time();
    for backend in backends() {
        SENT.store(false, Ordering::SeqCst);
        let results = two_ranks_giving_up_in_2s(backend)
            .run(|iris| {
                let ccl = Ccl::new(iris)?;
                let src = iris.symmetric_full(4096, 1u32)?;
                let dst = iris.symmetric_full(4096, 7u32)?;
                let sent = if iris.rank() == 0 {
                    ccl::send(&ccl, &src, &dst, 1)?;
                    let outcome = iris.synchronize().map_err(|e| e.to_string());
                    SENT.store(true, Ordering::SeqCst);
                    Some(outcome)
                } else {
                    let start = std::time::Instant::now();
                    while !SENT.load(Ordering::SeqCst) && start.elapsed().as_secs() < 60 {
                        std::thread::sleep(std::time::Duration::from_millis(10));
                    }
                    None
                };
                iris.barrier()?;
                let untouched = dst.to_vec()?.iter().all(|&x| x == 7);
                Ok((sent, untouched))
            })
            .unwrap_or_else(|e| panic!("{backend}: {e}"));
        let err = results[0].0.clone().expect("rank 0 sent");
        let err = err.expect_err("the send's wait must give up");
        assert!(err.contains("signal"), "{backend}: {err}");
        assert!(
            results[1].1,
            "{backend}: rank 1's dst was written without its recv"
        );
    }
}

/// Routing decided on the device: how many elements rank `me` sends each rank.
#[iris::kernels]
mod routing {
    use iris::prelude::*;

    /// `counts[p]` = a skewed, sometimes empty, count for each rank `p` (`salt` varies it):
    /// rank 0 sends rank 1 a hot 300, others 0 to 39.
    #[kernel]
    pub fn route(counts: Symmetric<u64>, me: u32, world: u32, salt: u32) {
        let p = thread_idx_x();
        if p < world {
            let c = if me == 0 && p == 1 {
                300
            } else {
                (me * 7 + p * 13 + salt) % 40
            };
            unsafe { *counts.local().add(p as usize) = c as u64 };
        }
    }
}

/// The count `routing::route` gives rank `me` for rank `p`.
fn routed(me: usize, p: usize, salt: usize) -> usize {
    if me == 0 && p == 1 {
        300
    } else {
        (me * 7 + p * 13 + salt) % 40
    }
}

fn all_to_all_v_of<T: Elem>(iris: &Iris, ccl: &Ccl<'_>) -> iris::Result<Vec<String>> {
    let world = iris.world_size();
    let me = iris.rank();
    let mut problems = Vec::new();
    let send_counts = iris.symmetric_zeros::<u64>(world)?;
    let recv_counts = iris.symmetric_full::<u64>(world, u64::MAX)?;
    for salt in [0usize, 5] {
        // Symmetric buffers are the same size everywhere: room for the most any rank
        // sends or receives.
        let capacity = world * 40 + 300;
        let data = random_vec::<T>(capacity);
        let input = iris.symmetric_from_slice(&data)?;
        let inputs = iris.all_gather(data)?;
        let output = poisoned::<T>(iris, capacity)?;
        routing::route::launch(
            iris,
            (1, 64),
            &send_counts,
            me as u32,
            world as u32,
            salt as u32,
        )?;
        let launched = ccl::all_to_all_v(ccl, &input, &send_counts, &output, &recv_counts)?;
        ccl.synchronize()?;
        launched.check()?;
        let mut want = Vec::new();
        let mut want_counts = Vec::new();
        for (s, from) in inputs.iter().enumerate() {
            let start: usize = (0..me).map(|q| routed(s, q, salt)).sum();
            let n = routed(s, me, salt);
            want.extend_from_slice(&from[start..start + n]);
            want_counts.push(n as u64);
        }
        let what = format!("all_to_all_v {} salt {salt} (rank {me})", T::NAME);
        if recv_counts.to_vec()? != want_counts {
            problems.push(format!(
                "{what}: recv counts {:?}, want {want_counts:?}",
                recv_counts.to_vec()?
            ));
        }
        problems.extend(compare(&what, &output.to_vec()?[..want.len()], &want, None));
    }
    // An output too small for what arrives: only what fits is stored, and it is said.
    let input = iris.symmetric_from_slice(&random_vec::<T>(400))?;
    let small = iris.symmetric_zeros::<T>(8)?;
    routing::route::launch(iris, (1, 64), &send_counts, me as u32, world as u32, 0)?;
    let launched = ccl::all_to_all_v(ccl, &input, &send_counts, &small, &recv_counts)?;
    ccl.synchronize()?;
    let sends_past = (0..world).any(|p| {
        let before: usize = (0..me).map(|s| routed(s, p, 0)).sum();
        before + routed(me, p, 0) > 8
    });
    if launched.check().is_ok() == sends_past {
        problems.push(format!(
            "all_to_all_v {} into 8 elements (rank {me}): check() {:?}, but sends past the output: {sends_past}",
            T::NAME,
            launched.check()
        ));
    }
    Ok(problems)
}

#[test]
fn all_to_all_v_with_counts_written_on_the_device_every_type() {
    for_every_world("all_to_all_v", |iris, ccl| {
        let mut out = Vec::new();
        for_each_type!(all_to_all_v_of, iris, ccl, out);
        Ok(out)
    });
}

#[test]
fn all_reduce_one_shot_and_two_shot_every_op_and_type() {
    for_every_world("all_reduce", |iris, ccl| {
        let mut out = Vec::new();
        for_each_type!(all_reduce_of, iris, ccl, out);
        Ok(out)
    });
}

#[test]
fn all_gather_push_and_pull_every_type() {
    for_every_world("all_gather", |iris, ccl| {
        let mut out = Vec::new();
        for_each_type!(all_gather_of, iris, ccl, out);
        Ok(out)
    });
}

#[test]
fn reduce_scatter_every_op_and_type() {
    for_every_world("reduce_scatter", |iris, ccl| {
        let mut out = Vec::new();
        for_each_type!(reduce_scatter_of, iris, ccl, out);
        Ok(out)
    });
}

#[test]
fn all_to_all_and_broadcast_every_type() {
    for_every_world("all_to_all+broadcast", |iris, ccl| {
        let mut out = Vec::new();
        for_each_type!(all_to_all_of, iris, ccl, out);
        for_each_type!(broadcast_of, iris, ccl, out);
        Ok(out)
    });
}

/// Back-to-back collectives with no host synchronization between them: each one's barriers
/// alone order it after the previous one on every rank. The first use of each kernel unit
/// (here: all-reduce, then all-gather, then the barrier) comes while earlier collectives may
/// still be running.
#[test]
fn back_to_back_collectives_need_no_host_synchronization() {
    for_every_world("chained", |iris, ccl| {
        let n = 1000;
        let world = iris.world_size() as u64;
        let me = iris.rank() as u64;
        let a =
            iris.symmetric_from_slice(&(0..n as u64).map(|i| i * world + me).collect::<Vec<_>>())?;
        let b = iris.symmetric_full::<u64>(n, 0)?;
        let gathered = iris.symmetric_full::<u64>(n * world as usize, 0)?;
        // a -> b (sum), b -> a (max), a -> b (sum): every rank holds the same sum after the
        // first step, so the max is that sum and the last sum is world times it. Then every
        // rank gathers its b.
        for round in 0..3 {
            let (src, dst, op) = if round % 2 == 0 {
                (&a, &b, ReduceOp::Sum)
            } else {
                (&b, &a, ReduceOp::Max)
            };
            let algo = if round == 1 {
                AllReduceAlgo::TwoShot
            } else {
                AllReduceAlgo::OneShot
            };
            ccl::all_reduce(ccl, src, dst, op, algo)?;
        }
        ccl::all_gather(ccl, &b, &gathered, AllGatherAlgo::Push)?;
        ccl.barrier()?;
        ccl.synchronize()?;
        let want: Vec<u64> = (0..n as u64)
            .map(|i| (0..world).map(|r| i * world + r).sum::<u64>() * world)
            .collect();
        let mut problems: Vec<String> = compare("chained all_reduce", &b.to_vec()?, &want, None)
            .into_iter()
            .collect();
        let want_gathered: Vec<u64> = (0..world).flat_map(|_| want.iter().copied()).collect();
        problems.extend(compare(
            "chained all_gather",
            &gathered.to_vec()?,
            &want_gathered,
            None,
        ));
        Ok(problems)
    });
}

#[test]
fn shapes_are_checked_before_anything_runs() {
    World::threads(2)
        .backend(BackendKind::Cpu)
        .heap_bytes(1 << 20)
        .run(|iris| {
            let ccl = Ccl::new(iris)?;
            let a = iris.symmetric_zeros::<f32>(10)?;
            let b = iris.symmetric_zeros::<f32>(11)?;
            let c = iris.symmetric_zeros::<f32>(20)?;
            let odd = iris.symmetric_zeros::<f32>(7)?;
            let odd2 = iris.symmetric_zeros::<f32>(7)?;
            let mismatch = |r: iris::Result<()>| matches!(r, Err(Error::LengthMismatch { .. }));
            let invalid = |r: iris::Result<()>| matches!(r, Err(Error::InvalidConfig(_)));
            assert!(mismatch(ccl::all_reduce(
                &ccl,
                &a,
                &b,
                ReduceOp::Sum,
                AllReduceAlgo::OneShot
            )));
            assert!(mismatch(ccl::all_gather(&ccl, &a, &b, AllGatherAlgo::Push)));
            assert!(mismatch(ccl::reduce_scatter(&ccl, &a, &b, ReduceOp::Sum)));
            assert!(mismatch(ccl::all_to_all(&ccl, &a, &c)));
            assert!(mismatch(ccl::broadcast(&ccl, &a, &b, 0)));
            assert!(invalid(ccl::all_to_all(&ccl, &odd, &odd2)));
            assert!(invalid(ccl::broadcast(&ccl, &a, &a, 0)));
            assert!(invalid(ccl::broadcast(&ccl, &a, &b, 2)));
            assert!(mismatch(ccl::reduce(&ccl, &a, &b, ReduceOp::Max, 0)));
            assert!(invalid(ccl::reduce(&ccl, &a, &a, ReduceOp::Max, 0)));
            assert!(invalid(ccl::reduce(&ccl, &odd, &odd2, ReduceOp::Max, 2)));
            assert!(mismatch(ccl::gather(&ccl, &a, &b, 0)));
            assert!(invalid(ccl::gather(&ccl, &a, &c, 5)));
            assert!(mismatch(ccl::scatter(&ccl, &c, &b, 1)));
            assert!(invalid(ccl::scatter(&ccl, &c, &a, 2)));
            assert!(mismatch(ccl::send(&ccl, &b, &a, 1 - iris.rank())));
            assert!(invalid(ccl::send(&ccl, &a, &b, 2)));
            assert!(invalid(ccl::recv(&ccl, &a, iris.rank())));
            assert!(invalid(ccl::all_reduce(
                &ccl,
                &a,
                &a,
                ReduceOp::Sum,
                AllReduceAlgo::TwoShot
            )));
            // Right shapes work, and nothing was launched before.
            ccl::all_gather(&ccl, &a, &c, AllGatherAlgo::Pull)?;
            ccl.synchronize()
        })
        .unwrap();
}

/// A rank that never arrives: the other rank's barrier gives up after its wait limit,
/// skips the data movement, and the host reports the missing rank.
#[test]
fn a_peer_that_never_arrives_is_reported_by_rank() {
    let _one = one_world_at_a_time();
    for backend in backends() {
        let results = World::threads(2)
            .backend(backend)
            .heap_bytes(1 << 20)
            .run(|iris| {
                let ccl = Ccl::new(iris)?;
                let input = iris.symmetric_full::<f32>(64, 1.0)?;
                let output = iris.symmetric_full::<f32>(64, f32::NAN)?;
                // Together once (the first use of a unit loads it, collectively), then rank 1
                // stops taking part.
                let warm_up = iris.symmetric_zeros::<f32>(64)?;
                ccl::all_reduce(
                    &ccl,
                    &input,
                    &warm_up,
                    ReduceOp::Sum,
                    AllReduceAlgo::OneShot,
                )?;
                ccl.synchronize()?;
                // Give up soon (after the warm-up, which must not give up on a slow peer).
                let ccl = ccl.with_wait_limit(std::time::Duration::from_millis(200));
                let outcome = if iris.rank() == 0 {
                    ccl::all_reduce(&ccl, &input, &output, ReduceOp::Sum, AllReduceAlgo::OneShot)?;
                    let first = ccl.synchronize();
                    // Broken for good: the next collective gives up at once.
                    ccl::all_reduce(&ccl, &input, &output, ReduceOp::Sum, AllReduceAlgo::TwoShot)?;
                    let again = ccl.synchronize();
                    let untouched = output.to_vec()?.iter().all(|x| x.is_nan());
                    Some((first.map_err(|e| e.to_string()), again.is_err(), untouched))
                } else {
                    None
                };
                iris.barrier()?;
                Ok(outcome)
            })
            .unwrap_or_else(|e| panic!("{backend}: {e}"));
        let (first, again, untouched) = results[0].clone().expect("rank 0 reports");
        let message = first.expect_err("rank 0's barrier should give up on rank 1");
        assert!(
            message.contains("rank 1 did not arrive"),
            "{backend}: {message}"
        );
        assert!(again, "{backend}: a broken communicator must keep failing");
        assert!(
            untouched,
            "{backend}: the output must stay untouched when the barrier gave up"
        );
    }
}

/// The barrier a rank's `PeerFailed` names: `(epoch E, slot S)`.
fn named_barrier(message: &str) -> &str {
    let start = message
        .find("(epoch ")
        .unwrap_or_else(|| panic!("no epoch in: {message}"));
    let end = start + message[start..].find(')').expect("closing parenthesis");
    &message[start..=end]
}

/// A rank told to stop by the rank that gave up reports the same barrier (epoch and slot)
/// and the same missing rank. Rank 2 never arrives; rank 0 gives up soon; rank 1 would wait
/// an hour, so it stops only because rank 0 told it to.
#[test]
fn a_rank_told_to_stop_names_the_barrier_that_gave_up() {
    let _one = one_world_at_a_time();
    for backend in backends() {
        let results = World::threads(3)
            .backend(backend)
            .heap_bytes(1 << 20)
            .timeout(std::time::Duration::from_secs(60))
            .run(|iris| {
                let ccl = Ccl::new(iris)?;
                // Together once (the first use of a unit loads it, collectively).
                ccl.barrier()?;
                ccl.synchronize()?;
                for _ in 0..3 {
                    ccl.barrier()?; // a later epoch than the first
                }
                ccl.synchronize()?;
                iris.barrier()?;
                let outcome = match iris.rank() {
                    2 => None,
                    rank => {
                        let limit = if rank == 0 { 0.3 } else { 3600.0 };
                        let ccl = ccl.with_wait_limit(std::time::Duration::from_secs_f64(limit));
                        ccl.barrier()?;
                        Some(ccl.synchronize().map_err(|e| e.to_string()))
                    }
                };
                iris.barrier()?;
                Ok(outcome)
            })
            .unwrap_or_else(|e| panic!("{backend}: {e}"));
        let gave_up = results[0].clone().expect("rank 0 reports");
        let gave_up = gave_up.expect_err("rank 0's barrier should give up on rank 2");
        let told = results[1].clone().expect("rank 1 reports");
        let told = told.expect_err("rank 1 should be told to stop");
        for message in [&gave_up, &told] {
            assert!(
                message.contains("rank 2 did not arrive"),
                "{backend}: {message}"
            );
        }
        assert!(
            told.starts_with("rank 1 stopped waiting"),
            "{backend}: {told}"
        );
        assert_eq!(
            named_barrier(&told),
            named_barrier(&gave_up),
            "{backend}: rank 1 names another barrier than rank 0"
        );
        assert_eq!(named_barrier(&gave_up), "(epoch 5, slot 0)", "{backend}");
    }
}

iris::ccl::kernels_with_barrier! {
    /// A user kernel meeting the device barrier every iteration.
    mod ring {
        // What the kernels call; the barrier functions the macro adds need nothing.
        use iris::prelude::*;

        /// `steps` rounds: every thread writes `(step, me, t)` into slot `t` of the next
        /// rank's buffer (double-buffered by step parity), all ranks meet at the barrier, and
        /// every thread checks what the previous rank wrote into its own slot. `errors[t]`
        /// counts wrong values; `errors[block_dim]` is the barrier's status.
        #[kernel]
        pub fn ring_steps(buf: Symmetric<u64>, errors: *mut u64, signals: Symmetric<u64>, steps: u32, me: u32, world: u32, timeout_ns: u64) {
            let status = shared_array::<u32, 1>();
            // The slot's next `steps` epochs, counted on the device.
            let epoch = ccl_epoch(signals, 0, me) + 1;
            let t = thread_idx_x();
            let threads = block_dim_x();
            let next = (me + 1) % world;
            let prev = (me + world - 1) % world;
            let mut wrong = 0u64;
            for step in 0..steps {
                let half = buf.add(((step % 2) * threads) as usize);
                let tag = ((step as u64) << 40) | ((me as u64) << 20) | t as u64;
                store(half.add(t as usize), tag, next);
                sync_threads();
                if t == 0 {
                    unsafe { *status = ccl_barrier(signals, 0, epoch + step as u64, me, world, timeout_ns) };
                }
                sync_threads();
                if unsafe { *status } != 0 {
                    break;
                }
                let want = ((step as u64) << 40) | ((prev as u64) << 20) | t as u64;
                if unsafe { *half.local().add(t as usize) } != want {
                    wrong += 1;
                }
            }
            unsafe { *errors.add(t as usize) = wrong };
            if t == 0 {
                unsafe { *errors.add(threads as usize) = *status as u64 };
                ccl_epoch_done(signals, 0, me, epoch + steps as u64 - 1);
            }
        }
    }
}

/// A kernel of this test crate uses the barrier every iteration (through
/// `kernels_with_barrier!`), its epochs counted on the device, and the collectives go on
/// after it.
#[test]
fn user_kernel_meets_the_barrier_every_iteration() {
    let _one = one_world_at_a_time();
    for backend in backends() {
        for world in world_sizes() {
            let (steps, threads) = (20u32, 8usize);
            let errors = World::threads(world)
                .backend(backend)
                .heap_bytes(1 << 20)
                .run(|iris| {
                    let ccl = Ccl::new(iris)?;
                    let buf = iris.symmetric_zeros::<u64>(2 * threads)?;
                    let errors = iris.full::<u64>(threads + 1, u64::MAX)?;
                    // Loaded where no peer's kernel waits for it, and a shape that keeps
                    // every rank's blocks resident (this kernel uses one block).
                    let config = ccl.launch_config_for(&ring::ring_steps::UNIT, threads as u32)?;
                    assert!(config.grid[0] >= 1 && config.block[0] == threads as u32);
                    let (me, w) = (iris.rank() as u32, world as u32);
                    ring::ring_steps::launch(
                        iris,
                        (1, threads as u32),
                        &buf,
                        &errors,
                        ccl.signals(),
                        steps,
                        me,
                        w,
                        ccl.wait_limit_ns(),
                    )?;
                    // The collectives go on from the epochs after the kernel's.
                    let a = iris.symmetric_full::<u32>(8, 1)?;
                    let b = iris.symmetric_zeros::<u32>(8)?;
                    ccl::all_reduce(&ccl, &a, &b, ReduceOp::Sum, AllReduceAlgo::OneShot)?;
                    ccl.synchronize()?;
                    let mut e = errors.to_vec()?;
                    e.extend(b.to_vec()?.iter().map(|&x| u64::from(x != w)));
                    Ok(e)
                })
                .unwrap_or_else(|e| panic!("{backend} at {world} ranks: {e}"));
            for (rank, e) in errors.iter().enumerate() {
                assert!(
                    e.iter().all(|&x| x == 0),
                    "{backend} at {world} ranks, rank {rank}: errors {e:?}"
                );
            }
        }
    }
}

/// The device barrier alone, many times, with no host round trip between.
#[test]
fn device_barrier_many_times() {
    let _one = one_world_at_a_time();
    for backend in backends() {
        for world in world_sizes() {
            World::threads(world)
                .backend(backend)
                .heap_bytes(1 << 20)
                .run(|iris| {
                    let ccl = Ccl::new(iris)?;
                    for _ in 0..50 {
                        ccl.barrier()?;
                    }
                    ccl.synchronize()
                })
                .unwrap_or_else(|e| panic!("{backend} at {world} ranks: {e}"));
        }
    }
}

/// A rank that comes late but within the wait limit: the others' barrier waits for it and
/// succeeds (the wait is bounded in time, not polls, and backs off so the late rank's
/// thread gets the cores).
#[test]
fn a_late_rank_within_the_limit_is_waited_for() {
    let _one = one_world_at_a_time();
    let delay = std::time::Duration::from_millis(1500);
    for backend in backends() {
        let waits = World::threads(2)
            .backend(backend)
            .heap_bytes(1 << 20)
            .timeout(std::time::Duration::from_secs(20))
            .run(|iris| {
                let ccl = Ccl::new(iris)?;
                ccl.barrier()?;
                ccl.synchronize()?;
                if iris.rank() == 1 {
                    std::thread::sleep(delay);
                }
                ccl.barrier()?;
                ccl.synchronize()?;
                ccl.longest_wait()
            })
            .unwrap_or_else(|e| panic!("{backend}: {e}"));
        eprintln!(
            "{backend}: rank 0 waited {:.2?} for the late rank",
            waits[0]
        );
        assert!(
            waits[0] >= delay.mul_f64(0.9),
            "{backend}: rank 0's longest wait {:?} is shorter than rank 1's delay",
            waits[0]
        );
    }
}

/// A rank that never comes: with a 2 s world timeout the others' barrier gives up after
/// its wait limit (90% of it), before the host's wait would, and names the rank.
#[test]
fn a_rank_that_never_comes_is_named_within_the_timeout() {
    let _one = one_world_at_a_time();
    let timeout = std::time::Duration::from_secs(2);
    for backend in backends() {
        // Not a host barrier of the world: rank 1 must outwait rank 0's whole timeout.
        let done = std::sync::Barrier::new(2);
        let results = World::threads(2)
            .backend(backend)
            .heap_bytes(1 << 20)
            .timeout(timeout)
            .run(|iris| {
                let ccl = Ccl::new(iris)?;
                ccl.barrier()?;
                ccl.synchronize()?;
                iris.host_barrier()?;
                let outcome = if iris.rank() == 0 {
                    let start = std::time::Instant::now();
                    ccl.barrier()?;
                    let outcome = ccl.synchronize().map_err(|e| e.to_string());
                    Some((outcome, start.elapsed()))
                } else {
                    None
                };
                done.wait();
                Ok(outcome)
            })
            .unwrap_or_else(|e| panic!("{backend}: {e}"));
        let (outcome, took) = results[0].clone().expect("rank 0 reports");
        let message = outcome.expect_err("rank 0's barrier should give up on rank 1");
        eprintln!("{backend}: gave up after {took:.2?} (IRIS_TIMEOUT 2 s): {message}");
        assert!(
            message.contains("rank 1 did not arrive"),
            "{backend}: {message}"
        );
        assert!(
            took >= timeout.mul_f64(0.75) && took < timeout + std::time::Duration::from_millis(500),
            "{backend}: gave up after {took:?}, want about {:?}",
            timeout.mul_f64(0.9)
        );
    }
}

/// A user's GEMM then a collective, on every rank, with no barrier between, many times in
/// a row: where the ranks share a GPU, the collective's blocks (spinning at its entry
/// until every rank arrives) must not take the multiprocessors a late rank's GEMM still
/// needs (its blocks each take 192 KiB of shared memory). The collectives queue a
/// one-block barrier first there; without it the `ccl_ops` bench's same sequence hung 1
/// run in 70 at 4 ranks on one H100. Every round's result is checked: `a` holds
/// `rank + 1`, `bᵀ` ones, so each rank's partial product is `k·(rank + 1)` everywhere and
/// the reduce-scatter's sum `k·W(W + 1)/2`, exact in `f32`.
#[test]
fn a_collective_right_after_a_gpu_sized_gemm_completes_every_time() {
    use iris::ccl::gemm_kernels::warpgroup_kernels::warpgroup_256;
    use iris::LaunchConfig;
    let _one = one_world_at_a_time();
    for backend in backends() {
        // The GPU shape of the bench's hang (4096 x 1024 x 1024 a rank: 128 tiles); a
        // tile's worth on the CPU, where the GEMM is emulated.
        let gpu = backend != BackendKind::Cpu;
        let (rows, n, k, rounds) = if gpu {
            (4096, 1024, 1024, 40)
        } else {
            (128, 256, 64, 2)
        };
        for world in world_sizes().into_iter().filter(|&w| w > 1) {
            let sums = World::threads(world)
                .backend(backend)
                .heap_bytes(if gpu { 64 << 20 } else { 4 << 20 })
                .run(|iris| {
                    let ccl = Ccl::new(iris)?;
                    let me = iris.rank();
                    let a = iris.full(rows * k, bf16::from_f32((me + 1) as f32))?;
                    let bt = iris.full(n * k, bf16::from_f32(1.0))?;
                    let partial = iris.symmetric_zeros::<f32>(rows * n)?;
                    let part = iris.symmetric_zeros::<f32>(rows / world * n)?;
                    let mut wrong = Vec::new();
                    for round in 0..rounds {
                        warpgroup_256::launch::<bf16>(
                            iris,
                            LaunchConfig::linear((rows / 128 * (n / 256)) as u32, 256),
                            &a.device_ptr(),
                            &bt.device_ptr(),
                            &partial,
                            n as u32,
                            k as u32,
                            0,
                            me as u32,
                            1,
                            world as u32,
                        )?;
                        ccl::reduce_scatter(&ccl, &partial, &part, ReduceOp::Sum)?;
                        let want = (k * world * (world + 1) / 2) as f32;
                        let got = part.to_vec()?;
                        if let Some(i) = got.iter().position(|&x| x != want) {
                            wrong.push(format!(
                                "round {round}: element {i} is {}, not {want}",
                                got[i]
                            ));
                        }
                    }
                    ccl.synchronize()?;
                    Ok(wrong)
                })
                .unwrap_or_else(|e| {
                    panic!("GEMM then reduce_scatter on {backend} at {world} ranks: {e}")
                });
            for (rank, wrong) in sums.into_iter().enumerate() {
                assert!(
                    wrong.is_empty(),
                    "{backend} at {world} ranks, rank {rank}: {}",
                    wrong.join("; ")
                );
            }
        }
    }
}
