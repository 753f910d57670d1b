//! All-reduce fused with the residual add and RMSNorm that follow it in a
//! tensor-parallel transformer layer: one kernel instead of an all-reduce, an add and a
//! normalization, each of which would read and write the whole activation.

use super::{check_buffers, check_len, AllReduceAlgo, Ccl, FloatElement, KernelId, LocalArray};
use crate::{Error, LaunchConfig, Result, SymmetricBuffer};

/// The kernels, one per element type `T` with `L` elements in 16 bytes.
#[iris::kernels(uses(crate::ccl::barrier))]
#[allow(clippy::too_many_arguments)]
pub(crate) mod kernels {
    use iris::prelude::*;

    /// Row by row (one block a row): `sum` = every rank's `input` row added in rank order
    /// in `f32`, then this rank's `residual` row; `residual` = `sum` rounded to `T`;
    /// `output` = `residual * gamma / sqrt(mean(residual²) + eps)`. One-shot: every rank
    /// computes every row. Two-shot (`two_shot` = 1): rank `me` computes rows `me`,
    /// `me + world`, ... and stores both results into every rank's copies.
    #[kernel(instances((f32, 4), (f16, 8), (bf16, 8)))]
    pub fn all_reduce_rmsnorm<T: Element, const L: usize>(
        input: Symmetric<T>,
        residual: Symmetric<T>,
        gamma: *const T,
        output: Symmetric<T>,
        signals: Symmetric<u64>,
        rows: u64,
        hidden: u64,
        eps: f32,
        two_shot: u32,
        me: u32,
        world: u32,
        timeout_ns: u64,
    ) {
        let status = shared_array::<u32, 1>();
        let partial = shared_array::<f32, 32>();
        if ccl_block_enter(signals, status, me, world, timeout_ns) {
            let lanes = L as u64;
            let threads = block_dim_x() as u64;
            let warps = block_dim_x() / warp_size();
            let (mut row, step) = if two_shot != 0 {
                (
                    me as u64 + world as u64 * block_idx_x() as u64,
                    world as u64 * grid_dim_x() as u64,
                )
            } else {
                (block_idx_x() as u64, grid_dim_x() as u64)
            };
            let vectors = if hidden % lanes == 0 {
                hidden / lanes
            } else {
                0
            };
            while row < rows {
                let at = (row * hidden) as usize;
                let res = residual.local();
                // The sums, rounded, into this rank's residual; the sum of their squares.
                let mut squares = 0.0f32;
                let mut v = thread_idx_x() as u64;
                while v < vectors {
                    let src = input.add(at).cast::<[T; L]>().add(v as usize);
                    let mut acc = [0.0f32; L];
                    for r in 0..world {
                        let x = load(src, r);
                        for l in 0..L {
                            acc[l] += x[l].to_f32();
                        }
                    }
                    let dst = unsafe { res.add(at) }.cast::<[T; L]>();
                    let old = unsafe { *dst.add(v as usize) };
                    let mut sum = [T::ZERO; L];
                    for l in 0..L {
                        sum[l] = T::from_f32(acc[l] + old[l].to_f32());
                        let s = sum[l].to_f32();
                        squares += s * s;
                    }
                    unsafe { *dst.add(v as usize) = sum };
                    v += threads;
                }
                let mut h = if vectors == 0 {
                    thread_idx_x() as u64
                } else {
                    hidden
                };
                while h < hidden {
                    let src = input.add(at + h as usize);
                    let mut acc = 0.0f32;
                    for r in 0..world {
                        acc += load(src, r).to_f32();
                    }
                    let dst = unsafe { res.add(at + h as usize) };
                    let sum = T::from_f32(acc + unsafe { *dst }.to_f32());
                    let s = sum.to_f32();
                    squares += s * s;
                    unsafe { *dst = sum };
                    h += threads;
                }
                // The block's sum of squares, added warp by warp in the same order in
                // every thread.
                let in_warp = warp_reduce_add(squares);
                if lane_id() == 0 {
                    unsafe { *partial.add(warp_id() as usize) = in_warp };
                }
                sync_threads();
                let mut total = 0.0f32;
                for w in 0..warps {
                    total += unsafe { *partial.add(w as usize) };
                }
                sync_threads();
                let scale = 1.0f32 / (total / hidden as f32 + eps).sqrt();
                // The normalized row (and, two-shot, the residual) to every rank that
                // needs it.
                let targets = if two_shot != 0 { world } else { 1 };
                let mut v = thread_idx_x() as u64;
                while v < vectors {
                    let sum = unsafe { *res.add(at).cast::<[T; L]>().add(v as usize) };
                    let g = unsafe { *gamma.cast::<[T; L]>().add(v as usize) };
                    let mut y = [T::ZERO; L];
                    for l in 0..L {
                        y[l] = T::from_f32(sum[l].to_f32() * scale * g[l].to_f32());
                    }
                    for k in 0..targets {
                        let peer = (me + k) % world;
                        store(output.add(at).cast::<[T; L]>().add(v as usize), y, peer);
                        if k > 0 {
                            store(residual.add(at).cast::<[T; L]>().add(v as usize), sum, peer);
                        }
                    }
                    v += threads;
                }
                let mut h = if vectors == 0 {
                    thread_idx_x() as u64
                } else {
                    hidden
                };
                while h < hidden {
                    let sum = unsafe { *res.add(at + h as usize) };
                    let g = unsafe { *gamma.add(h as usize) };
                    let y = T::from_f32(sum.to_f32() * scale * g.to_f32());
                    for k in 0..targets {
                        let peer = (me + k) % world;
                        store(output.add(at + h as usize), y, peer);
                        if k > 0 {
                            store(residual.add(at + h as usize), sum, peer);
                        }
                    }
                    h += threads;
                }
                row += step;
            }
            ccl_block_leave(signals, me, world, timeout_ns);
        }
    }
}

