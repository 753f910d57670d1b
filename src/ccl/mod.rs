//! Collectives over symmetric memory, written in the kernel language: all-gather,
//! all-reduce (one-shot and two-shot), reduce-scatter, all-to-all, broadcast, and a
//! device-side barrier.
//!
//! Every rank creates one [`Ccl`] (collectively) and calls the same collectives in the
//! same order with buffers of the same lengths:
//!
//! ```
//! use iris::ccl::{self, AllReduceAlgo, Ccl, ReduceOp};
//! use iris::World;
//!
//! # fn main() -> iris::Result<()> {
//! let sums = World::threads(4).heap_bytes(1 << 20).run(|iris| {
//!     let ccl = Ccl::new(iris)?;
//!     let mine: Vec<f32> = (0..1000).map(|i| (i * (iris.rank() + 1)) as f32).collect();
//!     let input = iris.symmetric_from_slice(&mine)?; // f32, bf16, i64, ...
//!     let output = iris.symmetric_zeros::<f32>(mine.len())?;
//!     ccl::all_reduce(&ccl, &input, &output, ReduceOp::Sum, AllReduceAlgo::OneShot)?;
//!     ccl.synchronize()?; // waits, and names a rank that never arrived
//!     output.to_vec()
//! })?;
//! // 1 + 2 + 3 + 4 = 10 times each index, on every rank.
//! assert!(sums.iter().all(|s| s.iter().enumerate().all(|(i, &x)| x == (10 * i) as f32)));
//! # Ok(())
//! # }
//! ```
//!
//! # What every collective shares
//!
//! - **Buffers.** Inputs and outputs are [`SymmetricBuffer`]s of this rank (peers read
//!   inputs and write outputs directly), two different allocations. Shapes are checked
//!   before anything is launched; a wrong shape is [`Error::LengthMismatch`] or
//!   [`Error::InvalidConfig`], and nothing runs.
//! - **Ordering.** A collective is one kernel on the rank's stream. It starts with a
//!   device-side barrier (every rank's earlier work on its stream, which wrote the inputs and
//!   last read the outputs, has finished) and ends with one (every rank's reads of this
//!   rank's input and writes into its output have finished). So once the collective has
//!   completed on a rank's stream, its output is final and its input may be overwritten;
//!   until then, neither may be touched. Calls are asynchronous, as launches are; a
//!   collective's own barriers order it after the previous one on every rank, so several
//!   may be queued back to back without a host round trip.
//! - **Determinism.** Reductions combine ranks in a fixed order, rank 0 first, whichever
//!   rank computes: every rank gets bit-identical results, equal to a host reduction in
//!   rank order. Integer sums wrap. `f16`/`bf16` reduce in `f32` and round once.
//!   Float `Min`/`Max` follow `f32::min`/`f32::max` (a NaN loses to a number).
//! - **Element types.** [`CclElement`]: `f32`, `f64`, `f16`, `bf16`, `i32`, `u32`, `i64`,
//!   `u64`. Data moves 16 bytes a thread where the shapes keep every block 16-byte aligned
//!   (lengths that are whole 16-byte vectors), element by element otherwise; `f16`/`bf16`
//!   reductions go element by element.
//! - **Failure.** Each barrier polls a bounded number of times ([`Ccl::spin_limit`]); a rank
//!   that gives up skips the collective's data movement, marks every rank's copy of the
//!   signal buffer, and [`Ccl::synchronize`] / [`Ccl::check`] then return
//!   [`Error::PeerFailed`] naming the rank that never arrived. The communicator is unusable
//!   afterwards.
//!
//! # Choosing a variant
//!
//! | collective | variant | traffic per rank (`n` = output elements) | suits |
//! |---|---|---|---|
//! | [`all_reduce`] | [`AllReduceAlgo::OneShot`] | reads `(W-1)·n` | small messages: one step, latency-bound sizes (below about 256 KiB on one H200 shared by 2-8 ranks) |
//! | [`all_reduce`] | [`AllReduceAlgo::TwoShot`] | reads and writes `(W-1)·n/W` each | large messages: `W/2` times less traffic |
//! | [`all_gather`] | [`AllGatherAlgo::Push`] | writes `(W-1)·n/W` | the default: remote stores do not wait for a reply |
//! | [`all_gather`] | [`AllGatherAlgo::Pull`] | reads `(W-1)·n/W` | when remote writes are slow or the output should stay local |
//!
//! [`reduce_scatter`] reads `(W-1)·n` (pull); [`all_to_all`] writes `(W-1)·n/W` (push);
//! [`broadcast`] reads `n` from the root on every other rank (pull).
//!
//! # Using the barrier in your own kernels
//!
//! [`kernels_with_barrier!`] wraps a `#[iris::kernels]` module and adds `ccl_signal`,
//! `ccl_wait`, `ccl_barrier` and `ccl_block_done` to it; pass [`Ccl::signals`] as a
//! `Symmetric<u64>`, epochs from [`Ccl::reserve_epochs`] and [`Ccl::spin_limit`], and
//! [`Ccl::preload`] the module's unit on every rank before its first launch. The
//! collectives are built the same way.
//!
//! The first time a communicator runs a collective for an element type it loads that
//! kernel unit collectively (two host barriers, see [`Ccl::preload`]); later calls are
//! single launches.

