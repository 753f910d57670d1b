//! `Ccl`: one rank's communicator: the barrier's signal buffer, the epochs, the launch
//! shape every rank agreed on, and the wait limit.

use std::cell::Cell;
use std::time::Duration;

use super::autotune::{Tuner, Tuning};
use super::element::{self, CclElement, KernelCall, KernelId};
use super::matmul_workspace::{
    AheadCell, AheadSlot, LayoutCell, LayoutSlot, SnapshotCell, SnapshotSlot,
};
use super::residency::{self, Sharing};
use super::signals;
use crate::abi::KernelUnit;
use crate::{BackendKind, Error, Iris, LaunchConfig, Result, SymmetricBuffer};

/// Threads per block on GPUs.
const GPU_BLOCK_THREADS: u32 = 256;

/// Threads per block on the CPU backend (a block's threads run one after another).
const CPU_BLOCK_THREADS: u32 = 64;

/// 16-byte vectors each thread moves before another block is worth launching.
const VECTORS_PER_THREAD: u64 = 4;

/// Blocks per multiprocessor the collectives aim for across the ranks of a device (more
/// does not move data faster; the residency bound may allow fewer).
const PREFERRED_BLOCKS_PER_MULTIPROCESSOR: u64 = 2;

/// One rank's communicator: the symmetric signal buffer of the device-side barrier, the
/// epoch counter, and the launch shape every rank agreed on.
///
/// Create it collectively ([`Ccl::new`] on every rank, in the same order as other
/// symmetric allocations) and keep it for many collectives: creating one allocates
/// symmetric memory and exchanges a few words between the ranks on the host; a collective
/// afterwards is a single launch with no host round trip. Dropping it is collective only
/// after an all-gather GEMM from snapshots
/// ([`AllGatherMatmulAlgo::Snapshot`](super::AllGatherMatmulAlgo::Snapshot)) with no
/// barrier since: the drop then runs a barrier, so that no peer still reads the copy it
/// frees.
pub struct Ccl<'ctx> {
    iris: &'ctx Iris,
    signals: SymmetricBuffer<'ctx, u64>,
    /// The kernel units this communicator has loaded (by address), see [`Ccl::preload`].
    loaded: Cell<Vec<usize>>,
    wait_limit: Duration,
    /// Blocks per launch (barrier slots in use): agreed by every rank, at most what keeps
    /// every rank's blocks resident (see `residency.rs`).
    slots: Cell<u32>,
    /// The smallest occupancy (blocks per multiprocessor) of every kernel loaded through
    /// this communicator, at the block size it is launched with.
    min_occupancy: Cell<u32>,
    sharing: Sharing,
    block_threads: u32,
    /// Where the point-to-point pair words start in `signals` (see `point_to_point.rs`).
    pair_words: u64,
    /// Per peer: messages sent to it and received from it so far.
    messages: Cell<Vec<[u64; 2]>>,
    /// What `Auto` algorithms have decided (see `autotune.rs`).
    tuner: Tuner,
    /// The copy-ahead all-gather GEMM's workspace, made by its first call (see
    /// `matmul.rs`).
    gather_ahead: Box<dyn AheadSlot + 'ctx>,
    /// The snapshot all-gather GEMM's copies of A, made by its first call (see
    /// `matmul.rs`).
    snapshot: Box<dyn SnapshotSlot + 'ctx>,
    /// B in the layout of the fused GEMMs' kernel on this device, where a call's B came
    /// the other way (see `matmul.rs`).
    b_layout: Box<dyn LayoutSlot + 'ctx>,
}

