//! Broadcast: the root's elements on every rank.

use super::{check_buffers, check_len, Ccl, CclElement, KernelId};
use crate::{Error, Result, SymmetricBuffer};

/// The kernels, one per element type `T` with `L` elements in 16 bytes: each meets the
/// device-side barrier on entry and on exit (see [`crate::ccl`]'s "What every collective
/// shares") around its data movement.
#[iris::kernels(uses(crate::ccl::barrier))]
#[allow(clippy::too_many_arguments)]
pub(crate) mod kernels {
    use iris::prelude::*;

    /// Reads rank `arg`'s (the root's) `input` into the local `output`, 16 bytes at a time
    /// but for the last few elements.
    #[kernel(instances((f32, 4), (f64, 2), (f16, 8), (bf16, 8), (i32, 4), (u32, 4), (i64, 2), (u64, 2)))]
    pub fn broadcast<T: Element, const L: usize>(
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
            let root = arg;
            let stride = (grid_dim_x() * block_dim_x()) as u64;
            let first = (block_idx_x() * block_dim_x() + thread_idx_x()) as u64;
            let nv = n / L as u64;
            let src = input.cast::<[T; L]>();
            let vout = output.local().cast::<[T; L]>();
            let mut i = first;
            while i < nv {
                unsafe { *vout.add(i as usize) = load(src.add(i as usize), root) };
                i += stride;
            }
            let out = output.local();
            let mut j = nv * L as u64 + first;
            while j < n {
                unsafe { *out.add(j as usize) = load(input.add(j as usize), root) };
                j += stride;
            }
            ccl_leave(signals, me, world, timeout_ns);
        }
    }
}

/// Broadcast: rank `root`'s `input` is copied into `output` on every rank (the root's
/// included). The other ranks' inputs are not read.
///
/// Shapes: `input.len() == output.len()` on every rank; `root < world_size`. Both are
/// symmetric buffers of `ccl`'s context, different allocations. An empty input launches
/// nothing.
///
/// Pull: every rank reads `n` elements from the root, so the root's links carry
/// `(W-1)·n` (for large messages on many ranks, a scatter then an all-gather moves less).
/// Asynchronous: [`Ccl::synchronize`] waits and reports a peer that never arrived.
pub fn broadcast<T: CclElement>(
    ccl: &Ccl<'_>,
    input: &SymmetricBuffer<'_, T>,
    output: &SymmetricBuffer<'_, T>,
    root: usize,
) -> Result<()> {
    let world = ccl.world_size();
    if root >= world {
        return Err(Error::InvalidConfig(format!(
            "ccl::broadcast: root {root} is not a rank of a world of {world}"
        )));
    }
    check_len(
        "ccl::broadcast output (same as input)",
        input.len(),
        output.len(),
    )?;
    check_buffers(ccl, "ccl::broadcast", input, output)?;
    let n = input.len() as u64;
    if n == 0 {
        return Ok(());
    }
    ccl.launch(KernelId::Broadcast, input, output, n, root as u32, n)
}