#[macro_use]
mod unit;
mod all_gather;
mod all_reduce;
mod all_to_all;
mod barrier;
mod broadcast;
mod element;
mod reduce_scatter;

pub use all_gather::{all_gather, AllGatherAlgo};
pub use all_reduce::{all_reduce, AllReduceAlgo};
pub use all_to_all::all_to_all;
pub use barrier::kernels_with_barrier;
pub use broadcast::broadcast;
pub use element::CclElement;
#[doc(hidden)]
pub use element::{KernelCall, KernelId};
pub use reduce_scatter::reduce_scatter;

use std::cell::Cell;

use crate::{BackendKind, Error, Iris, LaunchConfig, Result, SymmetricBuffer};

/// How a reduction combines the ranks' elements.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    /// The sum (integers wrap; `f16`/`bf16` add in `f32`).
    Sum,
    /// The minimum (floats as `f32::min`: a NaN loses to a number).
    Min,
    /// The maximum (floats as `f32::max`: a NaN loses to a number).
    Max,
}

impl ReduceOp {
    /// The code the kernels take.
    pub(crate) fn code(self) -> u32 {
        match self {
            ReduceOp::Sum => 0,
            ReduceOp::Min => 1,
            ReduceOp::Max => 2,
        }
    }
}

/// Threads per block on GPUs.
const GPU_BLOCK_THREADS: u32 = 256;

/// Threads per block on the CPU backend (a block's threads run one after another).
const CPU_BLOCK_THREADS: u32 = 64;

/// 16-byte vectors each thread moves before another block is worth launching.
const VECTORS_PER_THREAD: u64 = 4;

/// Default polls per barrier wait on GPUs (a poll is a system-scope load, around a
/// microsecond: tens of seconds before a wait gives up).
const GPU_SPIN_LIMIT: u64 = 1 << 25;

/// Default polls per barrier wait on the CPU backend (a poll is nanoseconds, and ranks
/// share few cores: several seconds at least before a wait gives up).
const CPU_SPIN_LIMIT: u64 = 1 << 32;

/// One rank's communicator: the symmetric signal buffer of the device-side barrier, the
/// epoch counter, and the launch shape every rank agreed on.
///
/// Create it collectively ([`Ccl::new`] on every rank, in the same order as other
/// symmetric allocations) and keep it for many collectives: creating one allocates
/// symmetric memory and exchanges a few words between the ranks on the host; a collective
/// afterwards is a single launch with no host round trip.
pub struct Ccl<'ctx> {
    iris: &'ctx Iris,
    signals: SymmetricBuffer<'ctx, u64>,
    epoch: Cell<u64>,
    /// The kernel units this communicator has loaded (by address), see [`Ccl::preload`].
    loaded: Cell<Vec<usize>>,
    spins: u64,
    slots: u32,
    block_threads: u32,
}

