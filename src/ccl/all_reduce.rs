//! All-reduce: the element-wise reduction of every rank's input, on every rank.

use super::autotune::{self, Tuned};
use super::{check_buffers, check_len, Ccl, CclElement, KernelId, ReduceOp};
use crate::{Result, SymmetricBuffer};

/// The kernels, one per element type `T` with `L` elements in 16 bytes: each meets the
/// device-side barrier on entry and on exit (see [`crate::ccl`]'s "What every collective
/// shares") around its data movement.
#[iris::kernels(uses(crate::ccl::barrier, crate::ccl::reduction))]
#[allow(clippy::too_many_arguments)]
pub(crate) mod kernels {
    use iris::prelude::*;

    /// `output[i]` = every rank's `input[i]`, combined in rank order (`arg` is the
    /// reduction): whole 16-byte chunks first, then the last few elements one by one.
    #[kernel(instances((f32, 4), (f64, 2), (f16, 8), (bf16, 8), (i32, 4), (u32, 4), (i64, 2), (u64, 2)))]
    pub fn one_shot<T: Element, const L: usize>(
        input: Symmetric<T>,
        output: Symmetric<T>,
        signals: Symmetric<u64>,
        n: u64,
        arg: u32,
        me: u32,
        world: u32,
        timeout_ns: u64,
    ) {
        if ccl_enter(signals, me, world, timeout_ns) {
            reduce_all_into::<T, L>(input, output.local(), n, arg, world);
            ccl_leave(signals, me, world, timeout_ns);
        }
    }

    /// Reduces this rank's share of the elements (`ceil(n / world)` rounded up to whole
    /// 16-byte chunks, from `me * share`) over every rank, in rank order, and stores each
    /// result into every rank's `output`.
    #[kernel(instances((f32, 4), (f64, 2), (f16, 8), (bf16, 8), (i32, 4), (u32, 4), (i64, 2), (u64, 2)))]
    pub fn two_shot<T: Element, const L: usize>(
        input: Symmetric<T>,
        output: Symmetric<T>,
        signals: Symmetric<u64>,
        n: u64,
        arg: u32,
        me: u32,
        world: u32,
        timeout_ns: u64,
    ) {
        if ccl_enter(signals, me, world, timeout_ns) {
            let op = arg;
            let lanes = L as u64;
            let stride = (grid_dim_x() * block_dim_x()) as u64;
            let first = (block_idx_x() * block_dim_x() + thread_idx_x()) as u64;
            let share = (n + world as u64 - 1) / world as u64;
            let share = (share + lanes - 1) / lanes * lanes;
            let lo = (me as u64 * share).min(n);
            let hi = (lo + share).min(n);
            let end = hi / lanes;
            let src = input.cast::<[T; L]>();
            let dst = output.cast::<[T; L]>();
            let mut i = lo / lanes + first;
            while i < end {
                let v = reduce_lanes(src.add(i as usize), op, world);
                for k in 0..world {
                    store(dst.add(i as usize), v, (me + k) % world);
                }
                i += stride;
            }
            let mut j = (end * lanes).max(lo) + first;
            while j < hi {
                let v = reduce(input.add(j as usize), op, world);
                let d = output.add(j as usize);
                for k in 0..world {
                    store(d, v, (me + k) % world);
                }
                j += stride;
            }
            ccl_leave(signals, me, world, timeout_ns);
        }
    }
}

/// How [`all_reduce`] moves the data.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum AllReduceAlgo {
    /// Measured: the first call for a size (bucketed by powers of two), element type,
    /// world and device measures both variants at a few launch shapes, every rank
    /// agreeing on rank 0's pick, and caches it on disk for later runs (see the module
    /// docs, "Autotuning"). With `IRIS_AUTOTUNE=0`: one-shot up to 256 KiB a rank,
    /// two-shot above.
    #[default]
    Auto,
    /// Every rank reads every rank's whole input and reduces all `n` elements itself: one
    /// step, `(W-1)·n` elements read per rank. The choice for small messages, where the
    /// time is latency (measured on one H200 shared by 2 to 8 ranks, the two variants
    /// cross around 256 KiB; `examples/all_reduce` measures your machine).
    OneShot,
    /// Reduce-scatter then all-gather in one kernel: rank `r` reduces the `r`-th share of
    /// the elements (reading it from every rank) and stores the result into every rank's
    /// output. `(W-1)·n/W` elements read and as many written per rank: the choice for large
    /// messages.
    TwoShot,
}

/// All-reduce: `output[i] = input_0[i] ⊕ input_1[i] ⊕ ... ⊕ input_{W-1}[i]` on every rank,
/// combined in rank order with `op`, so every rank gets bit-identical results.
///
/// Shapes: `input.len() == output.len() == n` on every rank (any `n`; two-shot splits it in
/// `W` shares of `ceil(n / W)`, the last ones shorter). Both are symmetric buffers of
/// `ccl`'s context, different allocations. `n == 0` launches nothing.
///
/// `f16`/`bf16` combine in `f32` and round once at the end; integer sums wrap. See
/// [`AllReduceAlgo`] for which variant suits which size. Asynchronous:
/// [`Ccl::synchronize`] waits and reports a peer that never arrived.
pub fn all_reduce<T: CclElement>(
    ccl: &Ccl<'_>,
    input: &SymmetricBuffer<'_, T>,
    output: &SymmetricBuffer<'_, T>,
    op: ReduceOp,
    algo: AllReduceAlgo,
) -> Result<()> {
    check_len(
        "ccl::all_reduce output (same as input)",
        input.len(),
        output.len(),
    )?;
    check_buffers(ccl, "ccl::all_reduce", input, output)?;
    let n = input.len() as u64;
    if n == 0 {
        return Ok(());
    }
    if algo == AllReduceAlgo::Auto {
        let choice = autotune::choose(ccl, Tuned::AllReduce(op.code()), input, output, n)?;
        let elems = if choice.kernel == KernelId::AllReduceTwoShot {
            n.div_ceil(ccl.world_size() as u64)
        } else {
            n
        };
        return ccl.launch_blocks(
            choice.kernel,
            input,
            output,
            n,
            op.code(),
            elems,
            choice.blocks,
        );
    }
    match algo {
        AllReduceAlgo::Auto | AllReduceAlgo::OneShot => {
            ccl.launch(KernelId::AllReduceOneShot, input, output, n, op.code(), n)
        }
        AllReduceAlgo::TwoShot => {
            let share = n.div_ceil(ccl.world_size() as u64);
            ccl.launch(
                KernelId::AllReduceTwoShot,
                input,
                output,
                n,
                op.code(),
                share,
            )
        }
    }
}
