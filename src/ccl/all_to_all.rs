//! All-to-all: block `p` of rank `r`'s input becomes block `r` of rank `p`'s output.

use super::{check_buffers, check_len, Ccl, CclElement, KernelId};
use crate::{Error, Result, SymmetricBuffer};

/// The kernels, one per element type `T` with `L` elements in 16 bytes: each meets the
/// device-side barrier on entry and on exit (see [`crate::ccl`]'s "What every collective
/// shares") around its data movement.
#[iris::kernels(uses(crate::ccl::barrier))]
#[allow(clippy::too_many_arguments)]
pub(crate) mod kernels {
    use iris::prelude::*;

    /// Stores block `p` of the local input into block `me` of rank `p`'s output (`n`
    /// elements a block), 16 bytes at a time when a block is whole 16-byte chunks.
    #[kernel(instances((f32, 4), (f64, 2), (f16, 8), (bf16, 8), (i32, 4), (u32, 4), (i64, 2), (u64, 2)))]
    pub fn all_to_all<T: Element, const L: usize>(
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
            let mut i = (block_idx_x() * block_dim_x() + thread_idx_x()) as u64;
            let dst = output.add((me as u64 * n) as usize);
            if n % L as u64 == 0 {
                let nv = n / L as u64;
                let src = input.local().cast::<[T; L]>();
                let vdst = dst.cast::<[T; L]>();
                while i < nv {
                    for k in 0..world {
                        let peer = (me + k) % world;
                        let v = unsafe { *src.add((peer as u64 * nv + i) as usize) };
                        store(vdst.add(i as usize), v, peer);
                    }
                    i += stride;
                }
                i = n;
            }
            let src = input.local();
            while i < n {
                for k in 0..world {
                    let peer = (me + k) % world;
                    let v = unsafe { *src.add((peer as u64 * n + i) as usize) };
                    store(dst.add(i as usize), v, peer);
                }
                i += stride;
            }
            ccl_leave(signals, me, world, timeout_ns);
        }
    }
}

/// All-to-all: every rank's `input` is `W` blocks of `c = len / W` elements; block `p` of
/// rank `r`'s input lands in block `r` of rank `p`'s output
/// (`output_p[r*c + j] = input_r[p*c + j]`), the transpose of a `W x W` grid of blocks.
///
/// Shapes: `input.len() == output.len()`, a multiple of `world_size`. Both are symmetric
/// buffers of `ccl`'s context, different allocations. An empty input launches nothing.
///
/// Push: every rank writes `(W-1)·c` elements to its peers, each element once.
/// Asynchronous: [`Ccl::synchronize`] waits and reports a peer that never arrived.
pub fn all_to_all<T: CclElement>(
    ccl: &Ccl<'_>,
    input: &SymmetricBuffer<'_, T>,
    output: &SymmetricBuffer<'_, T>,
) -> Result<()> {
    let world = ccl.world_size();
    check_len(
        "ccl::all_to_all output (same as input)",
        input.len(),
        output.len(),
    )?;
    if input.len() % world != 0 {
        return Err(Error::InvalidConfig(format!(
            "ccl::all_to_all: the input's {} elements do not split into {world} equal blocks (one per rank)",
            input.len()
        )));
    }
    check_buffers(ccl, "ccl::all_to_all", input, output)?;
    let c = (input.len() / world) as u64;
    if c == 0 {
        return Ok(());
    }
    ccl.launch(KernelId::AllToAll, input, output, c, 0, c)
}
