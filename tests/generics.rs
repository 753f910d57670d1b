//! Generic kernels: one definition built for every element type (or the instances its
//! attribute lists), launched through the typed launcher with the type inferred from the
//! buffers or named; const parameters size register arrays and loops; generic device
//! functions are instantiated per call; a type parameter with several bounds (`T: Element +
//! AtomicValue`) is built for the types every bound allows. Run on the CPU backend and any
//! GPU present.

mod common;

use common::backends;
use iris::prelude::*;
use iris::{Buffer, Iris, World};

/// `out[i] = x[i] * k + 1` for every element type (the default instances).
#[iris::kernel]
pub fn axpy_one<T: Element>(x: *const T, out: *mut T, k: T, n: u64) {
    let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as u64;
    if i < n {
        unsafe { *out.add(i as usize) = *x.add(i as usize) * k + T::ONE };
    }
}

#[iris::kernels]
mod tiles {
    use iris::prelude::*;

    /// The sum of `N` consecutive elements, accumulated in `Acc<T>` in a register array.
    #[kernel(instances(T = [f32, bf16, i8, u16], N = [4, 8]))]
    pub fn row_sums<T: Element, const N: usize>(x: *const T, out: *mut T, rows: u64) {
        let r = (block_idx_x() * block_dim_x() + thread_idx_x()) as u64;
        if r < rows {
            let mut acc = [Acc::<T>::ZERO; N];
            for j in 0..N {
                acc[j] = widen(unsafe { *x.add(r as usize * N + j) });
            }
            unsafe { *out.add(r as usize) = narrow::<T>(total(acc)) };
        }
    }

    /// A generic device function, instantiated for each `[A; M]` it is called with.
    fn total<A: Element, const M: usize>(a: [A; M]) -> A {
        let mut s = A::ZERO;
        for i in 0..M {
            s += a[i];
        }
        s
    }

    /// The larger of each pair, for the types a generic `max` keeps exact.
    #[kernel(instances(T = [f64, i64, u8]))]
    pub fn pair_max<T: Element>(a: *const T, b: *const T, out: *mut T, n: u64) {
        let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as u64;
        if i < n {
            unsafe { *out.add(i as usize) = max(*a.add(i as usize), *b.add(i as usize)) };
        }
    }
}

fn launch_axpy<T: Element + iris::Pod>(iris: &Iris, x: &[T], k: T) -> iris::Result<Vec<T>>
where
    (T,): axpy_one::Instance,
{
    let n = x.len();
    let dx = iris.from_slice(x)?;
    let out: Buffer<T> = iris.zeros(n)?;
    // The element type is inferred from the buffers.
    axpy_one::launch(iris, ((n as u32).div_ceil(64), 64), &dx, &out, k, n as u64)?;
    out.to_vec()
}

#[test]
fn one_generic_kernel_runs_for_every_element_type() {
    for backend in backends() {
        World::threads(1)
            .backend(backend)
            .run(|iris| {
                let n = 100;
                let f: Vec<f32> = (0..n).map(|i| i as f32 * 0.25).collect();
                let got = launch_axpy(iris, &f, 2.0f32)?;
                assert!(got.iter().zip(&f).all(|(g, x)| *g == x * 2.0 + 1.0));
                let h: Vec<f16> = (0..n).map(|i| f16::from_f32(i as f32)).collect();
                let got = launch_axpy(iris, &h, f16::from_f32(0.5))?;
                assert!(got
                    .iter()
                    .zip(&h)
                    .all(|(g, x)| g.to_f32() == x.to_f32() * 0.5 + 1.0));
                let u: Vec<u8> = (0..n).map(|i| i as u8).collect();
                let got = launch_axpy(iris, &u, 3u8)?;
                assert!(got
                    .iter()
                    .zip(&u)
                    .all(|(g, x)| *g == x.wrapping_mul(3).wrapping_add(1)));
                let l: Vec<i64> = (0..n).map(|i| i as i64 - 50).collect();
                let got = launch_axpy(iris, &l, -7i64)?;
                assert!(got.iter().zip(&l).all(|(g, x)| *g == x * -7 + 1));
                Ok(())
            })
            .unwrap_or_else(|e| panic!("{backend}: {e}"));
    }
}

/// Generic host code launching a generic kernel names the instances it may launch: the
/// guide's example (docs/guide/02-kernel-language.md).
fn sums_of<T: iris::Pod>(iris: &Iris, x: &Buffer<T>, out: &Buffer<T>, rows: u64) -> iris::Result<()>
where
    (T, iris::ConstUsize<4>): tiles::row_sums::Instance,
{
    tiles::row_sums::launch::<T, 4>(iris, (rows.div_ceil(256) as u32, 256), x, out, rows)
}

