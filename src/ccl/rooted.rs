//! Rooted collectives: reduce (every rank's input combined, on the root), gather (every
//! rank's input side by side, on the root) and scatter (the root's input cut into one part
//! per rank). Each pulls: the rank that needs data reads it from the ranks that hold it.

use super::{check_buffers, check_len, Ccl, CclElement, KernelId, ReduceOp};
use crate::{Error, Result, SymmetricBuffer};

/// The kernels, one per element type `T` with `L` elements in 16 bytes: each meets the
/// device-side barrier on entry and on exit (see [`crate::ccl`]'s "What every collective
/// shares") around its data movement. `arg` is the root (and, for `reduce`, the
/// reduction's code in its low 8 bits, the root above them).
#[iris::kernels(uses(crate::ccl::barrier, crate::ccl::reduction))]
#[allow(clippy::too_many_arguments)]
pub(crate) mod kernels {
    use iris::prelude::*;

    /// On the root: `output[i]` = every rank's `input[i]`, combined in rank order.
    #[kernel(instances((f32, 4), (f64, 2), (f16, 8), (bf16, 8), (i32, 4), (u32, 4), (i64, 2), (u64, 2)))]
    pub fn reduce_to_root<T: Element, const L: usize>(
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
            let (op, root) = (arg & 0xff, arg >> 8);
            if me == root {
                reduce_all_into::<T, L>(input, output.local(), n, op, world);
            }
            ccl_leave(signals, me, world, timeout_ns);
        }
    }

    /// On the root: `output[r * n + i]` = rank `r`'s `input[i]`.
    #[kernel(instances((f32, 4), (f64, 2), (f16, 8), (bf16, 8), (i32, 4), (u32, 4), (i64, 2), (u64, 2)))]
    pub fn gather<T: Element, const L: usize>(
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
            if me == arg {
                let stride = (grid_dim_x() * block_dim_x()) as u64;
                let first = (block_idx_x() * block_dim_x() + thread_idx_x()) as u64;
                let out = output.local();
                for peer in 0..world {
                    let base = peer as u64 * n;
                    let mut i = first;
                    while i < n {
                        unsafe {
                            *out.add((base + i) as usize) = load(input.add(i as usize), peer)
                        };
                        i += stride;
                    }
                }
            }
            ccl_leave(signals, me, world, timeout_ns);
        }
    }

    /// On every rank: `output[i]` = the root's `input[me * n + i]`.
    #[kernel(instances((f32, 4), (f64, 2), (f16, 8), (bf16, 8), (i32, 4), (u32, 4), (i64, 2), (u64, 2)))]
    pub fn scatter<T: Element, const L: usize>(
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
            let out = output.local();
            let base = me as u64 * n;
            let mut i = first;
            while i < n {
                unsafe { *out.add(i as usize) = load(input.add((base + i) as usize), arg) };
                i += stride;
            }
            ccl_leave(signals, me, world, timeout_ns);
        }
    }
}

/// `root` as a rank of `ccl`'s world, or an error naming the collective.
fn check_root(ccl: &Ccl<'_>, what: &str, root: usize) -> Result<u32> {
    let world = ccl.world_size();
    if root >= world || root >= 1 << 24 {
        return Err(Error::InvalidConfig(format!(
            "{what}: root {root} is not a rank of a world of {world}"
        )));
    }
    Ok(root as u32)
}

/// Reduce: every rank's `input` combined element by element with `op`, in rank order,
/// into the root's `output` (the other ranks' outputs are not written).
///
/// Shapes: `input.len() == output.len()` on every rank; `root < world_size`. The root
/// reads every rank's input (`(W-1)·n` elements over its links).
/// Asynchronous: [`Ccl::synchronize`] waits and reports a peer that never arrived.
pub fn reduce<T: CclElement>(
    ccl: &Ccl<'_>,
    input: &SymmetricBuffer<'_, T>,
    output: &SymmetricBuffer<'_, T>,
    op: ReduceOp,
    root: usize,
) -> Result<()> {
    let root = check_root(ccl, "ccl::reduce", root)?;
    check_len(
        "ccl::reduce output (same as input)",
        input.len(),
        output.len(),
    )?;
    check_buffers(ccl, "ccl::reduce", input, output)?;
    let n = input.len() as u64;
    if n == 0 {
        return Ok(());
    }
    ccl.launch(KernelId::Reduce, input, output, n, op.code() | root << 8, n)
}

/// Gather: every rank's `input` side by side in the root's `output` (rank `r`'s at
/// `r * input.len()`); the other ranks' outputs are not written.
///
/// Shapes: `output.len() == world_size * input.len()` on every rank (symmetric buffers are
/// the same size everywhere); `root < world_size`.
/// Asynchronous: [`Ccl::synchronize`] waits and reports a peer that never arrived.
pub fn gather<T: CclElement>(
    ccl: &Ccl<'_>,
    input: &SymmetricBuffer<'_, T>,
    output: &SymmetricBuffer<'_, T>,
    root: usize,
) -> Result<()> {
    let parts = Parts {
        what: "ccl::gather",
        shape: "ccl::gather output (world size x input)",
        whole: output.len(),
        part: input.len(),
    };
    launch_parts(ccl, KernelId::Gather, parts, input, output, root)
}

/// Scatter: the root's `input` cut into `world_size` parts, part `r` into rank `r`'s
/// `output` (the other ranks' inputs are not read).
///
/// Shapes: `input.len() == world_size * output.len()` on every rank; `root < world_size`.
/// Asynchronous: [`Ccl::synchronize`] waits and reports a peer that never arrived.
pub fn scatter<T: CclElement>(
    ccl: &Ccl<'_>,
    input: &SymmetricBuffer<'_, T>,
    output: &SymmetricBuffer<'_, T>,
    root: usize,
) -> Result<()> {
    let parts = Parts {
        what: "ccl::scatter",
        shape: "ccl::scatter input (world size x output)",
        whole: input.len(),
        part: output.len(),
    };
    launch_parts(ccl, KernelId::Scatter, parts, input, output, root)
}

/// The shape of a collective that moves one part per rank: the buffer holding every part
/// (`whole` elements) and the one holding one (`part`).
struct Parts {
    what: &'static str,
    shape: &'static str,
    whole: usize,
    part: usize,
}

/// Checks `parts` (`whole == world_size * part`), the root and the buffers, then launches
/// `kernel` over `part` elements (nothing for an empty part).
fn launch_parts<T: CclElement>(
    ccl: &Ccl<'_>,
    kernel: KernelId,
    parts: Parts,
    input: &SymmetricBuffer<'_, T>,
    output: &SymmetricBuffer<'_, T>,
    root: usize,
) -> Result<()> {
    let root = check_root(ccl, parts.what, root)?;
    let want = parts.part.saturating_mul(ccl.world_size());
    check_len(parts.shape, want, parts.whole)?;
    check_buffers(ccl, parts.what, input, output)?;
    let n = parts.part as u64;
    if n == 0 {
        return Ok(());
    }
    ccl.launch(kernel, input, output, n, root, n)
}
