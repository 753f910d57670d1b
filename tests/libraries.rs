//! Shared device libraries: functions of an `#[iris::device]` module called from the kernels
//! of several units (a module and a single kernel), generically too, and the collectives'
//! barrier library from a kernel of this crate. Run on the CPU backend and any GPU present.

mod common;

use common::backends;
use iris::prelude::*;
use iris::{Buffer, World};

/// Arithmetic helpers any kernel of this crate may use.
#[iris::device]
pub mod my_math {
    use iris::prelude::*;

    /// `x + x`, for every element type.
    pub fn twice<T: Element>(x: T) -> T {
        x + x
    }

    /// `x` clamped to `[0, 1]`.
    pub fn clamp01(x: f32) -> f32 {
        x.max(0.0).min(1.0)
    }
}

/// Statistics over register arrays, built on `my_math`'s neighbour.
#[iris::device]
pub mod stats {
    use iris::prelude::*;

    /// The sum of the elements, in the accumulator type.
    pub fn total<T: Element, const N: usize>(a: [T; N]) -> Acc<T> {
        let mut s = Acc::<T>::ZERO;
        for i in 0..N {
            s += widen(a[i]);
        }
        s
    }
}

#[iris::kernels(uses(my_math, stats))]
mod apply {
    use iris::prelude::*;

    /// `x[i] = clamp01(x[i]) + twice(1.0)`, `y[i] = twice(y[i]) + total(4 values)`.
    #[kernel]
    pub fn apply(x: *mut f32, y: *mut i64, n: u64) {
        let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as u64;
        if i < n {
            let k = i as usize;
            unsafe {
                *x.add(k) = clamp01(*x.add(k)) + twice(1.0f32);
                let four = [*y.add(k), 1, 2, 3];
                *y.add(k) = twice(*y.add(k)) + total(four);
            }
        }
    }
}

/// A single kernel using the same library.
#[iris::kernel(uses(my_math))]
pub fn quadruple(x: *mut u16) {
    let i = thread_idx_x() as usize;
    unsafe { *x.add(i) = twice(twice(*x.add(i))) };
}

#[test]
fn kernels_of_several_units_call_one_library() {
    for backend in backends() {
        World::threads(1)
            .backend(backend)
            .run(|iris| {
                let n = 50usize;
                let xs: Vec<f32> = (0..n).map(|i| i as f32 / 25.0 - 0.5).collect();
                let ys: Vec<i64> = (0..n).map(|i| i as i64 - 25).collect();
                let (dx, dy) = (iris.from_slice(&xs)?, iris.from_slice(&ys)?);
                apply::apply::launch(iris, (1, 64), &dx, &dy, n as u64)?;
                let (gx, gy) = (dx.to_vec()?, dy.to_vec()?);
                for i in 0..n {
                    assert_eq!(gx[i], xs[i].clamp(0.0, 1.0) + 2.0, "x[{i}]");
                    assert_eq!(gy[i], 2 * ys[i] + ys[i] + 6, "y[{i}]");
                }
                let q: Buffer<u16> = iris.from_slice(&[1u16, 2, 3, 1000])?;
                quadruple::launch(iris, (1, 4), &q)?;
                assert_eq!(q.to_vec()?, vec![4, 8, 12, 4000]);
                Ok(())
            })
            .unwrap_or_else(|e| panic!("{backend}: {e}"));
    }
}

/// The collectives' barrier library, used by path from this (another) crate.
#[iris::kernels(uses(iris::ccl::barrier))]
mod meet {
    use iris::prelude::*;

    /// Rank `me` writes `me + 1` into slot `me` of the next rank, all ranks meet at the
    /// device barrier, then each reads what the previous rank wrote. `out`: the barrier's
    /// status, then the value read.
    #[kernel]
    pub fn pass_on(
        slots: Symmetric<u32>,
        signals: Symmetric<u64>,
        out: *mut u32,
        me: u32,
        world: u32,
        timeout_ns: u64,
    ) {
        if thread_idx_x() == 0 {
            store(slots.add(me as usize), me + 1, (me + 1) % world);
            let epoch = ccl_epoch(signals, 0, me) + 1;
            let status = ccl_barrier(signals, 0, epoch, me, world, timeout_ns);
            ccl_epoch_done(signals, 0, me, epoch);
            let prev = (me + world - 1) % world;
            unsafe {
                *out = status;
                *out.add(1) = *slots.local().add(prev as usize);
            }
        }
    }
}

#[test]
fn another_crate_s_kernels_use_the_ccl_barrier_library_by_path() {
    for backend in backends() {
        for world in [1usize, 2, 4] {
            let got = World::threads(world)
                .backend(backend)
                .heap_bytes(1 << 20)
                .run(|iris| {
                    let ccl = iris::ccl::Ccl::new(iris)?;
                    let slots = iris.symmetric_zeros::<u32>(world)?;
                    let out: Buffer<u32> = iris.full(2, u32::MAX)?;
                    let config = ccl.launch_config_for(&meet::pass_on::UNIT, 1)?;
                    assert!(config.grid[0] >= 1);
                    let (me, w) = (iris.rank() as u32, world as u32);
                    meet::pass_on::launch(
                        iris,
                        (1, 1),
                        &slots,
                        ccl.signals(),
                        &out,
                        me,
                        w,
                        ccl.wait_limit_ns(),
                    )?;
                    ccl.synchronize()?;
                    out.to_vec()
                })
                .unwrap_or_else(|e| panic!("{backend} at {world} ranks: {e}"));
            for (rank, o) in got.iter().enumerate() {
                let prev = (rank + world - 1) % world;
                assert_eq!(
                    o,
                    &vec![0, prev as u32 + 1],
                    "{backend} at {world} ranks, rank {rank}"
                );
            }
        }
    }
}