/// All-reduce, residual add and RMSNorm in one kernel, as a tensor-parallel layer ends:
/// for each row of `hidden = gamma.len()` elements, `sum` = every rank's `input`
/// row added in rank order in `f32`, plus this rank's `residual` row; `residual` becomes
/// `sum` rounded to `T` (the next layer's residual), and `output` = `residual * gamma /
/// sqrt(mean(residual²) + eps)` (in `f32` from the rounded residual, rounded once).
/// `gamma` is this rank's (a [`Buffer`](crate::Buffer), or the local copy of a symmetric
/// buffer); `eps` a finite number `>= 0`.
///
/// `algo`: [`AllReduceAlgo::OneShot`] computes every row on every rank (reads `(W-1)·n`);
/// [`AllReduceAlgo::TwoShot`] computes every `W`-th row on each rank and stores the row's
/// residual and output into every rank's (`(W-1)·n/W` read, twice that written), so it
/// takes the owning rank's residual: give every rank the same residual, as a
/// tensor-parallel layer has. Every rank's results are bit-identical either way.
/// [`AllReduceAlgo::Auto`] is not measured here: two-shot above 256 KiB a rank.
///
/// Shapes: `input`, `residual` and `output` of the same length, a whole number of rows;
/// `hidden` at least 1; three different symmetric allocations of `ccl`'s context. The
/// sum of squares is added per thread, per warp, then warp by warp: not in the order of
/// a sequential loop, so it may differ from one in the last bit.
/// Collective, asynchronous: [`Ccl::synchronize`] waits and reports a peer that never
/// arrived.
///
/// ```
/// use iris::ccl::{self, AllReduceAlgo, Ccl};
/// use iris::prelude::bf16;
/// use iris::World;
///
/// # fn main() -> iris::Result<()> {
/// World::threads(2).heap_bytes(1 << 20).run(|iris| {
///     let ccl = Ccl::new(iris)?;
///     let (rows, hidden) = (3, 64);
///     let partial = iris.symmetric_full(rows * hidden, bf16::from_f32(1.0))?;
///     let residual = iris.symmetric_full(rows * hidden, bf16::from_f32(1.0))?;
///     let out = iris.symmetric_zeros::<bf16>(rows * hidden)?;
///     let gamma = iris.full(hidden, bf16::from_f32(0.5))?;
///     ccl::all_reduce_rmsnorm(&ccl, &partial, &residual, &gamma, 0.0, &out, AllReduceAlgo::OneShot)?;
///     ccl.synchronize()?;
///     // 1 + 1 + 1 = 3 everywhere: its RMS is 3, so every output is 0.5.
///     assert!(residual.to_vec()?.iter().all(|x| x.to_f32() == 3.0));
///     assert!(out.to_vec()?.iter().all(|x| x.to_f32() == 0.5));
///     Ok(())
/// })?;
/// # Ok(())
/// # }
/// ```
pub fn all_reduce_rmsnorm<T: FloatElement>(
    ccl: &Ccl<'_>,
    input: &SymmetricBuffer<'_, T>,
    residual: &SymmetricBuffer<'_, T>,
    gamma: &impl LocalArray<T>,
    eps: f32,
    output: &SymmetricBuffer<'_, T>,
    algo: AllReduceAlgo,
) -> Result<()> {
    let what = "ccl::all_reduce_rmsnorm";
    let hidden = gamma.len();
    if hidden == 0 || input.len() % hidden != 0 {
        return Err(Error::InvalidConfig(format!(
            "{what}: the input's {} elements are not whole rows of gamma's {hidden}",
            input.len()
        )));
    }
    check_len(
        "ccl::all_reduce_rmsnorm residual (same as input)",
        input.len(),
        residual.len(),
    )?;
    check_len(
        "ccl::all_reduce_rmsnorm output (same as input)",
        input.len(),
        output.len(),
    )?;
    check_buffers(ccl, what, input, output)?;
    check_buffers(ccl, what, input, residual)?;
    check_buffers(ccl, what, residual, output)?;
    if !eps.is_finite() || eps < 0.0 {
        return Err(Error::InvalidConfig(format!(
            "{what}: eps {eps} is not a finite number >= 0"
        )));
    }
    let rows = input.len() / hidden;
    if rows == 0 {
        return Ok(());
    }
    let world = ccl.world_size();
    let kernel = KernelId::AllReduceRmsNorm;
    let framed = ccl.launch_config_for(kernel.unit(), ccl.block_threads())?;
    let two_shot = match algo {
        AllReduceAlgo::TwoShot => true,
        AllReduceAlgo::OneShot => false,
        // Not measured: the fixed rule.
        AllReduceAlgo::Auto => {
            (input.len() * std::mem::size_of::<T>()) as u64 > super::autotune::ONE_SHOT_BYTES
        }
    };
    let per_rank = if two_shot { rows.div_ceil(world) } else { rows };
    let blocks = framed.grid[0].min(per_rank.max(1) as u32);
    let iris = ccl.iris();
    let _span = iris.trace_span(
        kernel.call_name(),
        (input.len() * std::mem::size_of::<T>()) as u64,
    );
    ccl.wait_for_device_peers()?;
    let mut args = iris.args(kernel.unit(), kernel.index::<T>()?);
    args.symmetric(input)?;
    args.symmetric(residual)?;
    args.pointer(&gamma.local_ptr())?;
    args.symmetric(output)?;
    args.symmetric(ccl.signals())?;
    args.value(rows as u64);
    args.value(hidden as u64);
    args.value(eps);
    args.value(u32::from(two_shot));
    args.value(ccl.rank() as u32);
    args.value(world as u32);
    args.value(ccl.wait_limit_ns());
    iris.launch(LaunchConfig::linear(blocks, ccl.block_threads()), args)
}
