//! Message passing between two ranks over symmetric memory: the producer writes a payload
//! into the consumer's mailbox with plain remote stores, then raises the consumer's flag
//! (`Release`, `System`); the consumer waits for the flag (`Acquire`, `System`), checks every
//! payload word's sequence number and acknowledges. 10,000 round trips must lose, repeat
//! and reorder nothing, on the CPU backend and on every GPU backend present.

mod common;

use std::time::Duration;

use common::backends;
use iris::World;

// The kernels are the example's: one definition for both.
#[path = "../examples/common/mailbox.rs"]
mod mailbox;

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