impl<'ctx> Ccl<'ctx> {
    /// The communicator of `iris`'s rank (collective: every rank calls it).
    ///
    /// Kernels that wait for each other across ranks must all be running at once, so
    /// `new` makes sure they can be, for every rank on every device:
    /// - more ranks of this process on a device than the device has hardware queues for
    ///   their streams ([`DeviceInfo::work_queues`](crate::DeviceInfo::work_queues): 32 on
    ///   CUDA unless `CUDA_DEVICE_MAX_CONNECTIONS` says otherwise; a rank with a sync
    ///   stream, [`World::sync_stream`](crate::World::sync_stream), needs two) is an
    ///   [`Error::DeviceOversubscribed`] on the ranks of that device, saying how many fit
    ///   (and [`Error::PeerFailed`] on the others);
    /// - blocks per launch are at most what keeps all ranks' blocks resident on their
    ///   device at once: the smallest occupancy of the kernels loaded through the
    ///   communicator (the driver's occupancy calculator) times the multiprocessors,
    ///   divided by the ranks on the device; and at most two per multiprocessor across
    ///   those ranks, 128 at most, the same on every rank. On the CPU backend a launch is
    ///   one block (the ranks are threads already).
    ///
    /// Barrier waits give up after [`wait_limit`](Ccl::wait_limit): 90% of the world's
    /// timeout (`IRIS_TIMEOUT`), so that the device gives up, and names the rank, before
    /// the host's wait does.
    pub fn new(iris: &'ctx Iris) -> Result<Self> {
        // No wait for this rank's queued work: loading a module and allocating wait for
        // no kernel (tests/host_calls.rs), so a rank whose kernel waits for a peer can
        // make a communicator while the peer makes its own.
        let world = iris.world_size();
        let info = iris.device_info();
        let cpu = info.backend == BackendKind::Cpu;
        let sharing = Sharing::of(iris)?;
        let threads = if cpu {
            CPU_BLOCK_THREADS
        } else {
            GPU_BLOCK_THREADS.min(info.max_threads_per_block.max(1))
        };
        let preferred = if cpu {
            // The ranks already keep the cores busy, and every block of a rank is one more
            // thread waiting in the barriers.
            1
        } else {
            (u64::from(info.multiprocessors.max(1)) * PREFERRED_BLOCKS_PER_MULTIPROCESSOR
                / sharing.device as u64)
                .max(1)
        };
        // Where the ranks of this device fit, every rank learns whether every other rank's
        // do, so that all fail together instead of some waiting for the others.
        let barrier_unit = &signals::barrier_kernel::barrier::UNIT;
        let fit = iris
            .load(barrier_unit)
            .and_then(|()| unit_occupancy(iris, barrier_unit, threads))
            .and_then(|m| residency::check_fit(iris, sharing, m).map(|()| m));
        let verdicts = iris.all_gather(u8::from(fit.is_err()))?;
        let occupancy = fit?;
        if let Some(peer) = verdicts.iter().position(|&failed| failed != 0) {
            return Err(Error::PeerFailed {
                rank: iris.rank(),
                what: "Ccl::new".into(),
                peer,
                reason: "its device cannot run its ranks' waiting kernels at once".into(),
            });
        }
        let resident = residency::resident_blocks(occupancy, info.multiprocessors, sharing.device);
        let wish = [
            preferred
                .min(resident)
                .min(u64::from(signals::MAX_SLOTS))
                .max(1),
            u64::from(threads),
        ];
        let wishes = iris.all_gather(wish)?;
        let slots = wishes.iter().map(|w| w[0]).min().unwrap_or(1).max(1) as u32;
        let block_threads = wishes.iter().map(|w| w[1]).min().unwrap_or(1).max(1) as u32;
        // The barrier's words, two point-to-point words per rank, then the fused GEMMs'
        // count of finished blocks (`grid_done_word`).
        let pair_words = signals::HEADER_WORDS + slots as usize * world;
        let signals = iris.symmetric_zeros::<u64>(pair_words + 2 * world + 1)?;
        // The collectives reach every rank's copy: a provider that cannot (ranks on other
        // nodes, memory that could not be mapped) is refused here on every rank, naming
        // the ranks.
        let unreachable = signals.map().reachable().missing();
        let verdicts = iris.all_gather(u8::from(!unreachable.is_empty()))?;
        if !unreachable.is_empty() {
            return Err(Error::InvalidConfig(format!(
                "Ccl::new on rank {}: rank(s) {unreachable:?} cannot be reached through the {:?} provider (another node, or memory that could not be mapped); the collectives need every rank: use the Shmem provider (World::provider(ProviderKind::Shmem), NVSHMEM/rocSHMEM) for a world across nodes",
                iris.rank(),
                signals.provider()
            )));
        }
        if let Some(peer) = verdicts.iter().position(|&failed| failed != 0) {
            return Err(Error::PeerFailed {
                rank: iris.rank(),
                what: "Ccl::new".into(),
                peer,
                reason: "it cannot reach every rank through its provider".into(),
            });
        }
        let ccl = Self {
            iris,
            signals,
            loaded: Cell::new(vec![barrier_unit as *const KernelUnit as usize]),
            // The world's device wait limit (90% of its timeout), as every signal wait's.
            wait_limit: iris_host::rank::device_wait_limit(iris.timeout()),
            slots: Cell::new(slots),
            min_occupancy: Cell::new(occupancy),
            sharing,
            block_threads,
            pair_words: pair_words as u64,
            messages: Cell::new(vec![[0; 2]; world]),
            tuner: Tuner::from_env(),
            gather_ahead: Box::new(AheadCell::new(iris)),
            snapshot: Box::new(SnapshotCell::new(iris)),
            b_layout: Box::new(LayoutCell::new(iris)),
        };
        // Every rank has loaded the barrier before any rank launches it.
        iris.host_barrier()?;
        Ok(ccl)
    }

