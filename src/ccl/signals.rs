//! The device-side barrier's protocol: a symmetric signal buffer, per-(slot, peer) epoch
//! flags, and a wait bounded in time. Its functions are the device library
//! [`barrier`](crate::ccl::barrier).
//!
//! Every rank owns a copy of the signal buffer (`u64` words):
//!
//! | words | holds |
//! |---|---|
//! | `0` | `0`, or `1 + r` once a wait gave up on rank `r` (sticky: the communicator is then broken) |
//! | `1`, `2` | the epoch and the slot of that wait (on every copy the giving-up rank broke) |
//! | `3` | the longest any wait of this rank took, in nanoseconds (local only) |
//! | `4 + slot` (`slot < 128`) | how many threads of the block using `slot` finished (local only) |
//! | `132 + slot` | the last epoch barrier `slot` completed on this rank (local only) |
//! | `260 + slot * world + peer` | the latest epoch at which `peer` arrived at barrier `slot` |
//!
//! Epochs are counted on the device: a kernel reads its slot's last epoch on entry, meets
//! the epochs after it, and its block's last thread records the last one it met on exit.
//! Every rank launches the same kernels in the same order with the same slots, so every
//! rank counts the same epochs, and a captured graph replayed many times meets new epochs
//! each time (the host passes none).
//!
//! A rank arrives at barrier `slot` for epoch `e` by one `Release`/`System` fence, then
//! storing `e` into word `260 + slot * world + me` of every rank's copy (`Relaxed`,
//! `System`: one fence for all the stores, not one each), and waits by polling
//! its own copy's row for `slot` (`Relaxed`, `System`) until every peer's word is at least
//! `e`, then one `Acquire`/`System` fence. Epochs only grow, and a rank cannot pass epoch
//! `e + 1` before every peer arrived at `e`, so a word never skips an epoch another rank
//! still waits for. Waiting polls local memory only: the peers push.
//!
//! A wait also gives up when the world aborts (`world_aborted`: a rank failed), within a
//! millisecond: the abort word is host memory, read once a millisecond a waiting thread
//! (read at every poll by many waiting threads, it slowed a GEMM beside them 25-30 times).
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

