//! `iris::ccl::Moe`: tokens dispatched to the ranks of the experts a routing table on the
//! device picks, and combined back weighted, at 1, 2, 4 and 8 ranks on the CPU backend and
//! every GPU backend present. Random routing, one hot expert, and experts nobody picks;
//! the receive layout, its counts and the combined tokens compared exactly with a host
//! reference (the values are small integers and the weights powers of two, so every sum
//! is exact in `f32` and each result rounds once, as the kernels do).

mod common;

use std::fmt::Debug;

use common::for_every_world;
use iris::ccl::{Ccl, FloatElement, Moe, MoeShape};
use iris::prelude::{bf16, f16};
use iris::{Error, Iris, World};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// What the test needs of a token element type.
trait Elem: FloatElement + Debug + PartialEq {
    const NAME: &'static str;
    fn of(x: f32) -> Self;
    fn value(self) -> f32;
}

impl Elem for f32 {
    const NAME: &'static str = "f32";
    fn of(x: f32) -> Self {
        x
    }
    fn value(self) -> f32 {
        self
    }
}

impl Elem for f16 {
    const NAME: &'static str = "f16";
    fn of(x: f32) -> Self {
        f16::from_f32(x)
    }
    fn value(self) -> f32 {
        self.to_f32()
    }
}

impl Elem for bf16 {
    const NAME: &'static str = "bf16";
    fn of(x: f32) -> Self {
        bf16::from_f32(x)
    }
    fn value(self) -> f32 {
        self.to_f32()
    }
}

/// How the routing tables pick experts.
#[derive(Clone, Copy, Debug)]
enum Routing {
    /// `top_k` distinct experts at random, a slot left empty (`-1`) now and then.
    Random,
    /// Slot 0 of every token is expert 0; the others at random.
    HotExpert,
    /// Only even experts are ever picked.
    EvenExpertsOnly,
}

/// Rank `rank`'s routing table: `tokens * top_k` expert ids.
fn routing(rank: usize, shape: MoeShape, how: Routing) -> Vec<i64> {
    let mut rng = StdRng::seed_from_u64(1000 + rank as u64 * 31 + how as u64);
    let mut ids = Vec::with_capacity(shape.tokens * shape.top_k);
    let pool = match how {
        Routing::EvenExpertsOnly => shape.experts / 2,
        _ => shape.experts,
    };
    for _ in 0..shape.tokens {
        let mut picked: Vec<i64> = Vec::new();
        for k in 0..shape.top_k {
            let id = loop {
                let e = match how {
                    Routing::HotExpert if k == 0 => 0,
                    Routing::EvenExpertsOnly => rng.random_range(0..shape.experts / 2) as i64 * 2,
                    _ => rng.random_range(0..shape.experts) as i64,
                };
                if !picked.contains(&e) || picked.len() >= pool {
                    break e;
                }
            };
            picked.push(id);
            let empty = matches!(how, Routing::Random) && rng.random_range(0..10) == 0;
            ids.push(if empty { -1 } else { id });
        }
    }
    ids
}

/// Token element `h` of rank `rank`'s token `t`: a small integer, exact in every type.
fn token_value(rank: usize, t: usize, h: usize) -> f32 {
    ((rank * 7 + t * 3 + h * 5) % 17) as f32 - 8.0
}

/// What an expert does to a row: multiplies it by its expert id plus one (exact).
fn expert_scale(expert: usize) -> f32 {
    (expert % 16 + 1) as f32
}

/// The weights of token `t`'s slots: powers of two.
fn weight(t: usize, k: usize) -> f32 {
    [0.5, 0.25, 0.125, 1.0][(t + k) % 4]
}

