//! All-gather: every rank's `n` elements, concatenated in rank order, on every rank.

use super::{check_buffers, check_len, Ccl, CclElement, KernelId};
use crate::{Result, SymmetricBuffer};

macro_rules! all_gather_units {
    ($($m:ident: $t:ident, $bits:ident, $per:tt;)*) => {$(
        ccl_unit! {
            $m, $t;
            {
                /// Writes the local `input[i]` into slot `me` of every rank's `output`, 16
                /// bytes at a time when `n` elements are whole 16-byte vectors.
                fn push_body(input: Symmetric<$t>, output: Symmetric<$t>, n: u64, arg: u32, me: u32, world: u32) {
                    let stride = (grid_dim_x() * block_dim_x()) as u64;
                    let first = (block_idx_x() * block_dim_x() + thread_idx_x()) as u64;
                    let slot = output.add((me as u64 * n) as usize);
                    let mut i = first;
                    if n % $per == 0 {
                        let src = input.local().cast::<$bits>();
                        let dst = slot.cast::<$bits>();
                        while i < n / $per {
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
                }

                /// Reads every rank's `input[i]` into slot `rank` of the local `output`, 16
                /// bytes at a time when `n` elements are whole 16-byte vectors.
                fn pull_body(input: Symmetric<$t>, output: Symmetric<$t>, n: u64, arg: u32, me: u32, world: u32) {
                    let stride = (grid_dim_x() * block_dim_x()) as u64;
                    let first = (block_idx_x() * block_dim_x() + thread_idx_x()) as u64;
                    let mut i = first;
                    if n % $per == 0 {
                        let nv = n / $per;
                        let src = input.cast::<$bits>();
                        let out = output.local().cast::<$bits>();
                        while i < nv {
                            for k in 0..world {
                                let peer = (me + k) % world;
                                unsafe { *out.add((peer as u64 * nv + i) as usize) = load(src.add(i as usize), peer) };
                            }
                            i += stride;
                        }
                        i = n;
                    }
                    let out = output.local();
                    while i < n {
                        for k in 0..world {
                            let peer = (me + k) % world;
                            unsafe { *out.add((peer as u64 * n + i) as usize) = load(input.add(i as usize), peer) };
                        }
                        i += stride;
                    }
                }
            }
            push => push_body,
            pull => pull_body,
        }
    )*};
}

all_gather_units! {
    all_gather_f32: f32, u32x4, 4;
    all_gather_f64: f64, u64x2, 2;
    all_gather_f16: f16, u32x4, 8;
    all_gather_bf16: bf16, u32x4, 8;
    all_gather_i32: i32, u32x4, 4;
    all_gather_u32: u32, u32x4, 4;
    all_gather_i64: i64, u64x2, 2;
    all_gather_u64: u64, u64x2, 2;
}

/// How [`all_gather`] moves the data.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum AllGatherAlgo {
    /// Every rank stores its elements into every rank's output (remote writes). The
    /// default: stores do not wait for a reply, so it saturates links with fewer threads.
    #[default]
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
    let kernel = match algo {
        AllGatherAlgo::Push => KernelId::AllGatherPush,
        AllGatherAlgo::Pull => KernelId::AllGatherPull,
    };
    ccl.launch(kernel, input, output, n as u64, 0, n as u64)
}
