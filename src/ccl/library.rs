//! The collectives' device libraries: the device-side [`barrier`] and the [`reduction`]
//! helpers.

/// The device-side barrier's functions, a device library: kernels call them after naming
/// it, `#[iris::kernels(uses(iris::ccl::barrier))]` (or through
/// [`kernels_with_barrier!`](crate::ccl::kernels_with_barrier)). The protocol, the signal
/// buffer's layout and how to launch such kernels are described in [`crate::ccl`]'s
/// "Using the barrier in your own kernels".
///
/// `signals` is [`Ccl::signals`](crate::ccl::Ccl::signals), launched as a `Symmetric<u64>`;
/// `timeout_ns` is [`Ccl::wait_limit_ns`](crate::ccl::Ccl::wait_limit_ns); a barrier slot
/// belongs to one block at a time, so use the block index, below
/// [`Ccl::slots`](crate::ccl::Ccl::slots). Epochs are counted on the device, per slot
/// ([`ccl_epoch`](barrier::ccl_epoch), [`ccl_epoch_done`](barrier::ccl_epoch_done)), so a
/// kernel's launch replayed from a captured graph meets fresh epochs every time.
///
/// Any number of threads may wait; one signals. Because a waiting thread must never wait
/// for a later thread of its own block (on the CPU backend a block's threads without
/// `sync_threads()` run one after another), a block meets a barrier in one of two ways:
/// thread 0 signals and every thread waits on entry (nothing to publish yet), and the
/// block's last thread ([`ccl_block_done`](barrier::ccl_block_done)) signals and waits on
/// exit; or with the block barrier: `sync_threads()`, thread 0 calls `ccl_barrier` and
/// writes the status to a `shared_array`, `sync_threads()`, every thread reads it.
#[iris::device]
pub mod barrier {
    use iris::prelude::*;

    /// The last epoch barrier `slot` completed on this rank (word `132 + slot` of this
    /// rank's copy; 0 before the first): a kernel's barriers at this slot use the epochs
    /// after it, in order.
    pub fn ccl_epoch(signals: Symmetric<u64>, slot: u32, me: u32) -> u64 {
        let counter = signals.add((132 + slot as u64) as usize);
        atomic_load(counter, me, Ordering::Relaxed, Scope::System)
    }

    /// Records `epoch` as the last epoch barrier `slot` completed on this rank: once per
    /// block, by the thread that met its last barrier, after it (the next kernel at this
    /// slot starts after `epoch`).
    pub fn ccl_epoch_done(signals: Symmetric<u64>, slot: u32, me: u32, epoch: u64) {
        let counter = signals.add((132 + slot as u64) as usize);
        atomic_store(counter, epoch, me, Ordering::Relaxed, Scope::System);
    }

    /// This rank arrived at barrier `slot` for `epoch`: one `Release`/`System` fence, then
    /// a `Relaxed`/`System` store of the epoch into word `260 + slot * world + me` of every
    /// rank's copy (a release pattern for each: a waiter that reads the epoch with
    /// `Acquire` sees every write this thread saw before the fence). One fence, not one a
    /// peer: a system-scope release is the costly part (NVIDIA: a `fence.acq_rel.sys`;
    /// AMD: a write-back of the L2), and a store-release to each copy would pay it
    /// `world` times.
    pub fn ccl_signal(signals: Symmetric<u64>, slot: u32, epoch: u64, me: u32, world: u32) {
        let cell = signals.add((260 + slot as u64 * world as u64 + me as u64) as usize);
        fence(Ordering::Release, Scope::System);
        for peer in 0..world {
            atomic_store(cell, epoch, peer, Ordering::Relaxed, Scope::System);
        }
    }

    /// Records that `missing` never arrived: on this rank's copy first, then every other
    /// rank's but the missing one's, on each copy not yet broken, the missing rank, then
    /// the slot, then the epoch (`Release`: a rank told to stop waits for it, and so sees
    /// the slot too).
    pub fn ccl_give_up(
        signals: Symmetric<u64>,
        slot: u32,
        epoch: u64,
        me: u32,
        world: u32,
        missing: u32,
    ) {
        let code = missing as u64 + 1;
        for i in 0..world {
            let peer = (me + i) % world;
            if peer != missing {
                let first = atomic_cas(signals, 0, code, peer, Ordering::Relaxed, Scope::System);
                if first == 0 {
                    atomic_store(
                        signals.add(2),
                        slot as u64,
                        peer,
                        Ordering::Relaxed,
                        Scope::System,
                    );
                    atomic_store(
                        signals.add(1),
                        epoch,
                        peer,
                        Ordering::Release,
                        Scope::System,
                    );
                }
            }
        }
    }

