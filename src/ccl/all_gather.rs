//! All-gather: every rank's `n` elements, concatenated in rank order, on every rank.

use super::autotune::{self, Tuned};
use super::{check_buffers, check_len, Ccl, CclElement, KernelId};
use crate::{Result, SymmetricBuffer};

/// The kernels, one per element type `T` with `L` elements in 16 bytes: each meets the
/// device-side barrier on entry and on exit (see [`crate::ccl`]'s "What every collective
/// shares") around its data movement.
#[iris::kernels(uses(crate::ccl::barrier))]
#[allow(clippy::too_many_arguments)]
pub(crate) mod kernels {
    use iris::prelude::*;

    /// Writes the local `input[i]` into slot `me` of every rank's `output`, 16 bytes at a
    /// time when `n` elements are whole 16-byte chunks.
    #[kernel(instances((f32, 4), (f64, 2), (f16, 8), (bf16, 8), (i32, 4), (u32, 4), (i64, 2), (u64, 2)))]
    pub fn push<T: Element, const L: usize>(
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
            let stride = (grid_dim_x() * block_dim_x()) as u64;
            let first = (block_idx_x() * block_dim_x() + thread_idx_x()) as u64;
            let slot = output.add((me as u64 * n) as usize);
            let mut i = first;
            if n % L as u64 == 0 {
                let src = input.local().cast::<[T; L]>();
                let dst = slot.cast::<[T; L]>();
                while i < n / L as u64 {
                    let v = unsafe { *src.add(i as usize) };
                    for k in 0..world {
                        store(dst.add(i as usize), v, (me + k) % world);
                    }
                    i += stride;
                }
                i = n;
            }
            while i < n {
                let v = unsafe { *input.local().add(i as usize) };
                for k in 0..world {
                    store(slot.add(i as usize), v, (me + k) % world);
                }
                i += stride;
            }
            ccl_leave(signals, me, world, timeout_ns);
        }
    }

    /// Reads every rank's `input[i]` into slot `rank` of the local `output`, 16 bytes at a
    /// time when `n` elements are whole 16-byte chunks.
    #[kernel(instances((f32, 4), (f64, 2), (f16, 8), (bf16, 8), (i32, 4), (u32, 4), (i64, 2), (u64, 2)))]
    pub fn pull<T: Element, const L: usize>(
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
            let stride = (grid_dim_x() * block_dim_x()) as u64;
            let first = (block_idx_x() * block_dim_x() + thread_idx_x()) as u64;
            let mut i = first;
            if n % L as u64 == 0 {
                let nv = n / L as u64;
                let src = input.cast::<[T; L]>();
                let out = output.local().cast::<[T; L]>();
                while i < nv {
                    for k in 0..world {
                        let peer = (me + k) % world;
                        unsafe {
                            *out.add((peer as u64 * nv + i) as usize) =
                                load(src.add(i as usize), peer)
                        };
                    }
                    i += stride;
                }
                i = n;
            }
            let out = output.local();
            while i < n {
                for k in 0..world {
                    let peer = (me + k) % world;
                    unsafe {
                        *out.add((peer as u64 * n + i) as usize) = load(input.add(i as usize), peer)
                    };
                }
                i += stride;
            }
            ccl_leave(signals, me, world, timeout_ns);
        }
    }
}

/// How [`all_gather`] moves the data.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum AllGatherAlgo {
    /// Measured, as [`AllReduceAlgo::Auto`](super::AllReduceAlgo::Auto): push or pull,
    /// at a few launch shapes, once per size bucket, cached on disk. With
    /// `IRIS_AUTOTUNE=0`: push.
    #[default]
    Auto,
    /// Every rank stores its elements into every rank's output (remote writes): stores do
    /// not wait for a reply, so it saturates links with fewer threads.
    Push,
    /// Every rank loads every rank's elements into its own output (remote reads): for
    /// fabrics where remote writes are slow, or to keep each rank's output written by that
    /// rank only.
    Pull,
}

/// All-gather: rank `r`'s `input` (`n` elements) lands in `output[r*n .. (r+1)*n]` on every
/// rank.
///
/// Shapes: `input.len() == n` on every rank, `output.len() == world_size * n`. Both are
/// symmetric buffers of `ccl`'s context, different allocations. `n == 0` launches nothing.
///
/// Traffic per rank: `(W-1)·n` elements written ([`AllGatherAlgo::Push`]) or read
/// ([`AllGatherAlgo::Pull`]). Asynchronous: [`Ccl::synchronize`] waits and reports a peer
/// that never arrived.
pub fn all_gather<T: CclElement>(
    ccl: &Ccl<'_>,
    input: &SymmetricBuffer<'_, T>,
    output: &SymmetricBuffer<'_, T>,
    algo: AllGatherAlgo,
) -> Result<()> {
    let n = input.len();
    let world = ccl.world_size();
    let expected = n.checked_mul(world).ok_or(crate::Error::SizeOverflow {
        count: n,
        elem_bytes: std::mem::size_of::<T>() * world,
    })?;
    check_len(
        "ccl::all_gather output (world_size x input)",
        expected,
        output.len(),
    )?;
    check_buffers(ccl, "ccl::all_gather", input, output)?;
    if n == 0 {
        return Ok(());
    }
    if algo == AllGatherAlgo::Auto {
        let choice = autotune::choose(ccl, Tuned::AllGather, input, output, n as u64)?;
        let n = n as u64;
        return ccl.launch_blocks(choice.kernel, input, output, n, 0, n, choice.blocks);
    }
    let kernel = match algo {
        AllGatherAlgo::Auto | AllGatherAlgo::Push => KernelId::AllGatherPush,
        AllGatherAlgo::Pull => KernelId::AllGatherPull,
    };
    ccl.launch(kernel, input, output, n as u64, 0, n as u64)
}