    /// Loads `unit` on this rank's device where no kernel that waits for another rank can
    /// be running, and lowers the launch shape if its kernels fit fewer blocks per
    /// multiprocessor than those loaded before (collective: every rank calls it for the
    /// same units in the same order).
    ///
    /// Every rank meets the others, loads (which waits for no running kernel:
    /// tests/host_calls.rs checks it on every backend) and exchanges the unit's
    /// occupancy. The collectives do this themselves the first
    /// time this communicator launches each of their units; for your own kernels use
    /// [`launch_config_for`](Ccl::launch_config_for), which calls it. Units already loaded
    /// through this communicator cost nothing.
    pub fn preload(&self, unit: &'static KernelUnit) -> Result<()> {
        self.preload_at(unit, self.block_threads)
    }

    /// [`preload`](Ccl::preload) for kernels launched with `block_threads` threads a block.
    fn preload_at(&self, unit: &'static KernelUnit, block_threads: u32) -> Result<()> {
        let key = unit as *const KernelUnit as usize;
        let mut loaded = self.loaded.take();
        let result = if loaded.contains(&key) {
            Ok(())
        } else {
            let outcome = self.load_collectively(unit, block_threads);
            if outcome.is_ok() {
                loaded.push(key);
            }
            outcome
        };
        self.loaded.set(loaded);
        result
    }

    fn load_collectively(&self, unit: &'static KernelUnit, block_threads: u32) -> Result<()> {
        self.iris.host_barrier()?;
        let occupancy = self
            .iris
            .load(unit)
            .and_then(|()| unit_occupancy(self.iris, unit, block_threads));
        // Every rank's answer, an error as 0: all ranks take the same smallest one.
        let all = self.iris.all_gather(*occupancy.as_ref().unwrap_or(&0))?;
        let smallest = occupancy?;
        let agreed = all.iter().copied().min().unwrap_or(smallest);
        if agreed == 0 {
            let peer = all.iter().position(|&m| m == 0).unwrap_or(0);
            return Err(Error::PeerFailed {
                rank: self.rank(),
                what: format!("loading kernel unit `{}`", unit.id),
                peer,
                reason: "its device fits no block of the unit's kernels".into(),
            });
        }
        if agreed < self.min_occupancy.get() {
            self.min_occupancy.set(agreed);
            let info = self.iris.device_info();
            let resident =
                residency::resident_blocks(agreed, info.multiprocessors, self.sharing.device);
            let wishes = self.iris.all_gather(resident)?;
            let cap = wishes.iter().copied().min().unwrap_or(1).max(1);
            let slots = u64::from(self.slots.get()).min(cap) as u32;
            self.slots.set(slots);
        }
        Ok(())
    }

    /// The launch shape for a kernel of `unit` that meets the device barrier, launched with
    /// `block_threads` threads a block (collective: every rank calls it, for the same units
    /// in the same order, before the unit's first launch).
    ///
    /// Loads the unit as [`preload`](Ccl::preload) does and returns the most blocks that
    /// keep every rank's blocks resident at once, given this kernel's occupancy and that
    /// of every kernel loaded through the communicator before (at most
    /// [`slots`](Ccl::slots), so that each block has a barrier slot). Launch with at most
    /// that many blocks of `block_threads` threads: more could leave some rank's blocks
    /// waiting for room while others spin waiting for them. The collectives launched
    /// afterwards keep to the same bound.
    pub fn launch_config_for(
        &self,
        unit: &'static KernelUnit,
        block_threads: u32,
    ) -> Result<LaunchConfig> {
        let info = self.iris.device_info();
        if block_threads == 0 || block_threads > info.max_threads_per_block {
            return Err(Error::InvalidConfig(format!(
                "launch_config_for `{}`: {block_threads} threads per block; the device takes 1 to {}",
                unit.id, info.max_threads_per_block
            )));
        }
        self.preload_at(unit, block_threads)?;
        Ok(LaunchConfig::linear(self.slots.get(), block_threads))
    }

