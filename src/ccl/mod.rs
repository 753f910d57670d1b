//! Collectives over symmetric memory, written in the kernel language: all-gather,
//! all-reduce (one-shot and two-shot), reduce-scatter, all-to-all (also with counts on the
//! device), broadcast, the rooted
//! reduce, gather and scatter, point-to-point send and recv, a device-side barrier, and
//! two fused operations of transformer layers: the mixture-of-experts token exchange
//! ([`Moe`]: dispatch and combine, routed on the device) and [`all_reduce_rmsnorm`].
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
//! - **Residency.** Every rank's blocks on a device are resident at once by construction:
//!   launches are sized from the driver's occupancy calculator for the exact kernels,
//!   divided among the ranks that share the device, and more ranks of one process on a
//!   device than it has hardware queues is an [`Error::DeviceOversubscribed`] at
//!   [`Ccl::new`] (see [`Ccl::new`]).
//! - **Failure.** Each barrier wait is bounded in time ([`Ccl::wait_limit`], by default 90%
//!   of the world's `IRIS_TIMEOUT`, so the device gives up before the host); a rank that
//!   gives up skips the collective's data movement, marks every rank's copy of the signal
//!   buffer, and [`Ccl::synchronize`] / [`Ccl::check`] then return [`Error::PeerFailed`]
//!   naming the rank that never arrived. The communicator is unusable afterwards.
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
//! [`all_reduce_rmsnorm`] takes the same two algorithms as [`all_reduce`] (two-shot by
//! rows: on one H200 shared by 4 ranks it was the faster at 128 and at 4096 rows of
//! 7168). [`Moe::dispatch`] writes each routed row once (push), [`Moe::combine`] reads it
//! once (pull).
//!
//! # Autotuning
//!
//! [`AllReduceAlgo::Auto`] and [`AllGatherAlgo::Auto`] (the enums' defaults) measure the
//! variants above at a few launch shapes (the slots, half, a quarter: never more blocks
//! than keep every rank resident) the first time a size bucket (a power of two of bytes a
//! rank), element type, world size, ranks per device and device meet, every rank on the
//! call's own buffers; rank 0 picks the variant whose slowest rank was fastest (the fixed
//! rule's on a tie) and every rank uses rank 0's pick. Rank 0 writes it, with every
//! candidate's time, to `autotune.json` in `IRIS_CACHE_DIR` (default
//! `$XDG_CACHE_HOME/iris` or `~/.cache/iris`; [`Ccl::with_autotune_cache`]), renaming a
//! new file over the old one, and a later run's rank 0 reads it there and tells the other
//! ranks. `IRIS_AUTOTUNE=0` (or [`Ccl::with_autotune`]`(false)`) keeps the fixed rule:
//! one-shot up to 256 KiB a rank, two-shot above; push. [`Ccl::autotuned`] lists the
//! decisions. A first call that measures synchronizes the device and takes a few
//! milliseconds: make it before capturing a graph. On one H200 shared by 4 ranks the
//! tuned calls were within noise of the fixed rule (0.85x to 1.11x, docs/performance.md):
//! the fixed rule is already the measured crossing there; the tuner is for the machines
//! where it is not.
//!
//! # Using the barrier in your own kernels
//!
//! [`kernels_with_barrier!`] wraps a `#[iris::kernels]` module and adds `ccl_signal`,
//! `ccl_wait`, `ccl_barrier`, `ccl_block_done`, `ccl_epoch` and `ccl_epoch_done` (and
//! `ccl_enter`/`ccl_leave`, and `ccl_block_enter`/`ccl_block_leave` for kernels whose
//! threads meet at block barriers or warp operations) to it; pass [`Ccl::signals`] as a `Symmetric<u64>` and
//! [`Ccl::wait_limit_ns`], and launch with the shape [`Ccl::launch_config_for`] gives for
//! the module's unit (on every rank, before its first launch). Barrier epochs are counted
//! on the device per slot (`ccl_epoch` reads the last, `ccl_epoch_done` records it), so a
//! launch captured in a graph and replayed meets new epochs each time. The collectives are
//! built the same way.
//!
//! Where ranks share a device (ranks as threads on one GPU), queue [`Ccl::barrier`] (one
//! block a rank) on every rank before a launch whose blocks wait at its entry, as the
//! library's collectives do: otherwise the blocks of the ranks that came first spin
//! there and can hold every multiprocessor while a late rank's earlier kernel (a GEMM
//! whose blocks need most of a multiprocessor) waits for room, and nothing moves until
//! the waits give up. Ranks alone on their devices need no such barrier.
//!
//! The first time a communicator runs a collective for an element type it loads that
//! kernel unit collectively (see [`Ccl::preload`]); later calls are single launches.