impl<'ctx> Ccl<'ctx> {
    /// The communicator of `iris`'s rank (collective: every rank calls it).
    ///
    /// Blocks per launch are capped so that the kernels of every rank sharing a device fit
    /// on it at once (their barriers wait for each other): twice the device's
    /// multiprocessors divided by the ranks on it, at most 128, and the same on every rank.
    /// On the CPU backend a launch is one block (the ranks are threads already).
    pub fn new(iris: &'ctx Iris) -> Result<Self> {
        let world = iris.world_size();
        let info = iris.device_info();
        let cpu = info.backend == BackendKind::Cpu;
        // Ranks on this rank's device, and this rank's wish for blocks and threads.
        let device_key = (info.backend as u64) << 32 | info.ordinal as u64;
        let keys = iris.all_gather(device_key)?;
        let sharing = keys.iter().filter(|&&k| k == device_key).count().max(1) as u64;
        let blocks = if cpu {
            // The ranks already keep the cores busy, and every block of a rank is one more
            // thread spinning in the barriers.
            1
        } else {
            (u64::from(info.multiprocessors.max(1)) * 2 / sharing).max(1)
        };
        let threads = if cpu {
            CPU_BLOCK_THREADS
        } else {
            GPU_BLOCK_THREADS.min(info.max_threads_per_block.max(1))
        };
        let wish = [
            blocks.min(u64::from(barrier::MAX_SLOTS)),
            u64::from(threads),
        ];
        let wishes = iris.all_gather(wish)?;
        let slots = wishes.iter().map(|w| w[0]).min().unwrap_or(1).max(1) as u32;
        let block_threads = wishes.iter().map(|w| w[1]).min().unwrap_or(1).max(1) as u32;
        let signals =
            iris.symmetric_zeros::<u64>(barrier::HEADER_WORDS + slots as usize * world)?;
        let ccl = Self {
            iris,
            signals,
            epoch: Cell::new(0),
            loaded: Cell::new(Vec::new()),
            spins: if cpu { CPU_SPIN_LIMIT } else { GPU_SPIN_LIMIT },
            slots,
            block_threads,
        };
        ccl.preload(&barrier::barrier_kernel::barrier::UNIT)?;
        Ok(ccl)
    }

    /// Loads `unit` on this rank's device where no kernel that waits for another rank can
    /// be running (collective: every rank calls it for the same units in the same order).
    ///
    /// Loading a module may wait for the device's running kernels (on CUDA it can), and a
    /// kernel spinning at a barrier for a peer whose launch waits behind that load never
    /// finishes. So every rank first finishes launching what it queued before (a host
    /// barrier: the queued kernels can all complete without the host), loads, and waits until
    /// every rank has loaded (a second host barrier). The collectives do this themselves the
    /// first time this communicator launches each of their units; call it for your own
    /// units before their first launch (`module::kernel::UNIT` of a
    /// [`kernels_with_barrier!`] module). Units already loaded through this communicator
    /// cost nothing.
    pub fn preload(&self, unit: &'static crate::abi::KernelUnit) -> Result<()> {
        let key = unit as *const crate::abi::KernelUnit as usize;
        let mut loaded = self.loaded.take();
        let result = if loaded.contains(&key) {
            Ok(())
        } else {
            let outcome = self
                .iris
                .host_barrier()
                .and_then(|()| self.iris.load(unit))
                .and_then(|()| self.iris.host_barrier());
            if outcome.is_ok() {
                loaded.push(key);
            }
            outcome
        };
        self.loaded.set(loaded);
        result
    }

    /// The same communicator with barrier waits that give up after `polls` polls (at least
    /// one). Every rank may choose its own; a smaller one finds a dead peer sooner and is
    /// more likely to give up on a slow one.
    pub fn with_spin_limit(mut self, polls: u64) -> Self {
        self.spins = polls.max(1);
        self
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

    /// The barrier's signal buffer, to pass to kernels of a [`kernels_with_barrier!`]
    /// module as their `Symmetric<u64>` signals argument.
    pub fn signals(&self) -> &SymmetricBuffer<'ctx, u64> {
        &self.signals
    }

    /// Barrier slots: a kernel's barriers use slots `0..slots()` (one per block), and the
    /// collectives launch at most this many blocks.
    pub fn slots(&self) -> u32 {
        self.slots
    }

    /// Polls per barrier wait before it gives up on a peer.
    pub fn spin_limit(&self) -> u64 {
        self.spins
    }

    /// Threads per block of the collectives' launches.
    pub fn block_threads(&self) -> u32 {
        self.block_threads
    }

    /// Reserves `count` consecutive barrier epochs and returns the first, for a kernel that
    /// meets `count` barriers per slot (the `i`-th uses `first + i`). Every rank must
    /// reserve the same counts in the same order, interleaved the same way with the
    /// collectives (which reserve two each).
    pub fn reserve_epochs(&self, count: u64) -> u64 {
        let first = self.epoch.get() + 1;
        self.epoch.set(self.epoch.get() + count);
        first
    }

