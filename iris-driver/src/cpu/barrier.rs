//! The block barrier behind `sync_threads` on the CPU.
//!
//! Like a GPU block barrier, a thread that has returned from the kernel no longer counts:
//! [`BlockBarrier::leave`] lowers the number of threads the barrier waits for, so threads
//! that exit early do not hang the rest of their block.

use core::ffi::c_void;
use std::sync::{Condvar, Mutex};

use crate::sync::lock;

#[derive(Debug)]
struct State {
    participants: usize,
    arrived: usize,
    generation: u64,
}

/// A reusable barrier for the threads of one block.
#[derive(Debug)]
pub(crate) struct BlockBarrier {
    state: Mutex<State>,
    cv: Condvar,
}

impl BlockBarrier {
    /// A barrier for `participants` threads.
    pub(crate) fn new(participants: usize) -> Self {
        Self {
            state: Mutex::new(State {
                participants,
                arrived: 0,
                generation: 0,
            }),
            cv: Condvar::new(),
        }
    }

    /// Starts a new block of `participants` threads. Only called while no thread is
    /// inside the barrier.
    pub(crate) fn reset(&self, participants: usize) {
        let mut s = lock(&self.state);
        s.participants = participants;
        s.arrived = 0;
    }

    /// Returns once every participant still running has called `wait`.
    pub(crate) fn wait(&self) {
        let mut s = lock(&self.state);
        s.arrived += 1;
        if s.arrived >= s.participants {
            Self::release(&mut s, &self.cv);
            return;
        }
        let generation = s.generation;
        while s.generation == generation {
            s = match self.cv.wait(s) {
                Ok(g) => g,
                Err(poisoned) => poisoned.into_inner(),
            };
        }
    }

    /// A thread of the block has finished: stop waiting for it.
    pub(crate) fn leave(&self) {
        let mut s = lock(&self.state);
        s.participants = s.participants.saturating_sub(1);
        if s.arrived > 0 && s.arrived >= s.participants {
            Self::release(&mut s, &self.cv);
        }
    }

    fn release(s: &mut State, cv: &Condvar) {
        s.arrived = 0;
        s.generation = s.generation.wrapping_add(1);
        cv.notify_all();
    }
}

/// The `barrier` entry of a [`CpuLaunchContext`](iris_device::abi::CpuLaunchContext)
/// whose `barrier_state` is a [`BlockBarrier`].
///
/// # Safety
/// `state` points to a live `BlockBarrier`.
pub(crate) unsafe extern "C" fn block_barrier(state: *mut c_void) {
    // SAFETY: guaranteed by the caller.
    let barrier = unsafe { &*(state as *const BlockBarrier) };
    barrier.wait();
}

/// The `barrier` entry for kernels that do not use the block barrier: their threads run
/// one after another, so there is nothing to wait for.
pub(crate) unsafe extern "C" fn no_barrier(_state: *mut c_void) {}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn waits_for_all_and_tolerates_early_exit() {
        let n = 8;
        let barrier = BlockBarrier::new(n);
        let phase = AtomicUsize::new(0);
        std::thread::scope(|s| {
            for t in 0..n {
                let (barrier, phase) = (&barrier, &phase);
                s.spawn(move || {
                    if t == 0 {
                        barrier.leave(); // exits before any barrier
                        return;
                    }
                    for round in 0..100 {
                        phase.fetch_add(1, Ordering::SeqCst);
                        barrier.wait();
                        assert!(phase.load(Ordering::SeqCst) >= (round + 1) * (n - 1));
                        barrier.wait();
                    }
                    barrier.leave();
                });
            }
        });
        assert_eq!(phase.load(Ordering::SeqCst), 100 * (n - 1));
    }
}
