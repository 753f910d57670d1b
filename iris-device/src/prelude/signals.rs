//! Signal operations: a `u64` in symmetric memory that one rank raises and another waits
//! for, the building block of custom collectives (NVSHMEM's `putmem_signal` /
//! `signal_wait_until`, Pallas's semaphores).
//!
//! A signal is a [`Symmetric<u64>`]. [`signal`] sets or adds to a peer's copy with a
//! `Release` store at system scope; [`put_signal`] first writes data into the peer's copy
//! of a symmetric buffer, so a peer that sees the signal sees the data. The waiting rank
//! calls [`signal_wait_until`] on its own copy: it polls with `Relaxed` loads and fences
//! once (`Acquire`) when the comparison holds, backs off with `nanosleep`, and gives up
//! after the world's wait limit (90% of `IRIS_TIMEOUT`) or within a millisecond of the
//! world aborting (another rank failed). A wait that gave up records what it waited for,
//! and the rank's next `synchronize` returns an error naming the kernel, the rank, the
//! signal, the value it saw and the value it waited for.
//!
//! The `_block` forms are called by every thread of the block (they contain
//! `sync_threads`): the block's threads share the data movement, and one thread signals
//! or waits for the block.
//!
//! A waiting block holds its multiprocessor. Where ranks share a device (ranks as
//! threads on one GPU), a launch whose many blocks wait for a peer can hold every
//! multiprocessor while that peer's earlier kernel still needs one: queue
//! `iris::ccl::Ccl::barrier` (one block a rank) before such a launch, as the library's
//! collectives do, or wait in few blocks.

use super::device_only;
use super::symmetric::Symmetric;
use super::values::DeviceValue;

/// How a signal changes the peer's copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SignalOp {
    /// Store the value.
    Set,
    /// Add the value (counting arrivals: each of `n` senders adds 1, the receiver waits
    /// for `Ge, n`).
    Add,
}

/// The comparison a signal wait waits for: the signal's value `cmp` the given value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Cmp {
    /// `signal == value`.
    Eq,
    /// `signal != value`.
    Ne,
    /// `signal >= value`.
    Ge,
    /// `signal > value`.
    Gt,
    /// `signal <= value`.
    Le,
    /// `signal < value`.
    Lt,
}

/// Sets (`SignalOp::Set`) or adds to (`SignalOp::Add`) `peer`'s copy of the signal `sig`,
/// with a `Release` atomic at system scope: every write this thread made before is
/// visible to a thread that sees the new value with an `Acquire` load (as
/// [`signal_wait_until`] does).
#[inline(always)]
pub fn signal(sig: Symmetric<u64>, value: u64, op: SignalOp, peer: u32) {
    let _ = (sig, value, op, peer);
    device_only("signal")
}

/// Writes the `n` local elements at `src` into `peer`'s copy of `dst[0..n]`, then
/// signals `peer`'s copy of `sig` as [`signal`] does: a peer that sees the signal sees
/// the data. One thread moves all `n` elements; [`put_signal_block`] shares them among
/// the block's threads.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub fn put_signal<T: DeviceValue>(
    src: *const T,
    dst: Symmetric<T>,
    n: usize,
    sig: Symmetric<u64>,
    value: u64,
    op: SignalOp,
    peer: u32,
) {
    let _ = (src, dst, n, sig, value, op, peer);
    device_only("put_signal")
}

/// Waits until this rank's copy of `sig` compares `cmp` with `value` (`Relaxed` polls at
/// system scope, then an `Acquire` fence: what the signaller wrote before signalling is
/// visible afterwards, and no poll invalidates a cache) and returns the value seen.
///
/// The wait is bounded: it backs off with `nanosleep` after its first polls and gives up
/// after the world's wait limit, or when the world has aborted (within a millisecond: it
/// reads the host's abort flag once a millisecond), returning the value it saw last
/// (which does not satisfy the comparison). The rank's next `synchronize` then returns
/// an error that names the kernel, the signal, the value seen and the value waited for.
/// Once a wait of the rank gave up, later waits give up at once.
#[inline(always)]
pub fn signal_wait_until(sig: Symmetric<u64>, cmp: Cmp, value: u64) -> u64 {
    let _ = (sig, cmp, value);
    device_only("signal_wait_until")
}

/// [`signal`] for the whole block: every thread calls it; after a block barrier (the
/// block's earlier writes are done), one thread signals for the block.
#[inline(always)]
pub fn signal_block(sig: Symmetric<u64>, value: u64, op: SignalOp, peer: u32) {
    let _ = (sig, value, op, peer);
    device_only("signal_block")
}

/// [`put_signal`] for the whole block: every thread calls it with the same arguments;
/// the block's threads write the `n` elements between them, then, after a block barrier,
/// one thread signals for the block.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub fn put_signal_block<T: DeviceValue>(
    src: *const T,
    dst: Symmetric<T>,
    n: usize,
    sig: Symmetric<u64>,
    value: u64,
    op: SignalOp,
    peer: u32,
) {
    let _ = (src, dst, n, sig, value, op, peer);
    device_only("put_signal_block")
}

/// [`signal_wait_until`] for the whole block: every thread calls it; one thread waits,
/// and after a block barrier every thread reads the signal (`Acquire`) and returns it.
#[inline(always)]
pub fn signal_wait_until_block(sig: Symmetric<u64>, cmp: Cmp, value: u64) -> u64 {
    let _ = (sig, cmp, value);
    device_only("signal_wait_until_block")
}

/// Whether the world that `p`'s allocation belongs to has aborted: a rank failed (an
/// error, a panic, a timeout) and iris's waits are giving up. A wait loop written by hand
/// should poll it (with its own time limit) and stop, as [`signal_wait_until`] does, but
/// rarely: the flag is host memory, read across the bus, and many threads reading it at
/// every poll slow the device (on an H100, a fused GEMM whose 128 waiting blocks did so
/// took 27 ms instead of 1). iris's waits read it once a millisecond a thread.
#[inline(always)]
pub fn world_aborted<T>(p: Symmetric<T>) -> bool {
    let _ = p;
    device_only("world_aborted")
}