#[test]
fn const_parameters_size_register_arrays() {
    for backend in backends() {
        World::threads(1)
            .backend(backend)
            .run(|iris| {
                let rows = 33usize;
                // i8 rows of 8 x 100 = 800 sum in i32 and wrap back: 800 as i8 = 32.
                let x = iris.full::<i8>(rows * 8, 100)?;
                let out: Buffer<i8> = iris.zeros(rows)?;
                tiles::row_sums::launch::<i8, 8>(iris, (1, 64), &x, &out, rows as u64)?;
                assert!(out.to_vec()?.iter().all(|v| *v == 800i32 as i8));
                // bf16: 256 + 1 + 1 + 1 is exact through f32 (259 rounds to 260 in bf16).
                let mut row = [bf16::ONE; 4];
                row[0] = bf16::from_f32(256.0);
                let data: Vec<bf16> = row.iter().copied().cycle().take(rows * 4).collect();
                let x = iris.from_slice(&data)?;
                let out: Buffer<bf16> = iris.zeros(rows)?;
                sums_of(iris, &x, &out, rows as u64)?;
                let want = bf16::from_f32(259.0);
                assert!(
                    out.to_vec()?.iter().all(|v| *v == want),
                    "{:?}",
                    out.to_vec()?
                );
                // f32 rows of 0..8.
                let data: Vec<f32> = (0..rows * 8).map(|i| (i % 8) as f32).collect();
                let x = iris.from_slice(&data)?;
                let out: Buffer<f32> = iris.zeros(rows)?;
                tiles::row_sums::launch::<f32, 8>(iris, (1, 64), &x, &out, rows as u64)?;
                assert!(out.to_vec()?.iter().all(|v| *v == 28.0));
                Ok(())
            })
            .unwrap_or_else(|e| panic!("{backend}: {e}"));
    }
}

#[test]
fn generic_max_matches_the_host() {
    for backend in backends() {
        World::threads(1)
            .backend(backend)
            .run(|iris| {
                let a: Vec<f64> = vec![1.0, -2.0, f64::NAN, 4.0];
                let b: Vec<f64> = vec![0.5, -1.0, 3.0, f64::NAN];
                let (da, db) = (iris.from_slice(&a)?, iris.from_slice(&b)?);
                let out: Buffer<f64> = iris.zeros(4)?;
                tiles::pair_max::launch(iris, (1, 4), &da, &db, &out, 4)?;
                assert_eq!(out.to_vec()?, vec![1.0, -1.0, 3.0, 4.0]);
                let a: Vec<u8> = vec![1, 200, 7, 0];
                let b: Vec<u8> = vec![2, 100, 7, 255];
                let (da, db) = (iris.from_slice(&a)?, iris.from_slice(&b)?);
                let out: Buffer<u8> = iris.zeros(4)?;
                tiles::pair_max::launch::<u8>(iris, (1, 4), &da, &db, &out, 4)?;
                assert_eq!(out.to_vec()?, vec![2, 200, 7, 255]);
                Ok(())
            })
            .unwrap_or_else(|e| panic!("{backend}: {e}"));
    }
}

/// A block reduction: each warp sums its elements (`Element`), lane 0 adds the sum into
/// `out[0]` (`AtomicValue`); built for the types both allow.
#[iris::kernel]
pub fn warp_then_atomic<T: Element + AtomicValue>(x: *const T, out: Symmetric<T>, n: u32, me: u32) {
    let i = block_idx_x() * block_dim_x() + thread_idx_x();
    let v = if i < n {
        unsafe { *x.add(i as usize) }
    } else {
        T::ZERO
    };
    let s = warp_reduce_add(v);
    if lane_id() == 0 {
        atomic_add(out, s, me, Ordering::Relaxed, Scope::System);
    }
}

fn sum_with_warps<T: Element + AtomicValue + iris::Pod>(iris: &Iris, x: &[T]) -> iris::Result<T>
where
    (T,): warp_then_atomic::Instance,
{
    let input = iris.from_slice(x)?;
    let out = iris.symmetric_zeros::<T>(1)?;
    let blocks = (x.len() as u32).div_ceil(128);
    warp_then_atomic::launch(
        iris,
        (blocks, 128),
        &input,
        &out,
        x.len() as u32,
        iris.rank() as u32,
    )?;
    iris.synchronize()?;
    Ok(out.to_vec()?[0])
}

#[test]
fn a_type_parameter_with_two_bounds_takes_the_types_both_allow() {
    // Element + AtomicValue: the 32/64-bit integers and f32, f64 (not i8 or bf16).
    let built: Vec<&str> = warp_then_atomic::UNIT
        .kernels
        .iter()
        .map(|k| k.name)
        .collect();
    assert_eq!(built.len(), 6, "{built:?}");
    assert!(
        built
            .iter()
            .all(|n| !n.contains("bf16") && !n.contains("i8")),
        "{built:?}"
    );
    for backend in backends() {
        World::threads(1)
            .backend(backend)
            .heap_bytes(1 << 20)
            .run(|iris| {
                let ints: Vec<u32> = (0..1000).collect();
                assert_eq!(sum_with_warps(iris, &ints)?, 499_500, "{backend}");
                let floats: Vec<f64> = (0..1000).map(|i| i as f64 * 0.5).collect();
                assert_eq!(sum_with_warps(iris, &floats)?, 249_750.0, "{backend}");
                let longs: Vec<i64> = (0..300).map(|i| i - 150).collect();
                assert_eq!(sum_with_warps(iris, &longs)?, -150, "{backend}");
                Ok(())
            })
            .unwrap_or_else(|e| panic!("{backend}: {e}"));
    }
}