/// Wraps an inline module in `#[iris::kernels(uses(iris::ccl::barrier))]`: its kernels can
/// call the device-side barrier's functions (see [`barrier`](crate::ccl::barrier)) to
/// synchronise every rank without a host round trip.
///
/// ```no_run
/// iris::ccl::kernels_with_barrier! {
///     pub mod ring {
///         use iris::prelude::*;
///
///         #[kernel]
///         pub fn step(outbox: *const f32, inbox: Symmetric<f32>, signals: Symmetric<u64>, me: u32, world: u32, timeout_ns: u64) {
///             let slot = block_idx_x();
///             // This kernel's two barriers use the slot's next two epochs.
///             let epoch = ccl_epoch(signals, slot, me) + 1;
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
///             // Then it records the slot's last epoch.
///             if ccl_block_done(signals, slot, me) {
///                 ccl_barrier(signals, slot, epoch + 1, me, world, timeout_ns);
///                 ccl_epoch_done(signals, slot, me, epoch + 1);
///             }
///         }
///     }
/// }
/// // Once, on every rank (collective): the launch shape that keeps every rank's blocks
/// // resident, and the unit loaded:
/// //   let config = ccl.launch_config_for(&ring::step::UNIT, 256)?;
/// // Launch (at most config's blocks; fewer is fine), after a one-block barrier where
/// // ranks share a device (its blocks wait at entry; see `iris::ccl`):
/// //   ccl.barrier()?;
/// //   ring::step::launch(&iris, config, &outbox, &inbox, ccl.signals(),
/// //                      me, world, ccl.wait_limit_ns())
/// // After it completes on a rank, that rank's inbox holds what the previous rank sent.
/// # fn main() {}
/// ```
///
/// The same as writing `#[iris::kernels(uses(iris::ccl::barrier))]` on the module.
#[doc(hidden)]
#[macro_export]
macro_rules! __ccl_kernels_with_barrier {
    ($(#[$attr:meta])* $vis:vis mod $name:ident { $($body:tt)* }) => {
        $(#[$attr])*
        #[$crate::kernels(uses($crate::ccl::barrier))]
        $vis mod $name {
            $($body)*
        }
    };
}

#[doc(inline)]
pub use crate::__ccl_kernels_with_barrier as kernels_with_barrier;

/// Words of the signal buffer before the flags: the error words, one thread counter and
/// one epoch counter per slot.
pub(crate) const HEADER_WORDS: usize = 4 + 2 * MAX_SLOTS as usize;

/// Barrier slots at most (the thread counters the header has room for).
pub(crate) const MAX_SLOTS: u32 = 128;

/// The barrier as a kernel of its own, for [`Ccl::barrier`](super::Ccl::barrier).
#[iris::kernels(uses(crate::ccl::barrier))]
pub(crate) mod barrier_kernel {
    use iris::prelude::*;

    /// Every rank arrives at barrier slot 0 for its next epoch and waits for the others;
    /// one thread does it all.
    #[kernel]
    pub fn barrier(signals: Symmetric<u64>, me: u32, world: u32, timeout_ns: u64) {
        if thread_idx_x() == 0 && block_idx_x() == 0 {
            let epoch = ccl_epoch(signals, 0, me) + 1;
            ccl_barrier(signals, 0, epoch, me, world, timeout_ns);
            ccl_epoch_done(signals, 0, me, epoch);
        }
    }

    /// The first half of a split barrier: this rank arrives at slot 0 for its next epoch
    /// (recorded as the slot's last, so the `wait_arrived` that follows and every later
    /// barrier count from it) and goes on; one thread.
    #[kernel]
    pub fn arrive(signals: Symmetric<u64>, me: u32, world: u32) {
        if thread_idx_x() == 0 && block_idx_x() == 0 {
            let epoch = ccl_epoch(signals, 0, me) + 1;
            ccl_signal(signals, 0, epoch, me, world);
            ccl_epoch_done(signals, 0, me, epoch);
        }
    }

    /// The second half: waits until every rank arrived at slot 0 for this rank's last
    /// epoch (its `arrive`); one thread.
    #[kernel]
    pub fn wait_arrived(signals: Symmetric<u64>, me: u32, world: u32, timeout_ns: u64) {
        if thread_idx_x() == 0 && block_idx_x() == 0 {
            let epoch = ccl_epoch(signals, 0, me);
            ccl_wait(signals, 0, epoch, me, world, timeout_ns);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::barrier_kernel;
    use iris_device::abi::TargetKind;

    /// The PTX of kernel `name` in the barrier unit's `sm_90` object (PTX is text).
    fn ptx_of(name: &str) -> String {
        let unit = &barrier_kernel::arrive::UNIT;
        let object = unit
            .objects_of(TargetKind::Nvptx)
            .find(|o| o.target == "sm_90")
            .expect("the barrier unit has an sm_90 object");
        let text = std::str::from_utf8(object.bytes).expect("PTX is text");
        let start = text
            .find(&format!(".entry {name}("))
            .unwrap_or_else(|| panic!("no entry `{name}` in the PTX"));
        let end = text[start..].find("\n}").expect("the entry ends") + start;
        text[start..end].to_string()
    }

    #[test]
    fn arriving_fences_once_for_every_rank_s_copy() {
        // `arrive` is `ccl_signal` alone (no wait, whose acquires are fences too before
        // LLVM 22): one fence before the loop that stores the epoch into every rank's
        // copy (the loop is unrolled, so a fence in it would show as several).
        let ptx = ptx_of("arrive");
        let fences = ptx
            .lines()
            .filter(|l| l.contains("fence.") && l.contains(".sys"))
            .count();
        assert_eq!(fences, 1, "{fences} system fences:\n{ptx}");
        assert!(!ptx.contains("st.release"), "a release store each:\n{ptx}");
    }

    #[test]
    fn waiting_polls_relaxed_and_fences_once_after() {
        // `wait_arrived` is `ccl_wait` alone: relaxed polls, one acquire fence once every
        // rank is seen (the give-up path's release stores are in a function of its own,
        // `ccl_give_up`, inlined: a loop over the ranks' copies, one fence before it).
        let ptx = ptx_of("wait_arrived");
        assert!(
            !ptx.contains("ld.acquire"),
            "an acquire load a poll:\n{ptx}"
        );
        assert!(
            ptx.contains("ld.relaxed.sys") || ptx.contains("ld.volatile"),
            "no relaxed poll:\n{ptx}"
        );
        assert!(
            ptx.contains("fence.acq_rel.sys"),
            "no acquire fence:\n{ptx}"
        );
    }
}
