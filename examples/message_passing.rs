//! Message passing over symmetric memory: in each pair of ranks (0 and 1, 2 and 3, ...)
//! the producer writes a message into the consumer's mailbox with plain remote stores, then
//! raises the consumer's flag with a `Release`/`System` atomic store; the consumer waits
//! for the flag with `Acquire`/`System` loads, checks the message (every word carries its
//! sequence number) and acknowledges. Many rounds, one thread on each side: the time per
//! round is the round-trip latency of a flag plus the message.
//!
//! ```text
//! cargo run --release --example message_passing -- [--ranks 2] [--elems 1,16,256] [--rounds 10000]
//! ```
//! `--elems` lists message sizes in 8-byte words.

mod common;

use common::{human_bytes, parse_count, parse_options, yes_no, Table};
use iris::{BackendKind, Iris, World};
use std::process::ExitCode;
use std::time::{Duration, Instant};

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

    /// Round `r`: waits for the consumer's acknowledgement of `r` rounds, writes word `j` as
    /// `r * words + j + 1` into its mailbox, raises its flag to `r + 1`. `status[0]` = rounds
    /// sent.
    #[kernel]
    pub fn produce(
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
        let mut sent = 0u64;
        for round in 0..rounds {
            if wait_for(ack, round, me, spins) == u64::MAX {
                break;
            }
            for j in 0..words {
                store(mailbox.add(j as usize), round * words + j + 1, peer);
            }
            atomic_store(flag, round + 1, peer, Ordering::Release, Scope::System);
            sent += 1;
        }
        unsafe { *status = sent };
    }

    /// Round `r`: waits for the flag to reach `r + 1`, checks that it is exactly that and
    /// every word of the message, acknowledges. `status[0]` = rounds received, `status[1]` =
    /// wrong words or flags.
    #[kernel]
    pub fn consume(
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
        let data = mailbox.local();
        let mut received = 0u64;
        let mut wrong = 0u64;
        for round in 0..rounds {
            let seen = wait_for(flag, round + 1, me, spins);
            if seen == u64::MAX {
                break;
            }
            if seen != round + 1 {
                wrong += 1;
            }
            for j in 0..words {
                if unsafe { *data.add(j as usize) } != round * words + j + 1 {
                    wrong += 1;
                }
            }
            received += 1;
            atomic_store(ack, round + 1, peer, Ordering::Release, Scope::System);
        }
        unsafe {
            *status = received;
            *status.add(1) = wrong;
        }
    }
}

/// Runs `rounds` rounds of `words`-word messages; returns (seconds, whether every message
/// arrived intact).
fn exchange(iris: &Iris, words: usize, rounds: u64) -> iris::Result<(f64, bool)> {
    let me = iris.rank() as u32;
    let peer = me ^ 1;
    let mailbox = iris.symmetric_zeros::<u64>(words)?;
    let flag = iris.symmetric_zeros::<u64>(1)?;
    let ack = iris.symmetric_zeros::<u64>(1)?;
    let status = iris.full::<u64>(2, u64::MAX)?;
    let spins = 1u64 << 32;
    iris.barrier()?;
    let start = Instant::now();
    let w = words as u64;
    if me % 2 == 0 {
        mailbox::produce::launch(
            iris,
            (1, 1),
            &mailbox,
            &flag,
            &ack,
            &status,
            w,
            rounds,
            me,
            peer,
            spins,
        )?;
    } else {
        mailbox::consume::launch(
            iris,
            (1, 1),
            &mailbox,
            &flag,
            &ack,
            &status,
            w,
            rounds,
            me,
            peer,
            spins,
        )?;
    }
    iris.synchronize()?;
    let seconds = start.elapsed().as_secs_f64();
    iris.barrier()?;
    let s = status.to_vec()?;
    let ok = if me % 2 == 0 {
        s[0] == rounds
    } else {
        s[0] == rounds && s[1] == 0
    };
    Ok((seconds, ok))
}

fn main() -> ExitCode {
    let default_elems = |_: BackendKind| vec![1, 16, 256];
    let usage = "[--ranks 2 (even)] [--elems 1,16,256 (words per message)] [--rounds 10000]";
    let opts = match parse_options("message_passing", usage, &[2], default_elems, &["--rounds"]) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("message_passing: {e}");
            return ExitCode::from(2);
        }
    };
    let rounds = match opts
        .extra("--rounds")
        .map(parse_count)
        .unwrap_or(Ok(10_000))
    {
        Ok(r) => r.max(1) as u64,
        Err(e) => {
            eprintln!("message_passing: --rounds: {e}");
            return ExitCode::from(2);
        }
    };
    let mut table = Table::new(&[
        "ranks",
        "backend",
        "message",
        "rounds",
        "time (ms)",
        "us/round trip",
        "intact",
        "device",
    ]);
    let mut all_ok = true;
    for &ranks in &opts.ranks {
        if ranks % 2 != 0 {
            eprintln!(
                "message_passing: skipping {ranks} ranks: ranks pair up, so the count must be even"
            );
            continue;
        }
        let heap = (opts.elems.iter().max().copied().unwrap_or(0) * 8).next_multiple_of(1 << 20)
            + (1 << 20);
        for &words in &opts.elems {
            let words = words.max(1);
            // A round trip needs both spinning ranks on a core at once: generous on a
            // loaded CPU.
            let world = World::threads(ranks)
                .heap_bytes(heap)
                .timeout(Duration::from_secs(600));
            let result = world.run(|iris| {
                let (seconds, ok) = exchange(iris, words, rounds)?;
                Ok((
                    iris.backend_kind(),
                    iris.device_info().name.clone(),
                    seconds,
                    ok,
                ))
            });
            let per_rank = match result {
                Ok(r) => r,
                Err(e) => {
                    eprintln!("message_passing at {ranks} ranks failed: {e}");
                    return ExitCode::FAILURE;
                }
            };
            let seconds = per_rank.iter().map(|r| r.2).fold(0.0, f64::max);
            let ok = per_rank.iter().all(|r| r.3);
            all_ok &= ok;
            table.row(vec![
                ranks.to_string(),
                per_rank[0].0.to_string(),
                human_bytes(words * 8),
                rounds.to_string(),
                format!("{:.1}", seconds * 1e3),
                format!("{:.2}", seconds * 1e6 / rounds as f64),
                yes_no(ok),
                per_rank[0].1.clone(),
            ]);
        }
    }
    table.print();
    if all_ok {
        ExitCode::SUCCESS
    } else {
        eprintln!("message_passing: a message was lost, repeated or reordered");
        ExitCode::FAILURE
    }
}
