//! All-to-all: block `p` of rank `r`'s input becomes block `r` of rank `p`'s output.

use super::{check_buffers, check_len, Ccl, CclElement, KernelId};
use crate::{Error, Result, SymmetricBuffer};

macro_rules! all_to_all_units {
    ($($m:ident: $t:ident, $bits:ident, $per:tt;)*) => {$(
        ccl_unit! {
            $m, $t;
            {
                /// Stores block `p` of the local input into block `me` of rank `p`'s output
                /// (`n` elements a block), 16 bytes at a time when a block is whole 16-byte
                /// vectors.
                fn all_to_all_body(input: Symmetric<$t>, output: Symmetric<$t>, n: u64, arg: u32, me: u32, world: u32) {
                    let stride = (grid_dim_x() * block_dim_x()) as u64;
                    let mut i = (block_idx_x() * block_dim_x() + thread_idx_x()) as u64;
                    let dst = output.add((me as u64 * n) as usize);
                    if n % $per == 0 {
                        let nv = n / $per;
                        let src = input.local().cast::<$bits>();
                        let vdst = dst.cast::<$bits>();
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
                }
            }
            all_to_all => all_to_all_body,
        }
    )*};
}

all_to_all_units! {
    all_to_all_f32: f32, u32x4, 4;
    all_to_all_f64: f64, u64x2, 2;
    all_to_all_f16: f16, u32x4, 8;
    all_to_all_bf16: bf16, u32x4, 8;
    all_to_all_i32: i32, u32x4, 4;
    all_to_all_u32: u32, u32x4, 4;
    all_to_all_i64: i64, u64x2, 2;
    all_to_all_u64: u64, u64x2, 2;
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
