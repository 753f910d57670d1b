//! The message-passing kernels, one definition for `examples/message_passing.rs` and
//! `tests/message_passing.rs`: the producer writes a payload into the consumer's mailbox
//! with plain remote stores, then raises the consumer's flag (`Release`, `System`); the
//! consumer waits for the flag (`Acquire`, `System`), checks every word's sequence number
//! and acknowledges. One thread on each side; waits are bounded in time (`timeout_ns`) and
//! back off with `nanosleep` after their first polls.

#[iris::kernels]
pub mod mailbox {
    use iris::prelude::*;

    /// Polls this rank's copy of `cell` until it reaches `want`; returns the value seen, or
    /// `u64::MAX` once `timeout_ns` passed. The first 4096 polls go back to back (a round
    /// trip is microseconds), then 100 ns sleeps between polls give the core (on the CPU
    /// backend) to the rank being waited for.
    fn wait_for(cell: Symmetric<u64>, want: u64, me: u32, timeout_ns: u64) -> u64 {
        let start = global_timer_ns();
        let mut polls = 0u64;
        loop {
            let seen = atomic_load(cell, me, Ordering::Acquire, Scope::System);
            if seen >= want {
                return seen;
            }
            polls += 1;
            if polls > 4096 {
                if global_timer_ns() - start >= timeout_ns {
                    return u64::MAX;
                }
                nanosleep(100);
            }
        }
    }

    /// Round `r` (from 0): waits until the consumer acknowledged `r` rounds, writes words
    /// `r * words + j + 1` into `staging` and stores them into the consumer's mailbox (the
    /// same data movement as `signal_mailbox`'s `put_signal`), raises its flag to `r + 1`.
    /// `status[0]` = rounds sent; `status[1]` = 1 if a wait gave up.
    #[kernel]
    pub fn producer(
        mailbox: Symmetric<u64>,
        flag: Symmetric<u64>,
        ack: Symmetric<u64>,
        staging: *mut u64,
        status: *mut u64,
        words: u64,
        rounds: u64,
        me: u32,
        peer: u32,
        timeout_ns: u64,
    ) {
        if thread_idx_x() != 0 || block_idx_x() != 0 {
            return;
        }
        let mut sent = 0u64;
        let mut gave_up = 0u64;
        for round in 0..rounds {
            if wait_for(ack, round, me, timeout_ns) == u64::MAX {
                gave_up = 1;
                break;
            }
            for j in 0..words {
                unsafe { *staging.add(j as usize) = round * words + j + 1 };
            }
            for j in 0..words {
                store(
                    mailbox.add(j as usize),
                    unsafe { *staging.add(j as usize) },
                    peer,
                );
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
        timeout_ns: u64,
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
            let seen = wait_for(flag, round + 1, me, timeout_ns);
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

/// Runs one side of `rounds` round trips of `words`-word messages between rank pairs
/// (even rank produces, odd rank consumes, each with its neighbour), every wait bounded by
/// 90% of the world's timeout; returns this side's status words (see the kernels) and the
/// time from its launch to the end of its work.
pub fn exchange(
    iris: &iris::Iris,
    words: usize,
    rounds: u64,
) -> iris::Result<(Vec<u64>, std::time::Duration)> {
    let me = iris.rank() as u32;
    let peer = me ^ 1;
    let mailbox = iris.symmetric_zeros::<u64>(words)?;
    let flag = iris.symmetric_zeros::<u64>(1)?;
    let ack = iris.symmetric_zeros::<u64>(1)?;
    let status = iris.full::<u64>(5, u64::MAX)?;
    let staging = iris.zeros::<u64>(words)?;
    let timeout_ns = iris.timeout().mul_f64(0.9).as_nanos() as u64;
    let w = words as u64;
    iris.barrier()?;
    let start = std::time::Instant::now();
    if me % 2 == 0 {
        mailbox::producer::launch(
            iris,
            (1, 1),
            &mailbox,
            &flag,
            &ack,
            &staging,
            &status,
            w,
            rounds,
            me,
            peer,
            timeout_ns,
        )?;
    } else {
        mailbox::consumer::launch(
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
            timeout_ns,
        )?;
    }
    iris.synchronize()?;
    let took = start.elapsed();
    let status = status.to_vec()?;
    iris.barrier()?;
    Ok((status, took))
}
