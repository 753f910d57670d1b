//! Reduce-scatter: rank `r` gets the reduction of every rank's `r`-th block.

use super::{check_buffers, check_len, Ccl, CclElement, KernelId, ReduceOp};
use crate::{Result, SymmetricBuffer};

/// The kernels, one per element type `T` with `L` elements in 16 bytes: each meets the
/// device-side barrier on entry and on exit (see [`crate::ccl`]'s "What every collective
/// shares") around its data movement.
#[iris::kernels(uses(crate::ccl::barrier, crate::ccl::reduction))]
#[allow(clippy::too_many_arguments)]
pub(crate) mod kernels {
    use iris::prelude::*;

    /// `output[j]` = every rank's `input[me * n + j]`, combined in rank order (`arg` is the
    /// reduction), 16 bytes at a time when the block is whole 16-byte chunks.
    #[kernel(instances((f32, 4), (f64, 2), (f16, 8), (bf16, 8), (i32, 4), (u32, 4), (i64, 2), (u64, 2)))]
    pub fn reduce_scatter<T: Element, const L: usize>(
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
            let stride = (grid_dim_x() * block_dim_x()) as u64;
            let first = (block_idx_x() * block_dim_x() + thread_idx_x()) as u64;
            let block = input.add((me as u64 * n) as usize);
            let mut j = first;
            if n % L as u64 == 0 {
                let src = block.cast::<[T; L]>();
                let vout = output.local().cast::<[T; L]>();
                while j < n / L as u64 {
                    unsafe { *vout.add(j as usize) = reduce_lanes(src.add(j as usize), op, world) };
                    j += stride;
                }
                j = n;
            }
            let out = output.local();
            while j < n {
                unsafe { *out.add(j as usize) = reduce(block.add(j as usize), op, world) };
                j += stride;
            }
            ccl_leave(signals, me, world, timeout_ns);
        }
    }
}

/// Reduce-scatter: every rank's `input` is `W` blocks of `c` elements; rank `r`'s `output`
/// gets block `r` reduced over every rank, in rank order:
/// `output_r[j] = input_0[r*c + j] ⊕ ... ⊕ input_{W-1}[r*c + j]`.
///
/// Shapes: `input.len() == world_size * output.len()` on every rank. Both are symmetric
/// buffers of `ccl`'s context, different allocations. An empty output launches nothing.
///
/// Pull: every rank reads `(W-1)·c` elements. `f16`/`bf16` combine in `f32` and round
/// once; integer sums wrap. Asynchronous: [`Ccl::synchronize`] waits and reports a peer
/// that never arrived.
pub fn reduce_scatter<T: CclElement>(
    ccl: &Ccl<'_>,
    input: &SymmetricBuffer<'_, T>,
    output: &SymmetricBuffer<'_, T>,
    op: ReduceOp,
) -> Result<()> {
    let world = ccl.world_size();
    let c = output.len();
    let expected = c.checked_mul(world).ok_or(crate::Error::SizeOverflow {
        count: c,
        elem_bytes: std::mem::size_of::<T>() * world,
    })?;
    check_len(
        "ccl::reduce_scatter input (world_size x output)",
        expected,
        input.len(),
    )?;
    check_buffers(ccl, "ccl::reduce_scatter", input, output)?;
    if c == 0 {
        return Ok(());
    }
    ccl.launch(
        KernelId::ReduceScatter,
        input,
        output,
        c as u64,
        op.code(),
        c as u64,
    )
}
