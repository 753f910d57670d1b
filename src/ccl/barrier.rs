//! The device-side barrier: a symmetric signal buffer, per-(slot, peer) epoch flags, and a
//! wait bounded in time.
//!
//! Every rank owns a copy of the signal buffer (`u64` words):
//!
//! | words | holds |
//! |---|---|
//! | `0` | `0`, or `1 + r` once a wait gave up on rank `r` (sticky: the communicator is then broken) |
//! | `1`, `2` | the epoch and the slot of that wait (on every copy the giving-up rank broke) |
//! | `3` | the longest any wait of this rank took, in nanoseconds (local only) |
//! | `4 + slot` (`slot < 128`) | how many threads of the block using `slot` finished (local only) |
//! | `132 + slot * world + peer` | the latest epoch at which `peer` arrived at barrier `slot` |
//!
//! A rank arrives at barrier `slot` for epoch `e` by storing `e` into word
//! `132 + slot * world + me` of every rank's copy (`Release`, `System`), and waits by polling
//! its own copy's row for `slot` (`Acquire`, `System`) until every peer's word is at least
//! `e`. Epochs only grow, and a rank cannot pass epoch `e + 1` before every peer arrived at
//! `e`, so a word never skips an epoch another rank still waits for. Waiting polls local
//! memory only: the peers push.
//!
//! A wait is bounded in time, not in polls: it reads the device clock
//! (`global_timer_ns`) and gives up `timeout_ns` after it started (the communicator's
//! wait limit, below the world's `IRIS_TIMEOUT`, so the device gives up first and names
//! the rank). After its first polls it backs off with `nanosleep` between polls: a GPU
//! block stops hammering memory, and on the CPU backend the waiting thread gives its core
//! to the ranks it waits for. A rank that gives up records the missing rank, the epoch and
//! the slot in its own copy and in every other rank's (so that they give up at once
//! instead of waiting out their own limit, and report the same barrier; the first rank to
//! break a copy writes it) and the host reports it from
//! [`Ccl::synchronize`](super::Ccl::synchronize).
//!
//! A spinning barrier is only correct while every block it waits for is running:
//! [`Ccl`](super::Ccl) sizes launches so that all ranks' blocks on a device are resident
//! at once, and refuses more ranks on a device than it has hardware queues (see
//! `residency.rs`).

