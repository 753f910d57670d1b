//! All-reduce: the element-wise reduction of every rank's input, on every rank.

use super::{check_buffers, check_len, Ccl, CclElement, KernelId, ReduceOp};
use crate::{Result, SymmetricBuffer};

macro_rules! all_reduce_units {
    () => {};
    // A type with a 16-byte vector: the bulk moves 16 bytes a load and a store.
    (
        $m:ident: $t:ident, $acc:ident, |$x:ident| $to:tt, |$y:ident| $from:tt,
        vector($v:ident, $lanes:tt, [$($l:tt),*]);
        $($rest:tt)*
    ) => {
        all_reduce_units!(@unit $m, $t, $acc, |$x| $to, |$y| $from, $lanes, [vector($v, $lanes, [$($l),*])] {
            /// One-shot over the whole vectors of the elements; returns where the
            /// element-wise tail starts.
            fn one_shot_vec(input: Symmetric<$t>, output: Symmetric<$t>, n: u64, op: u32, world: u32) -> u64 {
                let stride = (grid_dim_x() * block_dim_x()) as u64;
                let mut i = (block_idx_x() * block_dim_x() + thread_idx_x()) as u64;
                let nv = n / $lanes;
                let src = input.cast::<$v>();
                let out = output.local().cast::<$v>();
                while i < nv {
                    unsafe { *out.add(i as usize) = ccl_reduce_v(src.add(i as usize), op, world) };
                    i += stride;
                }
                nv * $lanes
            }

            /// Two-shot over the whole vectors of `lo..hi` (`lo` a multiple of the lanes);
            /// returns where the element-wise tail starts.
            fn two_shot_vec(input: Symmetric<$t>, output: Symmetric<$t>, lo: u64, hi: u64, op: u32, me: u32, world: u32) -> u64 {
                let stride = (grid_dim_x() * block_dim_x()) as u64;
                let end = hi / $lanes;
                let mut i = lo / $lanes + (block_idx_x() * block_dim_x() + thread_idx_x()) as u64;
                let src = input.cast::<$v>();
                let dst = output.cast::<$v>();
                while i < end {
                    let v = ccl_reduce_v(src.add(i as usize), op, world);
                    for k in 0..world {
                        store(dst.add(i as usize), v, (me + k) % world);
                    }
                    i += stride;
                }
                (end * $lanes).max(lo)
            }
        });
        all_reduce_units!($($rest)*);
    };
    // A type without one (f16, bf16): element by element.
    ($m:ident: $t:ident, $acc:ident, |$x:ident| $to:tt, |$y:ident| $from:tt, scalar; $($rest:tt)*) => {
        all_reduce_units!(@unit $m, $t, $acc, |$x| $to, |$y| $from, 1, [scalar] {
            fn one_shot_vec(input: Symmetric<$t>, output: Symmetric<$t>, n: u64, op: u32, world: u32) -> u64 {
                0
            }

            fn two_shot_vec(input: Symmetric<$t>, output: Symmetric<$t>, lo: u64, hi: u64, op: u32, me: u32, world: u32) -> u64 {
                lo
            }
        });
        all_reduce_units!($($rest)*);
    };
    (@unit $m:ident, $t:ident, $acc:ident, |$x:ident| $to:tt, |$y:ident| $from:tt, $lanes:tt, [$($vspec:tt)*] { $($vfns:tt)* }) => {
        ccl_unit! {
            $m, $t;
            reduce($acc, |$x| $to, |$y| $from) [$($vspec)*];
            {
                $($vfns)*

                /// `output[i]` = every rank's `input[i]`, combined in rank order.
                fn one_shot_body(input: Symmetric<$t>, output: Symmetric<$t>, n: u64, op: u32, me: u32, world: u32) {
                    let stride = (grid_dim_x() * block_dim_x()) as u64;
                    let mut i = one_shot_vec(input, output, n, op, world)
                        + (block_idx_x() * block_dim_x() + thread_idx_x()) as u64;
                    let out = output.local();
                    while i < n {
                        unsafe { *out.add(i as usize) = ccl_reduce(input.add(i as usize), op, world) };
                        i += stride;
                    }
                }

                /// Reduces this rank's share of the elements (`ceil(n / world)` rounded up
                /// to whole vectors, from `me * share`) over every rank, in rank order, and
                /// stores each result into every rank's `output`.
                fn two_shot_body(input: Symmetric<$t>, output: Symmetric<$t>, n: u64, op: u32, me: u32, world: u32) {
                    let stride = (grid_dim_x() * block_dim_x()) as u64;
                    let share = (n + world as u64 - 1) / world as u64;
                    let share = (share + $lanes - 1) / $lanes * $lanes;
                    let lo = (me as u64 * share).min(n);
                    let hi = (lo + share).min(n);
                    let mut i = two_shot_vec(input, output, lo, hi, op, me, world)
                        + (block_idx_x() * block_dim_x() + thread_idx_x()) as u64;
                    while i < hi {
                        let v = ccl_reduce(input.add(i as usize), op, world);
                        let dst = output.add(i as usize);
                        for k in 0..world {
                            store(dst, v, (me + k) % world);
                        }
                        i += stride;
                    }
                }
            }
            one_shot => one_shot_body,
            two_shot => two_shot_body,
        }
    };
}

all_reduce_units! {
    all_reduce_f32: f32, f32, |x| { x }, |a| { a }, vector(f32x4, 4, [0, 1, 2, 3]);
    all_reduce_f64: f64, f64, |x| { x }, |a| { a }, vector(f64x2, 2, [0, 1]);
    all_reduce_f16: f16, f32, |x| { x.to_f32() }, |a| { f16::from_f32(a) }, scalar;
    all_reduce_bf16: bf16, f32, |x| { x.to_f32() }, |a| { bf16::from_f32(a) }, scalar;
    all_reduce_i32: i32, i32, |x| { x }, |a| { a }, vector(i32x4, 4, [0, 1, 2, 3]);
    all_reduce_u32: u32, u32, |x| { x }, |a| { a }, vector(u32x4, 4, [0, 1, 2, 3]);
    all_reduce_i64: i64, i64, |x| { x }, |a| { a }, vector(i64x2, 2, [0, 1]);
    all_reduce_u64: u64, u64, |x| { x }, |a| { a }, vector(u64x2, 2, [0, 1]);
}

/// How [`all_reduce`] moves the data.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum AllReduceAlgo {
    /// Every rank reads every rank's whole input and reduces all `n` elements itself: one
    /// step, `(W-1)·n` elements read per rank. The choice for small messages, where the
    /// time is latency (measured on one H200 shared by 2 to 8 ranks, the two variants
    /// cross around 256 KiB; `examples/all_reduce` measures your machine).
    #[default]
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
    match algo {
        AllReduceAlgo::OneShot => {
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
