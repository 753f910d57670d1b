//! Symmetric memory across ranks as threads: the all-gather through peer tables, heap
//! reuse, and the collective checks.

mod common;

use common::*;
use iris_host::driver::BackendKind;
use iris_host::symmetric::HEAP_ALIGN;
use iris_host::{AsDevicePtr, Error, Iris, LaunchConfig, Result, SymmetricBuffer, World};
use rand::{Rng, SeedableRng};

fn world(ranks: usize) -> World {
    World::threads(ranks)
        .backend(BackendKind::Cpu)
        .heap_bytes(4 << 20)
}

/// What the kernel macro generates for `fn all_gather(input: *const f32, out: Symmetric<f32>, n: u64, me: u32, world: u32)`.
fn all_gather(
    iris: &Iris,
    config: impl Into<LaunchConfig>,
    input: &impl AsDevicePtr<f32>,
    out: &SymmetricBuffer<'_, f32>,
    n: u64,
    me: u32,
    world: u32,
) -> Result<()> {
    let mut args = iris.args(unit(), ALL_GATHER);
    args.pointer(input)?;
    args.symmetric(out)?;
    args.value(n);
    args.value(me);
    args.value(world);
    iris.launch(config.into(), args)
}

const POISON: f32 = -1.0e30;

fn run_all_gather(ranks: usize, n: usize) {
    let seed: u64 = rand::rng().random();
    let inputs: Vec<Vec<f32>> = (0..ranks)
        .map(|r| {
            let mut rng = rand::rngs::StdRng::seed_from_u64(seed ^ r as u64);
            (0..n).map(|_| rng.random_range(-1000.0..1000.0)).collect()
        })
        .collect();
    let expected: Vec<f32> = inputs.concat();
    let outputs = world(ranks)
        .run(|iris| {
            let me = iris.rank();
            let input = iris.from_slice(&inputs[me])?;
            let out = iris.symmetric_full::<f32>(ranks * n, POISON)?;
            assert_eq!(out.map().world_size(), ranks);
            iris.barrier()?;
            all_gather(
                iris,
                LaunchConfig::for_elements(n as u64, 64),
                &input,
                &out,
                n as u64,
                me as u32,
                ranks as u32,
            )?;
            iris.barrier()?;
            out.to_vec()
        })
        .unwrap_or_else(|e| panic!("all-gather at {ranks} ranks (seed {seed}): {e}"));
    for (rank, got) in outputs.iter().enumerate() {
        assert!(
            got == &expected,
            "rank {rank} of {ranks} (seed {seed}) has a wrong all-gather result"
        );
    }
}

#[test]
fn all_gather_at_1_2_4_8_ranks() {
    for ranks in [1, 2, 4, 8] {
        run_all_gather(ranks, 1000);
        run_all_gather(ranks, 1);
    }
}

#[test]
fn tables_hold_every_ranks_base_at_the_same_offset() {
    let maps = world(4)
        .run(|iris| {
            let heap_offsets =
                |buf: &SymmetricBuffer<'_, u64>| -> Vec<u64> { buf.map().peer_bases().to_vec() };
            let a = iris.symmetric::<u64>(100)?;
            let b = iris.symmetric::<u64>(3000)?;
            assert_eq!(a.map().peer_base(iris.rank()), Some(a.map().base()));
            assert_eq!(
                b.map().base() - a.map().base(),
                1024,
                "100 u64 round up to 1024 bytes"
            );
            assert_eq!(a.map().base() % HEAP_ALIGN as u64, 0);
            Ok((
                heap_offsets(&a),
                heap_offsets(&b),
                a.map().reachable().is_all(),
            ))
        })
        .unwrap();
    for (a, b, all) in &maps {
        assert_eq!(a, &maps[0].0, "every rank sees the same table");
        assert_eq!(b, &maps[0].1);
        assert!(all);
        for r in 0..4 {
            assert_eq!(b[r] - a[r], 1024, "same offset in every heap");
        }
    }
}

