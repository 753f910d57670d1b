//! Message passing between two ranks over symmetric memory: the producer writes a payload
//! into the consumer's mailbox with plain remote stores, then raises the consumer's flag
//! (`Release`, `System`); the consumer waits for the flag (`Acquire`, `System`), checks every
//! payload word's sequence number and acknowledges. 10,000 round trips must lose, repeat
//! and reorder nothing, on the CPU backend and on every GPU backend present; the same
//! with iris's signal operations (`put_signal`, `signal_wait_until`); and rounds at 1, 2,
//! 4 and 8 ranks that allocate and free local and symmetric buffers while a peer's
//! kernel waits for them, which must neither deadlock nor lose a message. And that the
//! kernels that wait are the ones the runtime loads as spinning.

mod common;

use std::time::Duration;

use common::backends;
use iris::World;

// The kernels are the example's: one definition for both.
#[path = "../examples/common/mailbox.rs"]
mod mailbox;
#[path = "../examples/common/signal_mailbox.rs"]
mod signal_mailbox;

#[test]
fn ten_thousand_round_trips_lose_and_reorder_nothing() {
    let rounds = 10_000u64;
    let words = 16u64;
    for backend in backends() {
        let start = std::time::Instant::now();
        let statuses = World::threads(2)
            .backend(backend)
            .heap_bytes(1 << 20)
            // On a loaded CPU each round trip waits for both spinning ranks to be scheduled.
            .timeout(Duration::from_secs(600))
            .run(|iris| mailbox::exchange(iris, words as usize, rounds).map(|(status, _)| status))
            .unwrap_or_else(|e| panic!("{backend}: {e}"));
        let (sent, received) = (&statuses[0], &statuses[1]);
        eprintln!("{backend}: {rounds} round trips in {:.2?}", start.elapsed());
        assert_eq!(
            sent[..2],
            [rounds, 0],
            "{backend}: producer sent {} rounds (gave up: {})",
            sent[0],
            sent[1]
        );
        assert_eq!(
            received[..5],
            [rounds, 0, 0, 0, 0],
            "{backend}: consumer received {} rounds, gave up {}, {} wrong words, {} wrong flags, first bad round {}",
            received[0],
            received[1],
            received[2],
            received[3],
            received[4]
        );
    }
}

#[test]
fn ten_thousand_signalled_round_trips_lose_and_reorder_nothing() {
    let rounds = 10_000u64;
    let words = 16usize;
    for backend in backends() {
        let start = std::time::Instant::now();
        let statuses = World::threads(2)
            .backend(backend)
            .heap_bytes(1 << 20)
            .timeout(Duration::from_secs(600))
            .run(|iris| signal_mailbox::ping_pong(iris, words, rounds).map(|(s, _)| s))
            .unwrap_or_else(|e| panic!("{backend}: {e}"));
        eprintln!(
            "{backend}: {rounds} signalled round trips in {:.2?}",
            start.elapsed()
        );
        assert_eq!(statuses[0][0], rounds, "{backend}: producer sent");
        assert_eq!(
            statuses[1],
            [rounds, 0, 0, 0],
            "{backend}: consumer received, wrong words, wrong flags, first bad round"
        );
    }
}

/// The world sizes of the allocation test: 1, 2, 4, 8 (and 16 where `IRIS_TEST_RANKS`
/// names it, for GPU stress runs).
fn allocation_world_sizes() -> Vec<usize> {
    match std::env::var("IRIS_TEST_RANKS") {
        Ok(list) if !list.trim().is_empty() => list
            .split(',')
            .map(|n| {
                n.trim()
                    .parse()
                    .expect("IRIS_TEST_RANKS: a list of numbers")
            })
            .collect(),
        _ => vec![1, 2, 4, 8],
    }
}

#[test]
fn rounds_that_allocate_and_free_while_peers_wait_neither_hang_nor_lose() {
    let rounds = 3u64;
    for backend in backends() {
        for ranks in allocation_world_sizes() {
            let start = std::time::Instant::now();
            let good = World::threads(ranks)
                .backend(backend)
                .heap_bytes(1 << 20)
                .timeout(Duration::from_secs(60))
                .run(|iris| signal_mailbox::rounds_with_allocations(iris, 1000, rounds))
                .unwrap_or_else(|e| panic!("{backend}, {ranks} ranks: {e}"));
            eprintln!(
                "{backend}: {ranks} ranks, {rounds} rounds with allocations in {:.2?}",
                start.elapsed()
            );
            assert_eq!(
                good,
                vec![rounds; ranks],
                "{backend}, {ranks} ranks: rounds intact per rank"
            );
        }
    }
}

/// Every kernel of the program by name (instances of a generic kernel by their mangled
/// names), with whether it may spin.
fn kernels_that_spin() -> Vec<(&'static str, bool)> {
    iris::abi::KERNEL_UNITS
        .iter()
        .flat_map(|unit| unit.kernels.iter().map(|k| (k.name, k.spins)))
        .collect()
}

/// Kernels that wait for another rank, by hand or with `signal_wait_until`, and the
/// collectives' barrier kernels may spin (so on NVIDIA GPUs the runtime gives them the
/// largest shared-memory split, and a waiting consumer never holds a multiprocessor its
/// producer's GEMM blocks need), the fused GEMMs whose launch holds a split barrier too;
/// kernels that only store, and the plain GEMMs, do not.
#[test]
fn kernels_that_wait_are_marked_as_spinning_and_the_others_are_not() {
    let all = kernels_that_spin();
    // A kernel's name, or a generic kernel's instances (`name__T..`).
    let spins = |kernel: &str| -> bool {
        let instance = format!("{kernel}__");
        let found: Vec<bool> = all
            .iter()
            .filter(|(name, _)| *name == kernel || name.starts_with(&instance))
            .map(|&(_, spins)| spins)
            .collect();
        assert!(!found.is_empty(), "no kernel {kernel}: {all:?}");
        assert!(
            found.iter().all(|&s| s == found[0]),
            "the kernels {kernel} disagree: {all:?}"
        );
        found[0]
    };
    for waits in [
        "consumer",
        "receive",
        "barrier",
        "wait_arrived",
        "recv",
        "reduce_scatter",
        // The fused GEMMs' own rows hold the split barrier's wait in their last block.
        "gather_wide",
        "scatter_staged",
    ] {
        assert!(spins(waits), "{waits} waits for a peer: {all:?}");
    }
    for computes in [
        "arrive",
        "warpgroup_256",
        "tiles_128",
        "staged_128",
        "pulled_wide",
        "transpose_32",
    ] {
        assert!(!spins(computes), "{computes} waits for nothing: {all:?}");
    }
}