    /// Told to stop: waits (at most `timeout_ns`) until the rank that gave up wrote the
    /// epoch (epochs start at 1), so that the host reads the real epoch and slot (relaxed
    /// polls, then an acquire fence, as in [`ccl_wait`]).
    pub fn ccl_told_to_stop(signals: Symmetric<u64>, me: u32, timeout_ns: u64) {
        let start = global_timer_ns();
        while atomic_load(signals.add(1), me, Ordering::Relaxed, Scope::System) == 0 {
            if global_timer_ns() - start >= timeout_ns {
                return;
            }
            nanosleep(256);
        }
        fence(Ordering::Acquire, Scope::System);
    }

    /// Polls this rank's copy (`Relaxed`/`System` loads, then one `Acquire`/`System` fence
    /// once every rank's word is seen: the acquire pattern for each, without an acquire's
    /// cache invalidation at every poll: NVIDIA's L1, AMD's `buffer_inv` of the L2, which
    /// other kernels on the device would pay for) until every rank arrived at `slot` for
    /// `epoch`; returns `0`, or `1 + r` if rank `r` had not arrived `timeout_ns` after the
    /// wait began (or another rank already gave up: the communicator is broken and every
    /// later wait returns at once). The first 1024 polls of each peer go back to back,
    /// then a 256 ns sleep separates polls, each of which also checks whether another rank
    /// gave up and whether the time is up, and once a millisecond whether the world
    /// aborted (host memory). Records the wait's time in word 3 when it is the longest
    /// yet (a read first, so a long-stable maximum costs no atomic).
    pub fn ccl_wait(
        signals: Symmetric<u64>,
        slot: u32,
        epoch: u64,
        me: u32,
        world: u32,
        timeout_ns: u64,
    ) -> u32 {
        let row = signals.add((260 + slot as u64 * world as u64) as usize);
        let start = global_timer_ns();
        let mut abort_at = 0u64;
        for peer in 0..world {
            let cell = row.add(peer as usize);
            let mut polls = 0u64;
            while atomic_load(cell, me, Ordering::Relaxed, Scope::System) < epoch {
                polls += 1;
                if polls > 1024 {
                    let broken = atomic_load(signals, me, Ordering::Relaxed, Scope::System);
                    if broken != 0 {
                        ccl_told_to_stop(signals, me, timeout_ns);
                        return broken as u32;
                    }
                    // Past the limit, or another rank failed (the world aborted). The
                    // abort flag is host memory, read once a millisecond (as the
                    // language's `signal_wait_until` does): many threads reading it at
                    // every poll slow the device's other kernels.
                    let waited = global_timer_ns() - start;
                    let mut aborted = false;
                    if waited >= abort_at {
                        abort_at = waited + 1_000_000;
                        aborted = world_aborted(signals);
                    }
                    if waited >= timeout_ns || aborted {
                        ccl_give_up(signals, slot, epoch, me, world, peer);
                        return peer + 1;
                    }
                    nanosleep(256);
                }
            }
        }
        fence(Ordering::Acquire, Scope::System);
        let waited = global_timer_ns() - start;
        let longest = signals.add(3);
        if waited > atomic_load(longest, me, Ordering::Relaxed, Scope::System) {
            atomic_max(longest, waited, me, Ordering::Relaxed, Scope::System);
        }
        0
    }

    /// Counts this thread as finished and returns `true` in exactly one thread of the
    /// block, the last (`AcqRel`: it has seen every other thread's writes, so its
    /// `ccl_signal` publishes the whole block's).
    pub fn ccl_block_done(signals: Symmetric<u64>, slot: u32, me: u32) -> bool {
        let counter = signals.add((4 + slot as u64) as usize);
        let threads = (block_dim_x() * block_dim_y() * block_dim_z()) as u64;
        let before = atomic_add(counter, 1, me, Ordering::AcqRel, Scope::System);
        if before + 1 == threads {
            atomic_store(counter, 0, me, Ordering::Relaxed, Scope::System);
            return true;
        }
        false
    }

