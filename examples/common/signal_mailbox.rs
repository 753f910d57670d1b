//! Message passing with iris's signal operations, one definition for
//! `examples/message_passing.rs` and `tests/message_passing.rs`.
//!
//! - `ping_pong`: many round trips inside one kernel on each side. The producer waits
//!   until the consumer acknowledged round `r` (`signal_wait_until(ack, Ge, r)`), then
//!   `put_signal`s the message into the consumer's mailbox with the flag `r + 1`; the
//!   consumer waits for the flag, checks every word and acknowledges with `signal`. The
//!   same protocol as `mailbox.rs`'s hand-written flags, so the two are compared.
//! - `send` / `receive`: one message a launch, block-wide (`put_signal_block`,
//!   `signal_wait_until_block`), for programs that allocate, launch and free every round.

#[iris::kernels]
pub mod signal_mailbox {
    use iris::prelude::*;

    /// Round `r` (from 0): waits for the consumer's acknowledgement of `r` rounds, writes
    /// words `r * words + j + 1` into `staging`, puts them into the consumer's mailbox and
    /// raises its flag to `r + 1`. `status[0]` = rounds sent.
    #[kernel]
    pub fn producer(
        mailbox: Symmetric<u64>,
        flag: Symmetric<u64>,
        ack: Symmetric<u64>,
        staging: *mut u64,
        status: *mut u64,
        words: u64,
        rounds: u64,
        peer: u32,
    ) {
        if thread_idx_x() != 0 || block_idx_x() != 0 {
            return;
        }
        let mut sent = 0u64;
        for round in 0..rounds {
            if signal_wait_until(ack, Cmp::Ge, round) < round {
                break; // gave up: the host reports it
            }
            for j in 0..words {
                unsafe { *staging.add(j as usize) = round * words + j + 1 };
            }
            put_signal(
                staging,
                mailbox,
                words as usize,
                flag,
                round + 1,
                SignalOp::Set,
                peer,
            );
            // Event 1, "sent round r" (in IRIS_TRACE runs built with `trace-events`).
            trace_event(1, round);
            sent += 1;
        }
        unsafe { *status = sent };
    }

    /// Waits for each round's flag, checks that it is exactly `r + 1` and every word,
    /// then acknowledges. `status[0]` = rounds received, `status[1]` = wrong words,
    /// `status[2]` = wrong flags, `status[3]` = the first bad round plus one.
    #[kernel]
    pub fn consumer(
        mailbox: Symmetric<u64>,
        flag: Symmetric<u64>,
        ack: Symmetric<u64>,
        status: *mut u64,
        words: u64,
        rounds: u64,
        peer: u32,
    ) {
        if thread_idx_x() != 0 || block_idx_x() != 0 {
            return;
        }
        let data = mailbox.local();
        let mut received = 0u64;
        let mut bad_words = 0u64;
        let mut bad_flags = 0u64;
        let mut first_bad = 0u64;
        for round in 0..rounds {
            let seen = signal_wait_until(flag, Cmp::Ge, round + 1);
            if seen < round + 1 {
                break; // gave up: the host reports it
            }
            // Event 2, "received round r".
            trace_event(2, round);
            if seen != round + 1 {
                bad_flags += 1;
                if first_bad == 0 {
                    first_bad = round + 1;
                }
            }
            for j in 0..words {
                if unsafe { *data.add(j as usize) } != round * words + j + 1 {
                    bad_words += 1;
                    if first_bad == 0 {
                        first_bad = round + 1;
                    }
                }
            }
            received += 1;
            signal(ack, round + 1, SignalOp::Set, peer);
        }
        unsafe {
            *status = received;
            *status.add(1) = bad_words;
            *status.add(2) = bad_flags;
            *status.add(3) = first_bad;
        }
    }

    /// The block puts `n` words of `src` into `peer`'s `inbox` and raises its `ready`
    /// signal to `round`.
    #[kernel]
    pub fn send(
        src: *const u64,
        inbox: Symmetric<u64>,
        n: u32,
        ready: Symmetric<u64>,
        round: u64,
        peer: u32,
    ) {
        put_signal_block(src, inbox, n as usize, ready, round, SignalOp::Set, peer);
    }

