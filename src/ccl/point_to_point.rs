//! Point to point: `send` on one rank and the matching `recv` on another move a buffer
//! between the two alone, with signal operations rather than the world's barrier.
//!
//! Each ordered pair of ranks has two signal words in the communicator's signal buffer,
//! after the barrier's: the receiver raises the sender's *ready* word to the message's
//! number when its `recv` runs (its destination is free), and the sender, once it sees
//! that, writes the data into the receiver's destination and raises the receiver's *data*
//! word to the same number (`put_signal_block`: a receiver that sees the signal sees the
//! data). Messages between two ranks are numbered 1, 2, .. in each direction by the host,
//! so the n-th `send` from a to b matches the n-th `recv` on b from a. Both waits are the
//! signal operations' own: bounded by the world's wait limit, and given up when the world
//! aborts; a wait that gave up is an [`Error::SignalWait`](crate::Error::SignalWait) at the
//! next synchronization.

use super::{check_buffers, Ccl, CclElement, KernelId};
use crate::{Error, LaunchConfig, Result, SymmetricBuffer};

/// The kernels, one per element type `T` (`L`, the elements in 16 bytes, names the
/// instance as every collective's does). One block moves the message: its threads share
/// the elements.
#[iris::kernels]
#[allow(clippy::too_many_arguments)]
pub(crate) mod kernels {
    use iris::prelude::*;

    /// Waits until `peer` is ready for message `seq`, then writes `n` elements of `src`
    /// into `peer`'s `dst` and raises `peer`'s data word from this rank to `seq`; writes
    /// nothing if the wait gave up (one thread waits and tells the block, so every thread
    /// agrees). The pair words start at `words[base]`: `world` data words, then `world`
    /// ready words.
    #[kernel(instances((f32, 4), (f64, 2), (f16, 8), (bf16, 8), (i32, 4), (u32, 4), (i64, 2), (u64, 2)))]
    pub fn send<T: Element, const L: usize>(
        src: Symmetric<T>,
        dst: Symmetric<T>,
        words: Symmetric<u64>,
        base: u64,
        n: u64,
        seq: u64,
        me: u32,
        peer: u32,
        world: u32,
    ) {
        let ready = words.add((base + world as u64 + peer as u64) as usize);
        let is_ready = shared_array::<u32, 1>();
        if thread_idx_x() == 0 {
            let seen = signal_wait_until(ready, Cmp::Ge, seq);
            unsafe { *is_ready = if seen >= seq { 1 } else { 0 } };
        }
        sync_threads();
        if unsafe { *is_ready } == 0 {
            return;
        }
        let data = words.add((base + me as u64) as usize);
        put_signal_block(src.local(), dst, n as usize, data, seq, SignalOp::Set, peer);
    }

    /// Tells `peer` this rank is ready for message `seq` (its destination is free), then
    /// waits until `peer`'s data for it has arrived (the sender writes the destination; the
    /// element type only names the instance).
    #[kernel(instances((f32, 4), (f64, 2), (f16, 8), (bf16, 8), (i32, 4), (u32, 4), (i64, 2), (u64, 2)))]
    pub fn recv<T: Element, const L: usize>(
        words: Symmetric<u64>,
        base: u64,
        seq: u64,
        me: u32,
        peer: u32,
        world: u32,
    ) {
        let ready = words.add((base + world as u64 + me as u64) as usize);
        signal_block(ready, seq, SignalOp::Set, peer);
        let data = words.add((base + peer as u64) as usize);
        signal_wait_until_block(data, Cmp::Ge, seq);
    }
}

/// Threads of the one block that moves a message.
const BLOCK_THREADS: u32 = 256;

/// `peer` as another rank of `ccl`'s world, or an error naming the call.
fn check_peer(ccl: &Ccl<'_>, what: &str, peer: usize) -> Result<u32> {
    let world = ccl.world_size();
    if peer >= world || peer == ccl.rank() {
        return Err(Error::InvalidConfig(format!(
            "{what}: peer {peer} is not another rank of a world of {world} (this is rank {})",
            ccl.rank()
        )));
    }
    Ok(peer as u32)
}

/// Sends `src` to rank `peer`, into `peer`'s copy of `dst` (collective between the two:
/// `peer` calls [`recv`] with `dst` and this rank). The message waits for the matching
/// `recv` before it writes: `dst` on `peer` is overwritten only once `peer`'s `recv` runs.
///
/// Shapes: `src.len() <= dst.len()`; both symmetric buffers of `ccl`'s context, two
/// allocations; `peer` another rank. An empty `src` still sends an (empty) message, so that
/// the numbering of the pair's messages stays matched.
/// Asynchronous: the rank's stream runs it in order with its other work.
pub fn send<T: CclElement>(
    ccl: &Ccl<'_>,
    src: &SymmetricBuffer<'_, T>,
    dst: &SymmetricBuffer<'_, T>,
    peer: usize,
) -> Result<()> {
    let peer32 = check_peer(ccl, "ccl::send", peer)?;
    if src.len() > dst.len() {
        return Err(Error::LengthMismatch {
            what: "ccl::send destination (at least the source)",
            expected: src.len(),
            got: dst.len(),
        });
    }
    check_buffers(ccl, "ccl::send", src, dst)?;
    // Every context loaded the unit when it was made: nothing collective here.
    let (unit, index) = (KernelId::Send.unit(), KernelId::Send.index::<T>()?);
    let seq = ccl.next_message(peer, true);
    let iris = ccl.iris();
    let _span = iris.trace_span(
        KernelId::Send.call_name(),
        (src.len() * std::mem::size_of::<T>()) as u64,
    );
    let mut args = iris.args(unit, index);
    args.symmetric(src)?;
    args.symmetric(dst)?;
    args.symmetric(ccl.signals())?;
    args.value(ccl.pair_words_base());
    args.value(src.len() as u64);
    args.value(seq);
    args.value(ccl.rank() as u32);
    args.value(peer32);
    args.value(ccl.world_size() as u32);
    iris.launch(LaunchConfig::linear(1, BLOCK_THREADS), args)
}

/// Receives rank `peer`'s next [`send`] into this rank's copy of `dst` (collective
/// between the two). When it has completed on this rank's stream, `dst` holds the
/// message (its first `src.len()` elements on the sender).
/// Asynchronous: the rank's stream runs it in order with its other work.
pub fn recv<T: CclElement>(ccl: &Ccl<'_>, dst: &SymmetricBuffer<'_, T>, peer: usize) -> Result<()> {
    let peer32 = check_peer(ccl, "ccl::recv", peer)?;
    if dst.context_id() != ccl.iris().id() {
        return Err(Error::ForeignBuffer {
            what: "symmetric buffer (recv destination)",
            owner: dst.context_id(),
            launcher: ccl.iris().id(),
            rank: ccl.rank(),
        });
    }
    let (unit, index) = (KernelId::Recv.unit(), KernelId::Recv.index::<T>()?);
    let seq = ccl.next_message(peer, false);
    let iris = ccl.iris();
    let _span = iris.trace_span(KernelId::Recv.call_name(), 0);
    let mut args = iris.args(unit, index);
    args.symmetric(ccl.signals())?;
    args.value(ccl.pair_words_base());
    args.value(seq);
    args.value(ccl.rank() as u32);
    args.value(peer32);
    args.value(ccl.world_size() as u32);
    iris.launch(LaunchConfig::linear(1, BLOCK_THREADS), args)
}