    /// The split barrier inside a launch of many blocks, first half (the fused GEMMs' own
    /// rows, in place of the one-thread `arrive` kernel before them): block 0's first
    /// thread arrives at slot 0's next epoch, where `done != 0` (every rank's work queued
    /// before this launch has finished). Pair it with [`ccl_grid_wait`] in the same
    /// launch.
    pub fn ccl_grid_arrive(signals: Symmetric<u64>, done: u32, me: u32, world: u32) {
        if done != 0 && block_idx_x() == 0 && thread_idx_x() == 0 {
            let epoch = ccl_epoch(signals, 0, me) + 1;
            ccl_signal(signals, 0, epoch, me, world);
            ccl_epoch_done(signals, 0, me, epoch);
        }
    }

    /// The second half, after each block's work, where `done != 0`: the block's first
    /// thread counts it in word `done` (a word of this rank's copy that is 0 between
    /// launches), and the launch's last block sets the count back to 0 and waits,
    /// bounded by `timeout_ns`, until every rank arrived at the epoch block 0 signalled
    /// (the count's `AcqRel` chain orders block 0's epoch before this read). So the work
    /// queued after the launch starts as soon as it ends, not after a one-block wait
    /// kernel, which a device starts only once every grid queued before it has started
    /// its blocks. Every block must get here, once.
    pub fn ccl_grid_wait(signals: Symmetric<u64>, done: u32, me: u32, world: u32, timeout_ns: u64) {
        if done != 0 && thread_idx_x() == 0 {
            let count = signals.add(done as usize);
            let before = atomic_add(count, 1u64, me, Ordering::AcqRel, Scope::Device);
            if before + 1 == grid_dim_x() as u64 {
                atomic_store(count, 0u64, me, Ordering::Relaxed, Scope::Device);
                let epoch = ccl_epoch(signals, 0, me);
                ccl_wait(signals, 0, epoch, me, world, timeout_ns);
            }
        }
    }

    /// A collective kernel's entry (every rank's earlier work on its stream, which wrote
    /// the inputs and last read the outputs, has finished): thread 0 of the block signals
    /// barrier slot `block_idx_x()` for the slot's next epoch, every thread waits. Whether
    /// to go on (`false`: a rank never arrived, the host reports it). Pair it with
    /// [`ccl_leave`].
    pub fn ccl_enter(signals: Symmetric<u64>, me: u32, world: u32, timeout_ns: u64) -> bool {
        let slot = block_idx_x();
        let epoch = ccl_epoch(signals, slot, me) + 1;
        if thread_idx_x() == 0 {
            ccl_signal(signals, slot, epoch, me, world);
        }
        ccl_wait(signals, slot, epoch, me, world, timeout_ns) == 0
    }

    /// A collective kernel's exit, after [`ccl_enter`]: the block's last thread to get
    /// here publishes the block's reads and writes and waits, at barrier slot
    /// `block_idx_x()` for the epoch after the entry's, until every rank's matching block
    /// did, then records the slot's epoch.
    pub fn ccl_leave(signals: Symmetric<u64>, me: u32, world: u32, timeout_ns: u64) {
        let slot = block_idx_x();
        let epoch = ccl_epoch(signals, slot, me) + 2;
        if ccl_block_done(signals, slot, me) {
            ccl_barrier(signals, slot, epoch, me, world, timeout_ns);
            ccl_epoch_done(signals, slot, me, epoch);
        }
    }

    /// [`ccl_enter`] for a kernel whose threads work together (block barriers, warp
    /// operations): every thread of the block calls it, thread 0 meets the barrier and
    /// writes the result to `status` (a one-word `shared_array` of the kernel), and every
    /// thread returns the same, so a split-warp or split-block check can rely on it.
    /// Pair it with [`ccl_block_leave`].
    pub fn ccl_block_enter(
        signals: Symmetric<u64>,
        status: *mut u32,
        me: u32,
        world: u32,
        timeout_ns: u64,
    ) -> bool {
        if thread_idx_x() == 0 {
            let slot = block_idx_x();
            let epoch = ccl_epoch(signals, slot, me) + 1;
            unsafe { *status = ccl_barrier(signals, slot, epoch, me, world, timeout_ns) };
        }
        sync_threads();
        unsafe { *status == 0 }
    }

    /// [`ccl_leave`] after [`ccl_block_enter`]: every thread of the block calls it; once
    /// they all have (a block barrier), thread 0 publishes the block's reads and writes and
    /// waits until every rank's matching block did, then records the slot's epoch.
    pub fn ccl_block_leave(signals: Symmetric<u64>, me: u32, world: u32, timeout_ns: u64) {
        sync_threads();
        if thread_idx_x() == 0 {
            let slot = block_idx_x();
            let epoch = ccl_epoch(signals, slot, me) + 2;
            ccl_barrier(signals, slot, epoch, me, world, timeout_ns);
            ccl_epoch_done(signals, slot, me, epoch);
        }
    }