#[test]
fn freed_ranges_are_reused_and_nothing_leaks() {
    world(2)
        .run(|iris| {
            let first = iris.symmetric::<u8>(1000)?;
            let base = first.map().base();
            drop(first);
            let again = iris.symmetric::<u8>(1000)?;
            assert_eq!(again.map().base(), base, "the freed range is reused");
            again.free()?;
            // the same random sequence on every rank
            let mut rng = rand::rngs::StdRng::seed_from_u64(42);
            let mut live = Vec::new();
            for _ in 0..2000 {
                if live.len() < 16 && (live.is_empty() || rng.random_bool(0.5)) {
                    let len = rng.random_range(1..20_000);
                    live.push(iris.symmetric::<u32>(len)?);
                } else {
                    let i = rng.random_range(0..live.len());
                    live.swap_remove(i).free()?;
                }
            }
            drop(live);
            let heap = iris.heap_bytes();
            let whole = iris.symmetric::<u8>(heap)?;
            assert_eq!(
                whole.map().bytes(),
                heap,
                "the heap coalesced back into one range"
            );
            Ok(())
        })
        .unwrap();
}

#[test]
fn ranks_asking_for_different_sizes_get_an_error_not_a_hang() {
    let err = world(3)
        .run(|iris| {
            let len = if iris.rank() == 1 { 200 } else { 100 };
            let r = iris.symmetric::<f32>(len);
            let err = r.expect_err("a mismatched allocation must fail");
            assert!(matches!(err, Error::SymmetryMismatch { .. }), "{err}");
            let msg = err.to_string();
            assert!(msg.contains("rank 1 asked for 800 bytes of f32"), "{msg}");
            // the failed allocation left the heaps as they were: the next ones agree
            let ok = iris.symmetric::<f32>(10)?;
            let all = iris.all_gather(ok.map().base())?;
            assert_eq!(ok.map().peer_bases(), &all[..]);
            Err::<(), _>(err)
        })
        .unwrap_err();
    assert!(matches!(&err, Error::RankFailed { rank: 0, .. }), "{err}");
}

#[test]
fn an_allocation_larger_than_the_heap_is_an_error() {
    world(2)
        .run(|iris| {
            let err = iris.symmetric::<u8>(iris.heap_bytes() + 1).unwrap_err();
            match &err {
                Error::HeapExhausted {
                    requested, heap, ..
                } => {
                    assert_eq!(*heap, iris.heap_bytes());
                    assert!(*requested > *heap);
                }
                other => panic!("{other}"),
            }
            assert!(err.to_string().contains("exhausted"), "{err}");
            // the failed request left the heap whole
            let _full = iris.symmetric::<u8>(iris.heap_bytes())?;
            assert!(matches!(
                iris.symmetric::<u8>(1),
                Err(Error::HeapExhausted { .. })
            ));
            Ok(())
        })
        .unwrap();
}

#[test]
fn double_free_is_an_error() {
    world(1)
        .run(|iris| {
            let buf = iris.symmetric::<u32>(64)?;
            let map = buf.map().clone();
            std::mem::forget(buf);
            iris.symmetric_provider().free(&map)?;
            let err = iris.symmetric_provider().free(&map).unwrap_err();
            assert!(matches!(err, Error::InvalidFree { .. }), "{err}");
            assert!(err.to_string().contains("double free"), "{err}");
            Ok(())
        })
        .unwrap();
}

#[test]
fn symmetric_from_slice_and_local_pointer() {
    world(2)
        .run(|iris| {
            let data: Vec<u64> = (0..77).map(|i| i * 10 + iris.rank() as u64).collect();
            let buf = iris.symmetric_from_slice(&data)?;
            assert_eq!(buf.to_vec()?, data);
            assert_eq!(buf.local_ptr().device_addr(iris.core())?, buf.map().base());
            assert_eq!(buf.local_ptr().addr(), buf.map().base());
            let peer = 1 - iris.rank();
            assert_eq!(
                buf.map().translate(buf.map().base() + 8, peer),
                Some(buf.peer_addr(peer).unwrap() + 8)
            );
            Ok(())
        })
        .unwrap();
}