    /// The same communicator with barrier waits that give up after `limit` (at least a
    /// microsecond). Every rank may choose its own; a shorter one finds a dead peer sooner
    /// and is more likely to give up on a slow one. Keep it below the world's timeout, or
    /// the host's wait may time out first (without naming the rank).
    pub fn with_wait_limit(mut self, limit: Duration) -> Self {
        self.wait_limit = limit.max(Duration::from_micros(1));
        self
    }

    /// The same communicator with autotuning on or off (as `IRIS_AUTOTUNE=0` turns it
    /// off): off, the `Auto` algorithms follow the fixed rule. Every rank should choose
    /// the same.
    pub fn with_autotune(mut self, on: bool) -> Self {
        self.tuner.set_enabled(on);
        self
    }

    /// The same communicator keeping its autotuning decisions in `dir/autotune.json`
    /// (`None`: in memory only), in place of `IRIS_CACHE_DIR` or the user's cache
    /// directory. Only rank 0's is read and written.
    pub fn with_autotune_cache(mut self, dir: Option<std::path::PathBuf>) -> Self {
        self.tuner.set_dir(dir);
        self
    }

    /// What the `Auto` algorithms have decided so far (measured or read from the cache),
    /// sorted by key.
    pub fn autotuned(&self) -> Vec<Tuning> {
        self.tuner.decisions()
    }

    /// How long a barrier wait waits for a peer before it gives up.
    pub fn wait_limit(&self) -> Duration {
        self.wait_limit
    }

    /// [`wait_limit`](Ccl::wait_limit) in nanoseconds, as kernels take it (`timeout_ns`).
    pub fn wait_limit_ns(&self) -> u64 {
        u64::try_from(self.wait_limit.as_nanos()).unwrap_or(u64::MAX)
    }

