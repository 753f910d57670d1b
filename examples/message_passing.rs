//! Message passing over symmetric memory: in each pair of ranks (0 and 1, 2 and 3, ...)
//! the producer puts a message into the consumer's mailbox and raises the consumer's
//! signal; the consumer waits for it, checks the message (every word carries its sequence
//! number) and acknowledges. Many rounds, one thread on each side: the time per round is
//! the round-trip latency of a signal plus the message.
//!
//! Two ways, in the same run: `signals`, iris's signal operations (`put_signal`,
//! `signal_wait_until`, `signal`: bounded waits that name what they waited for), and
//! `flags`, the same protocol written by hand (remote stores, a `Release` atomic store, an
//! `Acquire` polling loop with its own time limit).
//!
//! ```text
//! cargo run --release --example message_passing -- [--ranks 2] [--elems 1,16,256] [--rounds 10000]
//! ```
//! `--elems` lists message sizes in 8-byte words. With `--features trace-events` and
//! `IRIS_TRACE=<dir>`, the `signals` kernels mark each round sent (event 1) and received
//! (event 2) on the trace's timeline (`iris-trace summary <dir>/trace.json` counts them).

mod common;

use common::{human_bytes, parse_count, parse_options, yes_no, Table};
use iris::{BackendKind, Iris, World};
use std::process::ExitCode;
use std::time::Duration;

/// The two ways of passing messages.
const PROTOCOLS: [&str; 2] = ["signals", "flags"];

/// One exchange, timed: (seconds of the slower side, whether every message arrived
/// intact on this rank).
fn exchange(iris: &Iris, protocol: &str, words: usize, rounds: u64) -> iris::Result<(f64, bool)> {
    let producer = iris.rank() % 2 == 0;
    let (ok, took) = if protocol == "signals" {
        let (s, took) = common::signal_mailbox::ping_pong(iris, words, rounds)?;
        let ok = if producer {
            s[0] == rounds
        } else {
            s[..4] == [rounds, 0, 0, 0]
        };
        (ok, took)
    } else {
        let (s, took) = common::mailbox::exchange(iris, words, rounds)?;
        let ok = if producer {
            s[..2] == [rounds, 0]
        } else {
            s[..5] == [rounds, 0, 0, 0, 0]
        };
        (ok, took)
    };
    Ok((took.as_secs_f64(), ok))
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
        "protocol",
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
        for (&words, protocol) in opts
            .elems
            .iter()
            .flat_map(|w| PROTOCOLS.iter().map(move |p| (w, *p)))
        {
            let words = words.max(1);
            // A round trip needs both spinning ranks on a core at once: generous on a
            // loaded CPU.
            let world = World::threads(ranks)
                .heap_bytes(heap)
                .timeout(Duration::from_secs(600));
            let result = world.run(|iris| {
                let (seconds, ok) = exchange(iris, protocol, words, rounds)?;
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
                protocol.to_string(),
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
