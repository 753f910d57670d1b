//! Kernels built with peer checks, at run time: a remote operation with a peer outside the
//! world is reported by the rank's next `synchronize` as `PeerOutOfRange` naming the peer
//! and the world size, touches no rank's data, and leaves the context usable. Four ranks
//! as threads, on the CPU backend and on every GPU backend present.

mod common;

use common::backends;
use iris::prelude::*;
use iris::{Error, Iris, LaunchConfig, World};

/// Each thread puts its element of the local `src` into `peer`'s copy of `dst`.
#[iris::kernel(peer_checks)]
pub fn put_to(src: *const u32, dst: Symmetric<u32>, peer: u32, n: u64) {
    let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as u64;
    if i < n {
        iris::put(unsafe { src.add(i as usize) }, dst.add(i as usize), peer);
    }
}

/// Each thread stores `value` into `peer`'s copy of `dst`, the peer given as an `i32`.
#[iris::kernel(peer_checks)]
pub fn store_signed(dst: Symmetric<u32>, value: u32, peer: i32, n: u64) {
    let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as u64;
    if i < n {
        iris::store(dst.add(i as usize), value, peer as u32);
    }
}

/// Adds 1 to `peer`'s counter.
#[iris::kernel(peer_checks)]
pub fn add_to(counter: Symmetric<u64>, peer: u32) {
    iris::atomic_add(counter, 1, peer, Ordering::Relaxed, Scope::System);
}

const WORLD: usize = 4;
const N: usize = 300; // not a multiple of the block size

/// What one rank saw.
#[derive(Debug)]
struct Seen {
    /// The errors of the bad launches, in order.
    errors: Vec<iris::Result<()>>,
    /// Whether its destinations still held what it wrote before the bad launches.
    untouched: bool,
    /// Whether the in-range launches afterwards delivered their data.
    delivered: bool,
}

fn rank_main(iris: &Iris) -> iris::Result<Seen> {
    let (me, world) = (iris.rank(), iris.world_size());
    let config = LaunchConfig::for_elements(N as u64, 128);
    let mine = vec![1000 + me as u32; N];
    let dst = iris.symmetric_full::<u32>(N, 7 + me as u32)?;
    let counter = iris.symmetric_full::<u64>(1, 50)?;
    let src = iris.from_slice(&mine)?;
    let mut errors = Vec::new();
    // The world size as a peer, through a put.
    put_to::launch(iris, config, &src, &dst, world as u32, N as u64)?;
    errors.push(iris.synchronize());
    // -1 as an i32, through a store.
    store_signed::launch(iris, config, &dst, 99, -1, N as u64)?;
    errors.push(iris.synchronize());
    // An atomic with a bad peer.
    add_to::launch(iris, LaunchConfig::linear(1, 1), &counter, world as u32 + 3)?;
    errors.push(iris.synchronize());
    // Two bad launches before a synchronize: the first error is the one reported, and a
    // blocking copy reports it as well.
    put_to::launch(iris, config, &src, &dst, world as u32 + 1, N as u64)?;
    store_signed::launch(iris, config, &dst, 99, 1 << 20, N as u64)?;
    errors.push(dst.to_vec().map(drop));
    // Every rank's bad launches are done: nothing reached any copy.
    iris.barrier()?;
    let untouched = dst.to_vec()? == vec![7 + me as u32; N] && counter.to_vec()? == vec![50];
    iris.barrier()?;
    // The word was reset: in-range launches work and report nothing.
    let next = ((me + 1) % world) as u32;
    put_to::launch(iris, config, &src, &dst, next, N as u64)?;
    add_to::launch(iris, LaunchConfig::linear(1, 1), &counter, next)?;
    iris.synchronize()?;
    iris.barrier()?;
    let previous = (me + world - 1) % world;
    let delivered =
        dst.to_vec()? == vec![1000 + previous as u32; N] && counter.to_vec()? == vec![51];
    Ok(Seen {
        errors,
        untouched,
        delivered,
    })
}

/// Checks that `result` is `PeerOutOfRange` of `rank` naming `peer` in a world of
/// `WORLD`, with both numbers in its message.
fn expect_out_of_range(result: &iris::Result<()>, rank: usize, peer: u32, what: &str) {
    match result {
        Err(
            err @ Error::PeerOutOfRange {
                rank: r,
                peer: p,
                world_size: w,
            },
        ) => {
            assert_eq!((*r, *p, *w), (rank, peer, WORLD), "{what}: {err}");
            let text = err.to_string();
            for part in [
                format!("rank {rank}:"),
                format!("peer index {peer}"),
                format!("the world has {WORLD} ranks"),
                format!("valid peers 0..{WORLD}"),
            ] {
                assert!(text.contains(&part), "{what}: `{part}` missing in: {text}");
            }
        }
        other => panic!("{what}: expected PeerOutOfRange, got {other:?}"),
    }
}

#[test]
fn a_peer_outside_the_world_is_reported_and_touches_nothing() {
    for backend in backends() {
        let seen = World::threads(WORLD)
            .backend(backend)
            .heap_bytes(1 << 20)
            .run(rank_main)
            .unwrap_or_else(|e| panic!("{backend}: {e}"));
        for (rank, s) in seen.iter().enumerate() {
            let what = |case: &str| format!("{backend}, rank {rank}, {case}");
            expect_out_of_range(&s.errors[0], rank, WORLD as u32, &what("put"));
            expect_out_of_range(&s.errors[1], rank, u32::MAX, &what("store with -1"));
            expect_out_of_range(&s.errors[2], rank, WORLD as u32 + 3, &what("atomic_add"));
            expect_out_of_range(&s.errors[3], rank, WORLD as u32 + 1, &what("first of two"));
            assert!(s.untouched, "{}: a bad peer changed data", what("data"));
            assert!(s.delivered, "{}: in-range launches failed", what("after"));
        }
    }
}

#[test]
fn the_message_names_rank_peer_and_world() {
    let err = Error::PeerOutOfRange {
        rank: 1,
        peer: 4,
        world_size: 4,
    };
    assert_eq!(
        err.to_string(),
        "rank 1: a kernel built with peer checks used peer index 4, but the world has 4 ranks (valid peers 0..4); the access went to a scratch slot, not to any peer"
    );
}