    /// The context this communicator launches on.
    pub fn iris(&self) -> &'ctx Iris {
        self.iris
    }

    /// This rank.
    pub fn rank(&self) -> usize {
        self.iris.rank()
    }

    /// Ranks in the world.
    pub fn world_size(&self) -> usize {
        self.iris.world_size()
    }

    /// The barrier's signal buffer, to pass to kernels of a
    /// [`kernels_with_barrier!`](super::kernels_with_barrier) module as their
    /// `Symmetric<u64>` signals argument.
    pub fn signals(&self) -> &SymmetricBuffer<'ctx, u64> {
        &self.signals
    }

    /// Barrier slots: a kernel's barriers use slots `0..slots()` (one per block), and the
    /// collectives launch at most this many blocks. It can only go down, when a unit with
    /// a smaller occupancy is loaded.
    pub fn slots(&self) -> u32 {
        self.slots.get()
    }

    /// Threads per block of the collectives' launches.
    pub fn block_threads(&self) -> u32 {
        self.block_threads
    }

    /// Where the point-to-point words start in [`signals`](Ccl::signals).
    pub(super) fn pair_words_base(&self) -> u64 {
        self.pair_words
    }

    /// The number of the next message to (`sending`) or from `peer`: 1, 2, ..
    pub(super) fn next_message(&self, peer: usize, sending: bool) -> u64 {
        let mut messages = self.messages.take();
        let counter = &mut messages[peer][usize::from(!sending)];
        *counter += 1;
        let seq = *counter;
        self.messages.set(messages);
        seq
    }

    /// Enqueues a device-side barrier on this rank's stream (one thread, no host round
    /// trip): work queued after it on any rank starts only after every rank's work queued
    /// before it finished. Collective.
    pub fn barrier(&self) -> Result<()> {
        signals::barrier_kernel::barrier::launch(
            self.iris,
            (1, 1),
            &self.signals,
            self.rank() as u32,
            self.world_size() as u32,
            self.wait_limit_ns(),
        )?;
        // Every peer's earlier reads of this rank's snapshot end before it.
        self.snapshot.set_pending(false);
        Ok(())
    }

    /// The first half of a split [`barrier`](Ccl::barrier): this rank arrives without
    /// waiting (work queued after the matching [`barrier_wait`](Ccl::barrier_wait), on
    /// any rank, starts once every rank's work queued before its `barrier_arrive` is
    /// done), so the work queued between the two runs while the last rank arrives. Each
    /// `barrier_arrive` is followed by one `barrier_wait` before any other collective of
    /// this communicator. Collective.
    pub(crate) fn barrier_arrive(&self) -> Result<()> {
        signals::barrier_kernel::arrive::launch(
            self.iris,
            (1, 1),
            &self.signals,
            self.rank() as u32,
            self.world_size() as u32,
        )
    }

    /// The second half of a split [`barrier`](Ccl::barrier): work queued after it starts
    /// only after every rank's work queued before its
    /// [`barrier_arrive`](Ccl::barrier_arrive) finished. Bounded and reported as
    /// [`barrier`](Ccl::barrier)'s wait.
    pub(crate) fn barrier_wait(&self) -> Result<()> {
        signals::barrier_kernel::wait_arrived::launch(
            self.iris,
            (1, 1),
            &self.signals,
            self.rank() as u32,
            self.world_size() as u32,
            self.wait_limit_ns(),
        )
    }

    /// Reports a barrier that gave up: reads this rank's copy of the signal buffer (after
    /// the rank's queued work, as every read of device memory does).
    ///
    /// Returns [`Error::PeerFailed`] naming the rank that did not arrive. Once a barrier
    /// gave up the ranks' epochs disagree, so the error is sticky: create a new [`Ccl`]
    /// (on every rank) to go on.
    pub fn check(&self) -> Result<()> {
        let header = self.header()?;
        if header[0] == 0 {
            return Ok(());
        }
        Err(Error::PeerFailed {
            rank: self.rank(),
            what: format!(
                "a device-side barrier (epoch {}, slot {})",
                header[1], header[2]
            ),
            peer: (header[0] - 1) as usize,
            reason: format!(
                "did not arrive within {:?} (a rank stopped, or called other collectives)",
                self.wait_limit
            ),
        })
    }

    /// The longest a barrier wait of this rank has taken so far (after the rank's queued
    /// work): how close the waits came to [`wait_limit`](Ccl::wait_limit).
    pub fn longest_wait(&self) -> Result<Duration> {
        Ok(Duration::from_nanos(self.header()?[3]))
    }

    /// This rank's copy of the signal buffer's header.
    fn header(&self) -> Result<[u64; signals::HEADER_WORDS]> {
        let mut header = [0u64; signals::HEADER_WORDS];
        let words = self.signals.to_vec()?;
        header.copy_from_slice(&words[..signals::HEADER_WORDS]);
        Ok(header)
    }

    /// Waits for this rank's queued work (collectives included), then reports a barrier
    /// that gave up, as [`check`](Ccl::check) does.
    pub fn synchronize(&self) -> Result<()> {
        self.iris.synchronize()?;
        self.check()
    }

    /// The launch shape for a kernel whose threads stride over `elems` elements of
    /// `elem_bytes` bytes, 16 bytes at a time: as many blocks as that needs, at most
    /// `most` (0: the slots; never more than the slots).
    fn config(&self, elems: u64, elem_bytes: usize, most: u32) -> LaunchConfig {
        let vectors = elems.saturating_mul(elem_bytes as u64).div_ceil(16).max(1);
        let per_block = u64::from(self.block_threads) * VECTORS_PER_THREAD;
        let slots = self.slots.get();
        let most = if most == 0 { slots } else { most.min(slots) };
        let blocks = vectors.div_ceil(per_block).clamp(1, u64::from(most));
        LaunchConfig::linear(blocks as u32, self.block_threads)
    }

    /// The autotuner of the `Auto` algorithms.
    pub(super) fn tuner(&self) -> &Tuner {
        &self.tuner
    }

    /// The word of `signals` (this rank's copy) in which a fused GEMM's launch counts its
    /// finished blocks, so that the last one waits at the split barrier (0 between
    /// launches); the buffer's last word.
    pub(super) fn grid_done_word(&self) -> u32 {
        (self.signals.len() - 1) as u32
    }

    /// The copy-ahead all-gather GEMM's workspace.
    pub(super) fn gather_ahead(&self) -> &dyn AheadSlot {
        &*self.gather_ahead
    }

    /// The snapshot all-gather GEMM's workspace.
    pub(super) fn snapshot(&self) -> &dyn SnapshotSlot {
        &*self.snapshot
    }

    /// The fused GEMMs' workspace for B in the other layout.
    pub(super) fn b_layout(&self) -> &dyn LayoutSlot {
        &*self.b_layout
    }

    /// Ranks of the world on this rank's device.
    pub(super) fn ranks_on_device(&self) -> usize {
        self.sharing.device
    }

    /// Queued before every collective whose blocks wait for the other ranks (at its
    /// entry, and between its phases): where ranks share a device, a one-block
    /// [`barrier`](Ccl::barrier) first, so that the collective's blocks start only once
    /// every rank's earlier work finished. Without it, the blocks of the ranks that came
    /// first spin at the collective's entry and can hold every multiprocessor, while a
    /// late rank's earlier kernel (a GEMM whose blocks each need most of a
    /// multiprocessor's shared memory) waits for room it never gets, and nothing moves
    /// until the waits give up (the `ccl_ops` bench's GEMM then `reduce_scatter`, 4
    /// ranks on one H100: 1 of 70 runs). The barrier spins with one block a rank, so a
    /// late rank's kernel always has the rest of the device. Where every rank is alone
    /// on its device none is needed (a rank's earlier work is done by stream order).
    /// Every rank decides alike (a barrier is collective): a rank alone on its device
    /// queues it too when some other device has several ranks.
    pub(super) fn wait_for_device_peers(&self) -> Result<()> {
        if self.sharing.any_device_shared {
            self.barrier()
        } else {
            Ok(())
        }
    }

    /// Launches `kernel` for `T`, its threads striding over `elems` elements.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn launch<T: CclElement>(
        &self,
        kernel: KernelId,
        input: &SymmetricBuffer<'_, T>,
        output: &SymmetricBuffer<'_, T>,
        n: u64,
        arg: u32,
        elems: u64,
    ) -> Result<()> {
        self.launch_blocks(kernel, input, output, n, arg, elems, 0)
    }

    /// [`launch`](Ccl::launch) with at most `most` blocks (0: the slots).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn launch_blocks<T: CclElement>(
        &self,
        kernel: KernelId,
        input: &SymmetricBuffer<'_, T>,
        output: &SymmetricBuffer<'_, T>,
        n: u64,
        arg: u32,
        elems: u64,
        most: u32,
    ) -> Result<()> {
        self.preload(kernel.unit())?;
        let _span = self
            .iris
            .trace_span(kernel.call_name(), elems * std::mem::size_of::<T>() as u64);
        self.wait_for_device_peers()?;
        let call = KernelCall {
            config: self.config(elems, std::mem::size_of::<T>(), most),
            input,
            output,
            signals: &self.signals,
            n,
            arg,
            me: self.rank() as u32,
            world: self.world_size() as u32,
            timeout_ns: self.wait_limit_ns(),
        };
        element::launch(kernel, self.iris, &call)
    }
}

