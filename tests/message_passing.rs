//! Message passing between two ranks over symmetric memory: the producer writes a payload
//! into the consumer's mailbox with plain remote stores, then raises the consumer's flag
//! (`Release`, `System`); the consumer waits for the flag (`Acquire`, `System`), checks every
//! payload word's sequence number and acknowledges. 10,000 round trips must lose, repeat
//! and reorder nothing, on the CPU backend and on every GPU backend present.

mod common;

use std::time::Duration;

use common::backends;
use iris::World;

#[iris::kernels]
mod mailbox {
    use iris::prelude::*;

    /// Polls this rank's copy of `cell` until it reaches `want`; returns the value seen, or
    /// `u64::MAX` after `spins` polls.
    fn wait_for(cell: Symmetric<u64>, want: u64, me: u32, spins: u64) -> u64 {
        let mut polls = 0u64;
        loop {
            let seen = atomic_load(cell, me, Ordering::Acquire, Scope::System);
            if seen >= want {
                return seen;
            }
            polls += 1;
            if polls >= spins {
                return u64::MAX;
            }
        }
    }

    /// Round `r` (from 0): waits until the consumer acknowledged `r` rounds, stores words
    /// `r * words + j + 1` into the consumer's mailbox, raises its flag to `r + 1`.
    /// `status[0]` = rounds sent; `status[1]` = 1 if a wait gave up.
    #[kernel]
    pub fn producer(
        mailbox: Symmetric<u64>,
        flag: Symmetric<u64>,
        ack: Symmetric<u64>,
        status: *mut u64,
        words: u64,
        rounds: u64,
        me: u32,
        peer: u32,
        spins: u64,
    ) {
        if thread_idx_x() != 0 || block_idx_x() != 0 {
            return;
        }
        let mut sent = 0u64;
        let mut gave_up = 0u64;
        for round in 0..rounds {
            if wait_for(ack, round, me, spins) == u64::MAX {
                gave_up = 1;
                break;
            }
            for j in 0..words {
                store(mailbox.add(j as usize), round * words + j + 1, peer);
            }
            atomic_store(flag, round + 1, peer, Ordering::Release, Scope::System);
            sent += 1;
        }
        unsafe {
            *status = sent;
            *status.add(1) = gave_up;
        }
    }

    /// Waits for each round's flag, checks the flag is exactly `r + 1` (nothing skipped) and
    /// every payload word, then acknowledges. `status[0]` = rounds received, `status[1]` = 1
    /// if a wait gave up, `status[2]` = wrong words, `status[3]` = wrong flags, `status[4]` =
    /// the first bad round plus one.
    #[kernel]
    pub fn consumer(
        mailbox: Symmetric<u64>,
        flag: Symmetric<u64>,
        ack: Symmetric<u64>,
        status: *mut u64,
        words: u64,
        rounds: u64,
        me: u32,
        peer: u32,
        spins: u64,
    ) {
        if thread_idx_x() != 0 || block_idx_x() != 0 {
            return;
        }
        let data = mailbox.local();
        let mut received = 0u64;
        let mut gave_up = 0u64;
        let mut bad_words = 0u64;
        let mut bad_flags = 0u64;
        let mut first_bad = 0u64;
        for round in 0..rounds {
            let seen = wait_for(flag, round + 1, me, spins);
            if seen == u64::MAX {
                gave_up = 1;
                break;
            }
            if seen != round + 1 {
                bad_flags += 1;
                if first_bad == 0 {
                    first_bad = round + 1;
                }
            }
            for j in 0..words {
                let v = unsafe { *data.add(j as usize) };
                if v != round * words + j + 1 {
                    bad_words += 1;
                    if first_bad == 0 {
                        first_bad = round + 1;
                    }
                }
            }
            received += 1;
            atomic_store(ack, round + 1, peer, Ordering::Release, Scope::System);
        }
        unsafe {
            *status = received;
            *status.add(1) = gave_up;
            *status.add(2) = bad_words;
            *status.add(3) = bad_flags;
            *status.add(4) = first_bad;
        }
    }
}

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
            .run(|iris| {
                let me = iris.rank() as u32;
                let peer = 1 - me;
                let mailbox = iris.symmetric_zeros::<u64>(words as usize)?;
                let flag = iris.symmetric_zeros::<u64>(1)?;
                let ack = iris.symmetric_zeros::<u64>(1)?;
                let status = iris.full::<u64>(5, u64::MAX)?;
                // Bounded: a lost message fails the test instead of hanging it.
                let spins = 1u64 << 32;
                if me == 0 {
                    mailbox::producer::launch(
                        iris,
                        (1, 1),
                        &mailbox,
                        &flag,
                        &ack,
                        &status,
                        words,
                        rounds,
                        me,
                        peer,
                        spins,
                    )?;
                } else {
                    mailbox::consumer::launch(
                        iris,
                        (1, 1),
                        &mailbox,
                        &flag,
                        &ack,
                        &status,
                        words,
                        rounds,
                        me,
                        peer,
                        spins,
                    )?;
                }
                iris.barrier()?;
                status.to_vec()
            })
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
