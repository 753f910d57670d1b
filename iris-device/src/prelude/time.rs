//! Device time: a wall clock in nanoseconds, a cycle counter, and sleeping.
//!
//! | function | NVIDIA | AMD (gfx9) | CPU backend |
//! |---|---|---|---|
//! | [`global_timer_ns`] | `%globaltimer` | `s_memrealtime` (100 MHz) × 10 | `CLOCK_MONOTONIC` |
//! | [`clock64`] | `%clock64` | `s_memtime` | `CLOCK_MONOTONIC` |
//! | [`nanosleep`] | `nanosleep.u32` | `s_sleep` until the time passed | the thread sleeps |
//!
//! Waits for other ranks bound themselves with [`global_timer_ns`] and back off with
//! [`nanosleep`]: the clock is the same for every block of a device (and, on the CPU
//! backend, for every rank of the machine).

use super::device_only;

/// Nanoseconds of a clock that every block of the device shares and that never goes
/// back (NVIDIA `%globaltimer`; AMD `s_memrealtime`, whose 100 MHz counter gives 10 ns
/// steps; the CPU backend's `CLOCK_MONOTONIC`). For timeouts and for timing spans of a
/// microsecond and more: its resolution is coarser than a cycle (NVIDIA updates it every
/// microsecond or so). Only differences are meaningful.
#[inline(always)]
pub fn global_timer_ns() -> u64 {
    device_only("global_timer_ns")
}

/// A counter of the multiprocessor's clock cycles (NVIDIA `%clock64`, AMD `s_memtime`;
/// nanoseconds on the CPU backend), for timing short spans within one block. Counters of
/// different multiprocessors are not synchronised.
#[inline(always)]
pub fn clock64() -> u64 {
    device_only("clock64")
}

/// Suspends the calling thread for about `ns` nanoseconds (NVIDIA `nanosleep`, which may
/// wake up to twice as late or early; AMD `s_sleep` until the time has passed; the CPU
/// backend's thread sleeps, giving its core to other threads). Use it to back off in a
/// wait loop: a sleeping thread stops polling memory.
#[inline(always)]
pub fn nanosleep(ns: u32) {
    let _ = ns;
    device_only("nanosleep")
}

/// Records a user event in the rank's trace: `id` (what happened, yours to number) and
/// `value` (a payload: a count, an index, a peer), with the device clock, the block and
/// the thread. The events appear on the rank's timeline of an `IRIS_TRACE` run (one
/// row per block) inside the launch that made them; `iris-trace summary` counts them by
/// id.
///
/// Built in only with the `trace-events` feature of `iris`: without it the call
/// compiles to nothing (the same code as without the call). With it, a kernel that
/// traces takes two hidden arguments (the rank's trace buffer and the launch), and an
/// event costs one load and a branch when the run is not traced, and one atomic add,
/// a clock read and four 8-byte stores when it is. Each block keeps its latest
/// `IRIS_TRACE_EVENTS` events (default 256); older ones are overwritten and counted.
#[inline(always)]
pub fn trace_event(id: u32, value: u64) {
    let _ = (id, value);
    device_only("trace_event")
}