    /// The block waits until `ready` reaches `round`, then copies the inbox to `out`.
    #[kernel]
    pub fn receive(
        inbox: Symmetric<u64>,
        ready: Symmetric<u64>,
        round: u64,
        out: *mut u64,
        n: u32,
    ) {
        if signal_wait_until_block(ready, Cmp::Ge, round) >= round {
            let data = inbox.local();
            let mut i = thread_idx_x();
            while i < n {
                unsafe { *out.add(i as usize) = *data.add(i as usize) };
                i += block_dim_x();
            }
        }
    }
}

/// Runs one side of `rounds` round trips of `words`-word messages between rank pairs with
/// `put_signal` / `signal_wait_until` (even rank produces, odd rank consumes); returns
/// this side's status words and the time from its launch to the end of its work.
pub fn ping_pong(
    iris: &iris::Iris,
    words: usize,
    rounds: u64,
) -> iris::Result<(Vec<u64>, std::time::Duration)> {
    let me = iris.rank() as u32;
    let peer = me ^ 1;
    let mailbox = iris.symmetric_zeros::<u64>(words)?;
    let flag = iris.symmetric_zeros::<u64>(1)?;
    let ack = iris.symmetric_zeros::<u64>(1)?;
    let status = iris.full::<u64>(4, u64::MAX)?;
    let staging = iris.zeros::<u64>(words)?;
    let w = words as u64;
    iris.barrier()?;
    let start = std::time::Instant::now();
    if me % 2 == 0 {
        signal_mailbox::producer::launch(
            iris,
            (1, 1),
            &mailbox,
            &flag,
            &ack,
            &staging,
            &status,
            w,
            rounds,
            peer,
        )?;
    } else {
        signal_mailbox::consumer::launch(
            iris,
            (1, 1),
            &mailbox,
            &flag,
            &ack,
            &status,
            w,
            rounds,
            peer,
        )?;
    }
    iris.synchronize()?;
    let took = start.elapsed();
    let status = status.to_vec()?;
    iris.barrier()?;
    Ok((status, took))
}

/// `rounds` rounds of one message from each even rank to the next rank (rank 0 to itself
/// in a world of one), with every buffer allocated and freed inside its round while the
/// peer's kernel waits: the receiver launches its wait first and then allocates and frees
/// a local and a symmetric buffer; the sender allocates its message (`from_slice`) after
/// the receiver's kernel started waiting, sends, and frees it. Returns the rounds whose
/// message arrived intact on this rank (receivers), or the rounds sent (senders).
pub fn rounds_with_allocations(iris: &iris::Iris, words: usize, rounds: u64) -> iris::Result<u64> {
    let (me, world) = (iris.rank(), iris.world_size());
    let inbox = iris.symmetric_zeros::<u64>(words)?;
    let ready = iris.symmetric_zeros::<u64>(1)?;
    let n = words as u32;
    let sends = me % 2 == 0;
    let receives = me % 2 == 1 || world == 1;
    let to = if world == 1 { 0 } else { (me + 1) as u32 };
    let mut good = 0u64;
    for round in 1..=rounds {
        let message: Vec<u64> = (0..words as u64)
            .map(|j| round * 1_000_000 + me as u64 * 1000 + j)
            .collect();
        let from = if world == 1 { 0 } else { me.saturating_sub(1) };
        let expected: Vec<u64> = (0..words as u64)
            .map(|j| round * 1_000_000 + from as u64 * 1000 + j)
            .collect();
        let out = iris.zeros::<u64>(words)?;
        iris.barrier()?;
        if receives && world > 1 {
            signal_mailbox::receive::launch(iris, (1, 128), &inbox, &ready, round, &out, n)?;
            // While this rank's kernel waits for the sender: allocate and free.
            let scratch = iris.from_slice(&message)?;
            drop(scratch);
        }
        // Collective: the receivers' kernels are waiting while every rank allocates.
        let sym = iris.symmetric_zeros::<u32>(64)?;
        if sends {
            // The receiver's kernel is waiting: allocate, send, free.
            let src = iris.from_slice(&message)?;
            signal_mailbox::send::launch(iris, (1, 128), &src, &inbox, n, &ready, round, to)?;
            drop(src);
            if world == 1 {
                signal_mailbox::receive::launch(iris, (1, 128), &inbox, &ready, round, &out, n)?;
            }
        }
        drop(sym);
        iris.synchronize()?;
        if receives {
            if out.to_vec()? == expected {
                good += 1;
            }
        } else {
            good += 1;
        }
        drop(out);
    }
    iris.barrier()?;
    Ok(good)
}