/// Wraps an inline module in `#[iris::kernels]` and adds the device-side barrier's functions
/// to it, so that its kernels can synchronise every rank without a host round trip.
///
/// The module gets these device functions (`signals` is [`Ccl::signals`](crate::ccl::Ccl::signals),
/// launched as a `Symmetric<u64>`; `timeout_ns` is [`Ccl::wait_limit_ns`](crate::ccl::Ccl::wait_limit_ns);
/// epochs come from [`Ccl::reserve_epochs`](crate::ccl::Ccl::reserve_epochs); a barrier slot
/// belongs to one block at a time, so use the block index, below
/// [`Ccl::slots`](crate::ccl::Ccl::slots)):
///
/// - `ccl_signal(signals, slot: u32, epoch: u64, me: u32, world: u32)`: this rank arrived at
///   barrier `slot` for `epoch` (a `Release`/`System` store into every rank's copy);
/// - `ccl_wait(signals, slot, epoch, me, world, timeout_ns: u64) -> u32`: polls this rank's
///   copy (`Acquire`/`System`) until every rank arrived at `slot` for `epoch`; returns `0`,
///   or `1 + r` if rank `r` had not arrived `timeout_ns` after the wait began (or another
///   rank already gave up: the communicator is broken and every later wait returns at
///   once);
/// - `ccl_barrier(signals, slot, epoch, me, world, timeout_ns) -> u32`: `ccl_signal` then
///   `ccl_wait`;
/// - `ccl_block_done(signals, slot, me) -> bool`: counts this thread as finished and returns
///   `true` in exactly one thread of the block, the last (`AcqRel`: it has seen every other
///   thread's writes, so its `ccl_signal` publishes the whole block's).
///
/// Any number of threads may wait; one signals. Because a waiting thread must never wait
/// for a later thread of its own block (on the CPU backend a block's threads without
/// `sync_threads()` run one after another), a block meets a barrier in one of two ways:
///
/// ```no_run
/// iris::ccl::kernels_with_barrier! {
///     pub mod ring {
///         use iris::prelude::*;
///
///         #[kernel]
///         pub fn step(outbox: *const f32, inbox: Symmetric<f32>, signals: Symmetric<u64>, me: u32, world: u32, epoch: u64, timeout_ns: u64) {
///             let slot = block_idx_x();
///             // Entry (nothing of this kernel to publish yet): one thread signals, all wait.
///             if thread_idx_x() == 0 {
///                 ccl_signal(signals, slot, epoch, me, world);
///             }
///             if ccl_wait(signals, slot, epoch, me, world, timeout_ns) != 0 {
///                 return; // a peer never arrived; the host reports it
///             }
///             // Every rank's earlier work is done (the next rank no longer reads its inbox):
///             // send this thread's element there.
///             let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as usize;
///             iris::store(inbox.add(i), unsafe { *outbox.add(i) }, (me + 1) % world);
///             // Exit (publish this block's writes): the block's last thread signals and waits.
///             if ccl_block_done(signals, slot, me) {
///                 ccl_barrier(signals, slot, epoch + 1, me, world, timeout_ns);
///             }
///         }
///     }
/// }
/// // Once, on every rank (collective): the launch shape that keeps every rank's blocks
/// // resident, and the unit loaded:
/// //   let config = ccl.launch_config_for(&ring::step::UNIT, 256)?;
/// // Launch (at most config's blocks; fewer is fine):
/// //   ring::step::launch(&iris, config, &outbox, &inbox, ccl.signals(),
/// //                      me, world, ccl.reserve_epochs(2), ccl.wait_limit_ns())
/// // After it completes on a rank, that rank's inbox holds what the previous rank sent.
/// # fn main() {}
/// ```
///
/// Before the first launch of such a kernel, every rank calls
/// [`Ccl::launch_config_for`](crate::ccl::Ccl::launch_config_for) with its unit and block
/// size (collective): it loads the unit where no kernel waits for a peer (loading a module
/// while a peer's kernel spins at a barrier for this rank can deadlock on GPUs), and gives
/// the most blocks per launch with which every rank's blocks are resident at once. Launch
/// with at most that many blocks of that many threads.
///
/// The added functions name everything by its full `iris::` path (the kernel macros need
/// the crate to be a dependency named `iris`), so the module imports only what its own
/// kernels use.
///
/// Or meet the barrier with the block barrier: `sync_threads()`, thread 0 calls
/// `ccl_barrier` and writes the status to a `shared_array`, `sync_threads()`, every thread
/// reads the status. Both stay in the kernel's body: the kernel language records
/// `sync_threads()` and `shared_array` per function, so a device function must not call
/// them.
#[doc(hidden)]
#[macro_export]
macro_rules! __ccl_kernels_with_barrier {
    ($(#[$attr:meta])* $vis:vis mod $name:ident { $($body:tt)* }) => {
        $(#[$attr])*
        #[$crate::kernels]
        $vis mod $name {
            // Fully qualified, so that the module's own imports stay the user's.
            fn ccl_signal(signals: iris::prelude::Symmetric<u64>, slot: u32, epoch: u64, me: u32, world: u32) {
                let cell = signals.add((132 + slot as u64 * world as u64 + me as u64) as usize);
                for peer in 0..world {
                    iris::atomic_store(cell, epoch, peer, iris::prelude::Ordering::Release, iris::prelude::Scope::System);
                }
            }

            // This rank's copy first, then every other rank's but the missing one's: on each
            // copy not yet broken, the missing rank, then the slot, then the epoch (`Release`:
            // a rank told to stop waits for it, and so sees the slot too).
            fn ccl_give_up(signals: iris::prelude::Symmetric<u64>, slot: u32, epoch: u64, me: u32, world: u32, missing: u32) {
                let code = missing as u64 + 1;
                for i in 0..world {
                    let peer = (me + i) % world;
                    if peer != missing {
                        let first = iris::atomic_cas(signals, 0, code, peer, iris::prelude::Ordering::Relaxed, iris::prelude::Scope::System);
                        if first == 0 {
                            iris::atomic_store(signals.add(2), slot as u64, peer, iris::prelude::Ordering::Relaxed, iris::prelude::Scope::System);
                            iris::atomic_store(signals.add(1), epoch, peer, iris::prelude::Ordering::Release, iris::prelude::Scope::System);
                        }
                    }
                }
            }

            // Told to stop: waits (at most `timeout_ns`) until the rank that gave up wrote the
            // epoch (epochs start at 1), so that the host reads the real epoch and slot.
            fn ccl_told_to_stop(signals: iris::prelude::Symmetric<u64>, me: u32, timeout_ns: u64) {
                let start = iris::global_timer_ns();
                while iris::atomic_load(signals.add(1), me, iris::prelude::Ordering::Acquire, iris::prelude::Scope::System) == 0 {
                    if iris::global_timer_ns() - start >= timeout_ns {
                        return;
                    }
                    iris::nanosleep(256);
                }
            }

            // Polls the row of `slot` until every rank arrived at `epoch`: the first 1024 polls
            // of each peer back to back, then with a 256 ns sleep between polls, each of which
            // also checks whether another rank gave up and whether `timeout_ns` has passed
            // since the wait began. Records the wait's time in word 3 when it is the longest
            // yet (a read first, so a long-stable maximum costs no atomic).
            fn ccl_wait(signals: iris::prelude::Symmetric<u64>, slot: u32, epoch: u64, me: u32, world: u32, timeout_ns: u64) -> u32 {
                let row = signals.add((132 + slot as u64 * world as u64) as usize);
                let start = iris::global_timer_ns();
                for peer in 0..world {
                    let cell = row.add(peer as usize);
                    let mut polls = 0u64;
                    while iris::atomic_load(cell, me, iris::prelude::Ordering::Acquire, iris::prelude::Scope::System) < epoch {
                        polls += 1;
                        if polls > 1024 {
                            let broken = iris::atomic_load(signals, me, iris::prelude::Ordering::Relaxed, iris::prelude::Scope::System);
                            if broken != 0 {
                                ccl_told_to_stop(signals, me, timeout_ns);
                                return broken as u32;
                            }
                            if iris::global_timer_ns() - start >= timeout_ns {
                                ccl_give_up(signals, slot, epoch, me, world, peer);
                                return peer + 1;
                            }
                            iris::nanosleep(256);
                        }
                    }
                }
                let waited = iris::global_timer_ns() - start;
                let longest = signals.add(3);
                if waited > iris::atomic_load(longest, me, iris::prelude::Ordering::Relaxed, iris::prelude::Scope::System) {
                    iris::atomic_max(longest, waited, me, iris::prelude::Ordering::Relaxed, iris::prelude::Scope::System);
                }
                0
            }

            fn ccl_block_done(signals: iris::prelude::Symmetric<u64>, slot: u32, me: u32) -> bool {
                let counter = signals.add((4 + slot as u64) as usize);
                let threads = (iris::block_dim_x() * iris::block_dim_y() * iris::block_dim_z()) as u64;
                let before = iris::atomic_add(counter, 1, me, iris::prelude::Ordering::AcqRel, iris::prelude::Scope::System);
                if before + 1 == threads {
                    iris::atomic_store(counter, 0, me, iris::prelude::Ordering::Relaxed, iris::prelude::Scope::System);
                    return true;
                }
                false
            }

            fn ccl_barrier(signals: iris::prelude::Symmetric<u64>, slot: u32, epoch: u64, me: u32, world: u32, timeout_ns: u64) -> u32 {
                ccl_signal(signals, slot, epoch, me, world);
                ccl_wait(signals, slot, epoch, me, world, timeout_ns)
            }

            $($body)*
        }
    };
}

#[doc(inline)]
pub use crate::__ccl_kernels_with_barrier as kernels_with_barrier;

/// Words of the signal buffer before the flags: the error words and one thread counter
/// per slot.
pub(crate) const HEADER_WORDS: usize = 4 + MAX_SLOTS as usize;

/// Barrier slots at most (the thread counters the header has room for).
pub(crate) const MAX_SLOTS: u32 = 128;

kernels_with_barrier! {
    /// The barrier as a kernel of its own, for [`Ccl::barrier`](super::Ccl::barrier).
    pub(crate) mod barrier_kernel {
        use iris::prelude::*;

        /// Every rank arrives at barrier slot 0 for `epoch` and waits for the others; one
        /// thread does it all.
        #[kernel]
        pub fn barrier(signals: Symmetric<u64>, me: u32, world: u32, epoch: u64, timeout_ns: u64) {
            if thread_idx_x() == 0 && block_idx_x() == 0 {
                ccl_barrier(signals, 0, epoch, me, world, timeout_ns);
            }
        }
    }
}