/// Dispatches, checks the layout and counts against the host, runs the "experts" on the
/// host, combines and checks the tokens. Returns the problems found on this rank.
fn round_trip<T: Elem>(
    iris: &Iris,
    ccl: &Ccl<'_>,
    hidden: usize,
    top_k: usize,
    how: Routing,
) -> iris::Result<Vec<String>> {
    let world = iris.world_size();
    let me = iris.rank();
    let shape = MoeShape {
        tokens: 70,
        hidden,
        top_k,
        experts: 4 * world,
        capacity: 70 * top_k * world,
    };
    let per_rank = shape.experts / world;
    let what = format!(
        "{} hidden {hidden} top-{top_k} {how:?} (rank {me})",
        T::NAME
    );
    let moe = Moe::new(ccl, shape)?;
    let tables: Vec<Vec<i64>> = (0..world).map(|r| routing(r, shape, how)).collect();
    let x: Vec<T> = (0..shape.tokens * hidden)
        .map(|i| T::of(token_value(me, i / hidden, i % hidden)))
        .collect();
    let x = iris.from_slice(&x)?;
    let idx = iris.from_slice(&tables[me])?;
    let recv = iris.symmetric_full::<T>(shape.capacity * hidden, T::of(-99.0))?;
    moe.dispatch(ccl, &x, &idx, &recv)?;
    ccl.synchronize()?;
    moe.check()?;

    // The host's layout: local expert by local expert, source by source, pairs in order.
    let mut want_rows: Vec<(usize, usize, usize)> = Vec::new(); // (expert, source, token)
    let mut want_counts = Vec::new();
    for j in 0..per_rank {
        let expert = me * per_rank + j;
        for (s, table) in tables.iter().enumerate() {
            let before = want_rows.len();
            for (p, &e) in table.iter().enumerate() {
                if e == expert as i64 {
                    want_rows.push((expert, s, p / shape.top_k));
                }
            }
            want_counts.push((want_rows.len() - before) as u64);
        }
    }
    let mut problems = Vec::new();
    let counts = moe.recv_counts().to_vec()?;
    if counts[..per_rank * world] != want_counts[..] {
        problems.push(format!(
            "{what}: recv counts {:?}, want {want_counts:?}",
            &counts[..per_rank * world]
        ));
    }
    let got = recv.to_vec()?;
    for (row, &(expert, s, t)) in want_rows.iter().enumerate() {
        let want: Vec<T> = (0..hidden).map(|h| T::of(token_value(s, t, h))).collect();
        let have = &got[row * hidden..(row + 1) * hidden];
        if have != want {
            problems.push(format!(
                "{what}: row {row} (expert {expert}, rank {s}'s token {t}) is {have:?}, want {want:?}"
            ));
            break;
        }
    }

    // The experts, on the host: each row times its expert's scale, back into `recv`.
    let mut scaled = got.clone();
    for (row, &(expert, _, _)) in want_rows.iter().enumerate() {
        for h in 0..hidden {
            let v = got[row * hidden + h].value() * expert_scale(expert);
            scaled[row * hidden + h] = T::of(v);
        }
    }
    recv.copy_from_slice(&scaled)?;
    let weights: Vec<f32> = (0..shape.tokens * shape.top_k)
        .map(|p| weight(p / shape.top_k, p % shape.top_k))
        .collect();
    let weights = iris.from_slice(&weights)?;
    let out = iris.full::<T>(shape.tokens * hidden, T::of(-99.0))?;
    iris.host_barrier()?; // every rank's experts are done before anyone combines
    moe.combine(ccl, &recv, &idx, &weights, &out)?;
    ccl.synchronize()?;
    let out = out.to_vec()?;
    'tokens: for t in 0..shape.tokens {
        for h in 0..hidden {
            let mut acc = 0.0f32;
            for k in 0..shape.top_k {
                let e = tables[me][t * shape.top_k + k];
                if e >= 0 {
                    acc += weight(t, k) * token_value(me, t, h) * expert_scale(e as usize);
                }
            }
            if out[t * hidden + h] != T::of(acc) {
                problems.push(format!(
                    "{what}: combined token {t} element {h} is {:?}, want {acc}",
                    out[t * hidden + h]
                ));
                break 'tokens;
            }
        }
    }
    Ok(problems)
}

