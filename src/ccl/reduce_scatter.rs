//! Reduce-scatter: rank `r` gets the reduction of every rank's `r`-th block.

use super::{check_buffers, check_len, Ccl, CclElement, KernelId, ReduceOp};
use crate::{Result, SymmetricBuffer};

macro_rules! reduce_scatter_units {
    () => {};
    // A type with a 16-byte vector: blocks of whole vectors move 16 bytes a load.
    (
        $m:ident: $t:ident, $acc:ident, |$x:ident| $to:tt, |$y:ident| $from:tt,
        vector($v:ident, $lanes:tt, [$($l:tt),*]);
        $($rest:tt)*
    ) => {
        reduce_scatter_units!(@unit $m, $t, $acc, |$x| $to, |$y| $from, [vector($v, $lanes, [$($l),*])] {
            /// The whole block at vector granularity when its length allows; returns how
            /// many elements it did (0 or `n`).
            fn reduce_scatter_vec(input: Symmetric<$t>, output: Symmetric<$t>, n: u64, op: u32, me: u32, world: u32) -> u64 {
                if n % $lanes != 0 {
                    return 0;
                }
                let stride = (grid_dim_x() * block_dim_x()) as u64;
                let mut i = (block_idx_x() * block_dim_x() + thread_idx_x()) as u64;
                let src = input.add((me as u64 * n) as usize).cast::<$v>();
                let out = output.local().cast::<$v>();
                while i < n / $lanes {
                    unsafe { *out.add(i as usize) = ccl_reduce_v(src.add(i as usize), op, world) };
                    i += stride;
                }
                n
            }
        });
        reduce_scatter_units!($($rest)*);
    };
    // A type without one (f16, bf16): element by element.
    ($m:ident: $t:ident, $acc:ident, |$x:ident| $to:tt, |$y:ident| $from:tt, scalar; $($rest:tt)*) => {
        reduce_scatter_units!(@unit $m, $t, $acc, |$x| $to, |$y| $from, [scalar] {
            fn reduce_scatter_vec(input: Symmetric<$t>, output: Symmetric<$t>, n: u64, op: u32, me: u32, world: u32) -> u64 {
                0
            }
        });
        reduce_scatter_units!($($rest)*);
    };
    (@unit $m:ident, $t:ident, $acc:ident, |$x:ident| $to:tt, |$y:ident| $from:tt, [$($vspec:tt)*] { $($vfns:tt)* }) => {
        ccl_unit! {
            $m, $t;
            reduce($acc, |$x| $to, |$y| $from) [$($vspec)*];
            {
                $($vfns)*

                /// `output[j]` = every rank's `input[me * n + j]`, combined in rank order.
                fn reduce_scatter_body(input: Symmetric<$t>, output: Symmetric<$t>, n: u64, op: u32, me: u32, world: u32) {
                    let stride = (grid_dim_x() * block_dim_x()) as u64;
                    let mut j = reduce_scatter_vec(input, output, n, op, me, world)
                        + (block_idx_x() * block_dim_x() + thread_idx_x()) as u64;
                    let block = input.add((me as u64 * n) as usize);
                    let out = output.local();
                    while j < n {
                        unsafe { *out.add(j as usize) = ccl_reduce(block.add(j as usize), op, world) };
                        j += stride;
                    }
                }
            }
            reduce_scatter => reduce_scatter_body,
        }
    };
}

reduce_scatter_units! {
    reduce_scatter_f32: f32, f32, |x| { x }, |a| { a }, vector(f32x4, 4, [0, 1, 2, 3]);
    reduce_scatter_f64: f64, f64, |x| { x }, |a| { a }, vector(f64x2, 2, [0, 1]);
    reduce_scatter_f16: f16, f32, |x| { x.to_f32() }, |a| { f16::from_f32(a) }, scalar;
    reduce_scatter_bf16: bf16, f32, |x| { x.to_f32() }, |a| { bf16::from_f32(a) }, scalar;
    reduce_scatter_i32: i32, i32, |x| { x }, |a| { a }, vector(i32x4, 4, [0, 1, 2, 3]);
    reduce_scatter_u32: u32, u32, |x| { x }, |a| { a }, vector(u32x4, 4, [0, 1, 2, 3]);
    reduce_scatter_i64: i64, i64, |x| { x }, |a| { a }, vector(i64x2, 2, [0, 1]);
    reduce_scatter_u64: u64, u64, |x| { x }, |a| { a }, vector(u64x2, 2, [0, 1]);
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