/// The smallest occupancy of `unit`'s kernels on `iris`'s device at `block_threads`.
fn unit_occupancy(iris: &Iris, unit: &'static KernelUnit, block_threads: u32) -> Result<u32> {
    (0..unit.kernels.len())
        .map(|k| iris.max_active_blocks_per_multiprocessor(unit, k, block_threads))
        .try_fold(u32::MAX, |m, k| k.map(|k| m.min(k)))
}

impl std::fmt::Debug for Ccl<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ccl")
            .field("rank", &self.rank())
            .field("world_size", &self.world_size())
            .field("slots", &self.slots.get())
            .field("min_occupancy", &self.min_occupancy.get())
            .field("block_threads", &self.block_threads)
            .field("wait_limit", &self.wait_limit)
            .finish_non_exhaustive()
    }
}

impl Drop for Ccl<'_> {
    /// After an all-gather GEMM that read snapshots ([`AllGatherMatmulAlgo::Snapshot`](
    /// super::AllGatherMatmulAlgo::Snapshot)) with no barrier since, a peer may still be
    /// reading this rank's snapshot: a barrier first (collective, as dropping every
    /// rank's communicator at the same point is), and where it fails the snapshot is
    /// never freed rather than freed under a peer's reads.
    fn drop(&mut self) {
        if self.snapshot.pending() {
            if let Err(err) = self.barrier().and_then(|()| self.synchronize()) {
                tracing::warn!(
                    rank = self.rank(),
                    %err,
                    "a communicator dropped after an all-gather GEMM: its snapshot of A is not freed"
                );
                self.snapshot.leak();
            }
        }
    }
}
