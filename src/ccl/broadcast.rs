//! Broadcast: the root's elements on every rank.

use super::{check_buffers, check_len, Ccl, CclElement, KernelId};
use crate::{Error, Result, SymmetricBuffer};

macro_rules! broadcast_units {
    ($($m:ident: $t:ident, $bits:ident, $per:tt;)*) => {$(
        ccl_unit! {
            $m, $t;
            {
                /// Reads rank `root`'s `input` into the local `output`, 16 bytes at a time
                /// but for the last few elements.
                fn broadcast_body(input: Symmetric<$t>, output: Symmetric<$t>, n: u64, root: u32, me: u32, world: u32) {
                    let stride = (grid_dim_x() * block_dim_x()) as u64;
                    let first = (block_idx_x() * block_dim_x() + thread_idx_x()) as u64;
                    let nv = n / $per;
                    let src = input.cast::<$bits>();
                    let vout = output.local().cast::<$bits>();
                    let mut i = first;
                    while i < nv {
                        unsafe { *vout.add(i as usize) = load(src.add(i as usize), root) };
                        i += stride;
                    }
                    let out = output.local();
                    let mut j = nv * $per + first;
                    while j < n {
                        unsafe { *out.add(j as usize) = load(input.add(j as usize), root) };
                        j += stride;
                    }
                }
            }
            broadcast => broadcast_body,
        }
    )*};
}

broadcast_units! {
    broadcast_f32: f32, u32x4, 4;
    broadcast_f64: f64, u64x2, 2;
    broadcast_f16: f16, u32x4, 8;
    broadcast_bf16: bf16, u32x4, 8;
    broadcast_i32: i32, u32x4, 4;
    broadcast_u32: u32, u32x4, 4;
    broadcast_i64: i64, u64x2, 2;
    broadcast_u64: u64, u64x2, 2;
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