    /// Enqueues a device-side barrier on this rank's stream (one thread, no host round
    /// trip): work queued after it on any rank starts only after every rank's work queued
    /// before it finished. Collective.
    pub fn barrier(&self) -> Result<()> {
        let epoch = self.reserve_epochs(1);
        barrier::barrier_kernel::barrier::launch(
            self.iris,
            (1, 1),
            &self.signals,
            self.rank() as u32,
            self.world_size() as u32,
            epoch,
            self.spins,
        )
    }

    /// Reports a barrier that gave up: reads this rank's copy of the signal buffer (after
    /// the rank's queued work, as every read of device memory does).
    ///
    /// Returns [`Error::PeerFailed`] naming the rank that did not arrive. Once a barrier
    /// gave up the ranks' epochs disagree, so the error is sticky: create a new [`Ccl`]
    /// (on every rank) to go on.
    pub fn check(&self) -> Result<()> {
        let mut header = [0u64; barrier::HEADER_WORDS];
        let words = self.signals.to_vec()?;
        header.copy_from_slice(&words[..barrier::HEADER_WORDS]);
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
                "did not arrive within {} polls (a rank stopped, or called other collectives)",
                self.spins
            ),
        })
    }

    /// Waits for this rank's queued work (collectives included), then reports a barrier
    /// that gave up, as [`check`](Ccl::check) does.
    pub fn synchronize(&self) -> Result<()> {
        self.iris.synchronize()?;
        self.check()
    }

    /// The launch shape for a kernel whose threads stride over `elems` elements of
    /// `elem_bytes` bytes, 16 bytes at a time.
    fn config(&self, elems: u64, elem_bytes: usize) -> LaunchConfig {
        let vectors = elems.saturating_mul(elem_bytes as u64).div_ceil(16).max(1);
        let per_block = u64::from(self.block_threads) * VECTORS_PER_THREAD;
        let blocks = vectors.div_ceil(per_block).clamp(1, u64::from(self.slots));
        LaunchConfig::linear(blocks as u32, self.block_threads)
    }

    /// Launches `kernel` for `T`, its threads striding over `elems` elements.
    #[allow(clippy::too_many_arguments)]
    fn launch<T: CclElement>(
        &self,
        kernel: KernelId,
        input: &SymmetricBuffer<'_, T>,
        output: &SymmetricBuffer<'_, T>,
        n: u64,
        arg: u32,
        elems: u64,
    ) -> Result<()> {
        self.preload(T::unit(kernel))?;
        let epoch = self.reserve_epochs(2);
        let call = KernelCall {
            config: self.config(elems, std::mem::size_of::<T>()),
            input,
            output,
            signals: &self.signals,
            n,
            arg,
            me: self.rank() as u32,
            world: self.world_size() as u32,
            epoch,
            spins: self.spins,
        };
        T::launch(kernel, self.iris, &call)
    }
}

impl std::fmt::Debug for Ccl<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ccl")
            .field("rank", &self.rank())
            .field("world_size", &self.world_size())
            .field("slots", &self.slots)
            .field("block_threads", &self.block_threads)
            .field("spin_limit", &self.spins)
            .field("epoch", &self.epoch.get())
            .finish_non_exhaustive()
    }
}

/// Distinct allocations, both of `ccl`'s context (`what` names the collective).
fn check_buffers<T: CclElement>(
    ccl: &Ccl<'_>,
    what: &'static str,
    input: &SymmetricBuffer<'_, T>,
    output: &SymmetricBuffer<'_, T>,
) -> Result<()> {
    for (role, buffer) in [("input", input), ("output", output)] {
        let owner = buffer.context().id();
        if owner != ccl.iris.id() {
            return Err(Error::ForeignBuffer {
                what: if role == "input" {
                    "symmetric buffer (collective input)"
                } else {
                    "symmetric buffer (collective output)"
                },
                owner,
                launcher: ccl.iris.id(),
                rank: ccl.rank(),
            });
        }
    }
    if !input.is_empty() && input.map().base() == output.map().base() {
        return Err(Error::InvalidConfig(format!(
            "{what}: the input and the output are the same allocation; pass two"
        )));
    }
    Ok(())
}

/// `got == expected`, or a [`Error::LengthMismatch`] about `what`.
fn check_len(what: &'static str, expected: usize, got: usize) -> Result<()> {
    if expected == got {
        Ok(())
    } else {
        Err(Error::LengthMismatch {
            what,
            expected,
            got,
        })
    }
}