// The barrier library first: its `uses(..)` callback is a `macro_rules!`, in scope for
// the modules declared after it.
#[macro_use]
mod library;
mod all_gather;
mod all_reduce;
mod all_reduce_rmsnorm;
mod all_to_all;
mod all_to_all_v;
mod autotune;
mod broadcast;
mod communicator;
mod element;
#[doc(hidden)]
pub mod gemm_kernels;
mod matmul;
mod matmul_workspace;
mod moe;
mod point_to_point;
mod reduce_scatter;
mod residency;
mod rooted;
mod signals;

pub use all_gather::{all_gather, AllGatherAlgo};
pub use all_reduce::{all_reduce, AllReduceAlgo};
pub use all_reduce_rmsnorm::all_reduce_rmsnorm;
pub use all_to_all::all_to_all;
pub use all_to_all_v::{all_to_all_v, AllToAllV};
pub use autotune::Tuning;
pub use broadcast::broadcast;
pub use communicator::Ccl;
pub use element::{CclElement, FloatElement};
#[doc(hidden)]
pub use element::{KernelCall, KernelId};
pub use library::barrier;
pub(crate) use library::reduction;
pub use matmul::{
    all_gather_matmul, all_gather_matmul_with, fused_kernel_takes_bt, matmul_all_reduce,
    matmul_all_reduce_with, matmul_reduce_scatter, matmul_reduce_scatter_with, AllGatherMatmulAlgo,
    MatmulElement, MatmulReduceAlgo, MatrixB,
};
pub use moe::{Moe, MoeShape};
pub use point_to_point::{recv, send};
pub use reduce_scatter::reduce_scatter;
pub use rooted::{gather, reduce, scatter};
pub use signals::kernels_with_barrier;

use crate::{Buffer, DevicePtr, Error, Pod, Result, SymmetricBuffer};

/// An array of this rank that an operation reads or writes only here (tokens, routing
/// tables, weights, norm scales): a [`Buffer`], or this rank's copy of a
/// [`SymmetricBuffer`].
pub trait LocalArray<T: Pod> {
    /// The first element on the device.
    fn local_ptr(&self) -> DevicePtr<T>;
    /// Elements.
    fn len(&self) -> usize;
    /// Whether it holds no elements.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The symmetric allocation this array is, if it is one: operations that can read
    /// it in the peers' memory (the fused reductions'
    /// [`Pull`](MatmulReduceAlgo::Pull)) take it from here.
    fn as_symmetric(&self) -> Option<&SymmetricBuffer<'_, T>> {
        None
    }
}

impl<T: Pod> LocalArray<T> for Buffer<'_, T> {
    fn local_ptr(&self) -> DevicePtr<T> {
        self.device_ptr()
    }
    fn len(&self) -> usize {
        Buffer::len(self)
    }
}

impl<T: Pod> LocalArray<T> for SymmetricBuffer<'_, T> {
    fn local_ptr(&self) -> DevicePtr<T> {
        SymmetricBuffer::local_ptr(self)
    }
    fn len(&self) -> usize {
        SymmetricBuffer::len(self)
    }
    fn as_symmetric(&self) -> Option<&SymmetricBuffer<'_, T>> {
        Some(self)
    }
}

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

/// Distinct allocations, both of `ccl`'s context (`what` names the collective).
fn check_buffers<T: CclElement>(
    ccl: &Ccl<'_>,
    what: &'static str,
    input: &SymmetricBuffer<'_, T>,
    output: &SymmetricBuffer<'_, T>,
) -> Result<()> {
    for (role, buffer) in [("input", input), ("output", output)] {
        let owner = buffer.context_id();
        if owner != ccl.iris().id() {
            return Err(Error::ForeignBuffer {
                what: if role == "input" {
                    "symmetric buffer (collective input)"
                } else {
                    "symmetric buffer (collective output)"
                },
                owner,
                launcher: ccl.iris().id(),
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
