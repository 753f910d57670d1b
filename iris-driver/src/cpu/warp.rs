//! The warp of the CPU backend: 32 consecutive threads of a block (x fastest) that
//! exchange values behind `shfl*`, `ballot`, `any`, `all`, `warp_sync` and the warp
//! reductions. Each exchange is a barrier of the warp: every lane writes its value, waits
//! for the others, reads the one it asked for, and waits again before the slots are
//! reused. A lane that has returned from the kernel no longer counts.

use core::ffi::c_void;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use super::barrier::BlockBarrier;

/// Lanes per warp (the compiler's `warp_size()` on the CPU target).
pub(crate) const WARP_LANES: usize = 32;

/// One warp's exchange slots and barrier.
#[derive(Debug)]
pub(crate) struct Warp {
    slots: [AtomicU64; WARP_LANES],
    lanes: AtomicUsize,
    barrier: BlockBarrier,
}

impl Warp {
    /// A warp of `lanes` threads.
    pub(crate) fn new(lanes: usize) -> Self {
        Warp {
            slots: std::array::from_fn(|_| AtomicU64::new(0)),
            lanes: AtomicUsize::new(lanes),
            barrier: BlockBarrier::new(lanes),
        }
    }

    /// The warps of a block of `threads` threads (the last one short when `threads` is
    /// not a multiple of 32).
    pub(crate) fn for_block(threads: usize) -> Vec<Warp> {
        (0..threads.div_ceil(WARP_LANES))
            .map(|w| Warp::new(Self::lanes_of(threads, w)))
            .collect()
    }

    fn lanes_of(threads: usize, warp: usize) -> usize {
        (threads - warp * WARP_LANES).min(WARP_LANES)
    }

    /// Starts a new block; only called while no lane is inside an exchange.
    pub(crate) fn reset(warps: &[Warp], threads: usize) {
        for (w, warp) in warps.iter().enumerate() {
            let lanes = Self::lanes_of(threads, w);
            warp.lanes.store(lanes, Ordering::Relaxed);
            warp.barrier.reset(lanes);
        }
    }

    /// A lane has returned from the kernel: stop waiting for it.
    pub(crate) fn leave(&self) {
        self.barrier.leave();
    }

    fn shuffle(&self, lane: usize, value: u64, src: usize) -> u64 {
        self.slots[lane].store(value, Ordering::Relaxed);
        self.barrier.wait();
        let got = if src < self.lanes.load(Ordering::Relaxed) {
            self.slots[src].load(Ordering::Relaxed)
        } else {
            value
        };
        self.barrier.wait();
        got
    }

    fn ballot(&self, lane: usize, predicate: bool) -> u64 {
        self.slots[lane].store(u64::from(predicate), Ordering::Relaxed);
        self.barrier.wait();
        let lanes = self.lanes.load(Ordering::Relaxed);
        let bits = (0..lanes).fold(0u64, |bits, i| {
            bits | ((self.slots[i].load(Ordering::Relaxed) & 1) << i)
        });
        self.barrier.wait();
        bits
    }
}

/// One thread's place in its warp: what a launch context's `warp` points to.
#[derive(Debug)]
pub(crate) struct WarpSeat<'a> {
    /// The warp.
    pub warp: &'a Warp,
    /// The lane, `0..32`.
    pub lane: usize,
}

/// The `warp_shuffle` entry of a launch context whose `warp` is a [`WarpSeat`].
///
/// # Safety
/// `seat` points to a live `WarpSeat`.
pub(crate) unsafe extern "C" fn warp_shuffle(seat: *mut c_void, value: u64, src_lane: u32) -> u64 {
    // SAFETY: guaranteed by the caller.
    let seat = unsafe { &*(seat as *const WarpSeat) };
    seat.warp.shuffle(seat.lane, value, src_lane as usize)
}

/// The `warp_ballot` entry of a launch context whose `warp` is a [`WarpSeat`].
///
/// # Safety
/// `seat` points to a live `WarpSeat`.
pub(crate) unsafe extern "C" fn warp_ballot(seat: *mut c_void, predicate: u32) -> u64 {
    // SAFETY: guaranteed by the caller.
    let seat = unsafe { &*(seat as *const WarpSeat) };
    seat.warp.ballot(seat.lane, predicate != 0)
}

/// The `warp_shuffle` entry for kernels without warp operations (their threads run one
/// after another, with no warp to exchange with): every lane sees its own value.
pub(crate) unsafe extern "C" fn lone_shuffle(_seat: *mut c_void, value: u64, _src: u32) -> u64 {
    value
}

/// The `warp_ballot` entry for kernels without warp operations.
pub(crate) unsafe extern "C" fn lone_ballot(_seat: *mut c_void, predicate: u32) -> u64 {
    u64::from(predicate != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lanes_exchange_and_vote_in_a_short_warp() {
        let threads = 20;
        let warps = Warp::for_block(threads);
        assert_eq!(warps.len(), 1);
        let results: Vec<(u64, u64, u64)> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads)
                .map(|lane| {
                    let warp = &warps[0];
                    s.spawn(move || {
                        let down = warp.shuffle(lane, lane as u64 * 10, lane + 1);
                        let xor = warp.shuffle(lane, lane as u64, lane ^ 16);
                        let ballot = warp.ballot(lane, lane % 3 == 0);
                        warp.leave();
                        (down, xor, ballot)
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let want_ballot = (0..threads as u64)
            .filter(|l| l % 3 == 0)
            .fold(0, |b, l| b | 1 << l);
        for (lane, (down, xor, ballot)) in results.into_iter().enumerate() {
            let l = lane as u64;
            // Lane 19 reads lane 20, which has no thread: its own value.
            assert_eq!(
                down,
                if lane + 1 < threads {
                    (l + 1) * 10
                } else {
                    l * 10
                }
            );
            assert_eq!(xor, if (lane ^ 16) < threads { l ^ 16 } else { l });
            assert_eq!(ballot, want_ballot);
        }
    }
}