/// Too small a capacity and an expert past the last: both moved what they could, and
/// `check` says what was left out.
fn overflows(iris: &Iris, ccl: &Ccl<'_>) -> iris::Result<Vec<String>> {
    let world = iris.world_size();
    let mut problems = Vec::new();
    let shape = MoeShape {
        tokens: 8,
        hidden: 4,
        top_k: 2,
        experts: world,
        capacity: 3,
    };
    let moe = Moe::new(ccl, shape)?;
    let x = iris.full::<f32>(32, 1.0)?;
    let recv = iris.symmetric_zeros::<f32>(12)?;
    // Every pair to expert 0: 16 rows from each rank into 3.
    let idx = iris.full::<i64>(16, 0)?;
    moe.dispatch(ccl, &x, &idx, &recv)?;
    ccl.synchronize()?;
    match moe.check() {
        Err(Error::InvalidConfig(m)) if m.contains("capacity of 3 rows") => {}
        other => problems.push(format!("16 rows into 3: check() gave {other:?}")),
    }
    let idx = iris.full::<i64>(16, world as i64)?;
    moe.dispatch(ccl, &x, &idx, &recv)?;
    ccl.synchronize()?;
    match moe.check() {
        Err(Error::InvalidConfig(m)) if m.contains("past the last") => {}
        other => problems.push(format!("expert {world} of {world}: check() gave {other:?}")),
    }
    // A good dispatch after them clears the report.
    let idx = iris.full::<i64>(16, -1)?;
    moe.dispatch(ccl, &x, &idx, &recv)?;
    ccl.synchronize()?;
    if let Err(e) = moe.check() {
        problems.push(format!("no expert at all: check() gave {e}"));
    }
    Ok(problems)
}

#[test]
fn dispatch_and_combine_match_the_host_for_every_routing_and_type() {
    for_every_world("moe", 16 << 20, |iris, ccl| {
        let mut out = Vec::new();
        for how in [
            Routing::Random,
            Routing::HotExpert,
            Routing::EvenExpertsOnly,
        ] {
            out.extend(round_trip::<bf16>(iris, ccl, 24, 3, how)?);
        }
        // Rows that are not whole 16-byte vectors, and the other types.
        out.extend(round_trip::<f32>(iris, ccl, 10, 3, Routing::Random)?);
        out.extend(round_trip::<f16>(iris, ccl, 24, 3, Routing::HotExpert)?);
        out.extend(round_trip::<f16>(iris, ccl, 13, 3, Routing::Random)?);
        // Combine reads at most 32 slots a token into shared memory first: 32 do, 33
        // take the path that reads them in every vector's loop (experts repeat).
        out.extend(round_trip::<bf16>(iris, ccl, 24, 32, Routing::Random)?);
        out.extend(round_trip::<bf16>(iris, ccl, 24, 33, Routing::HotExpert)?);
        Ok(out)
    });
}

#[test]
fn rows_past_the_capacity_and_unknown_experts_are_reported() {
    for_every_world("moe overflow", 16 << 20, overflows);
}

#[test]
fn shapes_are_checked_before_anything_runs() {
    World::threads(2)
        .heap_bytes(1 << 20)
        .run(|iris| {
            let ccl = Ccl::new(iris)?;
            let shape = MoeShape {
                tokens: 4,
                hidden: 8,
                top_k: 2,
                experts: 3,
                capacity: 16,
            };
            match Moe::new(&ccl, shape) {
                Err(Error::InvalidConfig(m)) => assert!(m.contains("spread evenly"), "{m}"),
                other => panic!("3 experts over 2 ranks: {:?}", other.err()),
            }
            let shape = MoeShape {
                experts: 4,
                ..shape
            };
            let moe = Moe::new(&ccl, shape)?;
            let x = iris.zeros::<f32>(31)?;
            let idx = iris.zeros::<i64>(8)?;
            let recv = iris.symmetric_zeros::<f32>(128)?;
            match moe.dispatch(&ccl, &x, &idx, &recv) {
                Err(Error::LengthMismatch {
                    expected: 32,
                    got: 31,
                    ..
                }) => {}
                other => panic!("31 elements of x: {other:?}"),
            }
            let x = iris.zeros::<f32>(32)?;
            let short = iris.zeros::<i64>(7)?;
            assert!(matches!(
                moe.dispatch(&ccl, &x, &short, &recv),
                Err(Error::LengthMismatch {
                    expected: 8,
                    got: 7,
                    ..
                })
            ));
            let weights = iris.zeros::<f32>(8)?;
            let out = iris.zeros::<f32>(32)?;
            let small = iris.symmetric_zeros::<f32>(64)?;
            assert!(matches!(
                moe.combine(&ccl, &small, &idx, &weights, &out),
                Err(Error::LengthMismatch {
                    expected: 128,
                    got: 64,
                    ..
                })
            ));
            ccl.synchronize()
        })
        .unwrap();
}