    /// Whether this rank's communicator is broken: a wait gave up (word 0 of its copy;
    /// sticky). Any thread may ask; threads that must agree use [`ccl_block_broken`].
    pub fn ccl_broken(signals: Symmetric<u64>, me: u32) -> bool {
        atomic_load(signals, me, Ordering::Relaxed, Scope::System) != 0
    }

    /// [`ccl_broken`], one answer for the whole block: thread 0 reads the word and writes
    /// it to `status` (a one-word `shared_array` of the kernel), and after a block
    /// barrier every thread returns it. Every thread of the block calls it. A kernel that
    /// writes into peers' memory after a barrier kernel (an earlier launch on the stream)
    /// checks it first: a rank whose wait gave up writes nothing into the rank it gave up
    /// on, which may only be late and using its buffers for something else.
    pub fn ccl_block_broken(signals: Symmetric<u64>, status: *mut u32, me: u32) -> bool {
        if thread_idx_x() == 0 {
            let broken = if ccl_broken(signals, me) { 1 } else { 0 };
            unsafe { *status = broken };
        }
        sync_threads();
        unsafe { *status != 0 }
    }

    /// `ccl_signal` then `ccl_wait`.
    pub fn ccl_barrier(
        signals: Symmetric<u64>,
        slot: u32,
        epoch: u64,
        me: u32,
        world: u32,
        timeout_ns: u64,
    ) -> u32 {
        ccl_signal(signals, slot, epoch, me, world);
        ccl_wait(signals, slot, epoch, me, world, timeout_ns)
    }
}

/// Reductions over every rank's copy, in rank order, for the reducing collectives
/// (`op`: 0 sum, 1 minimum, 2 maximum; sums wrap for integers and run in `f32` for
/// `f16`/`bf16`, rounded once).
#[iris::device]
pub(crate) mod reduction {
    use iris::prelude::*;

    /// `a ⊕ b` for reduction `op`.
    pub fn combine<A: Element>(a: A, b: A, op: u32) -> A {
        if op == 0 {
            a + b
        } else if op == 1 {
            min(a, b)
        } else {
            max(a, b)
        }
    }

    /// `src` on every rank, combined in rank order in the accumulator type.
    pub fn reduce<T: Element>(src: Symmetric<T>, op: u32, world: u32) -> T {
        let mut acc = widen(load(src, 0));
        for peer in 1..world {
            acc = combine(acc, widen(load(src, peer)), op);
        }
        narrow::<T>(acc)
    }

    /// The `L` elements at `src` on every rank (one 16-byte load each), combined lane by
    /// lane in rank order in the accumulator type.
    pub fn reduce_lanes<T: Element, const L: usize>(
        src: Symmetric<[T; L]>,
        op: u32,
        world: u32,
    ) -> [T; L] {
        let first = load(src, 0);
        let mut acc = [Acc::<T>::ZERO; L];
        for l in 0..L {
            acc[l] = widen(first[l]);
        }
        for peer in 1..world {
            let v = load(src, peer);
            for l in 0..L {
                acc[l] = combine(acc[l], widen(v[l]), op);
            }
        }
        let mut out = [T::ZERO; L];
        for l in 0..L {
            out[l] = narrow::<T>(acc[l]);
        }
        out
    }

    /// `output[i]` = `input[i]` of every rank combined in rank order, for `i < n`, the
    /// grid's threads striding over the elements: whole 16-byte chunks (`L` elements)
    /// first, then the last few one by one.
    pub fn reduce_all_into<T: Element, const L: usize>(
        input: Symmetric<T>,
        output: *mut T,
        n: u64,
        op: u32,
        world: u32,
    ) {
        let stride = (grid_dim_x() * block_dim_x()) as u64;
        let first = (block_idx_x() * block_dim_x() + thread_idx_x()) as u64;
        let nv = n / L as u64;
        let src = input.cast::<[T; L]>();
        let vout = output as *mut [T; L];
        let mut i = first;
        while i < nv {
            unsafe { *vout.add(i as usize) = reduce_lanes(src.add(i as usize), op, world) };
            i += stride;
        }
        let mut j = nv * L as u64 + first;
        while j < n {
            unsafe { *output.add(j as usize) = reduce(input.add(j as usize), op, world) };
            j += stride;
        }
    }
}
