//! Warp operations compute what a warp computes: lane and warp ids, the four shuffles of
//! several types, votes and reductions, in full warps and in the short last warp of a
//! block, on the CPU backend and any GPU present (checked against a model of the warp
//! built from the device's own warp size).

mod common;

use common::backends;
use iris::prelude::*;
use iris::{Buffer, Iris, World};

#[iris::kernels]
mod warps {
    use iris::prelude::*;

    /// Lane, warp and warp size of every thread.
    #[kernel]
    pub fn ids(out: *mut u32) {
        let t = thread_idx_x() as usize;
        unsafe {
            *out.add(t * 3) = lane_id();
            *out.add(t * 3 + 1) = warp_id();
            *out.add(t * 3 + 2) = warp_size();
        }
    }

    /// The four shuffles of `x[t]` with argument `k`.
    #[kernel(instances(T = [u32, f64, bf16, i8, u64]))]
    pub fn shuffles<T: Element>(x: *const T, out: *mut T, k: u32) {
        let t = thread_idx_x() as usize;
        let v = unsafe { *x.add(t) };
        let (a, b, c, d) = (shfl(v, k), shfl_xor(v, k), shfl_down(v, k), shfl_up(v, k));
        unsafe {
            *out.add(t * 4) = a;
            *out.add(t * 4 + 1) = b;
            *out.add(t * 4 + 2) = c;
            *out.add(t * 4 + 3) = d;
        }
    }

    /// Shuffles of a vector, a bool and a pointer: lane `t` reads lane `t ^ 1`.
    #[kernel]
    pub fn shuffle_kinds(x: *const f32x4, out: *mut f32x4, flags: *mut u32, addrs: *mut u64) {
        let t = thread_idx_x() as usize;
        let v = shfl_xor(unsafe { *x.add(t) }, 1);
        let odd = shfl_xor(t % 2 == 1, 1);
        let p = shfl_xor(unsafe { x.add(t) }, 1);
        unsafe {
            *out.add(t) = v;
            *flags.add(t) = if odd { 1 } else { 0 };
            *addrs.add(t) = p as u64;
        }
    }

    /// Ballot, any and all of `x[t] != 0`.
    #[kernel]
    pub fn votes(x: *const u32, out: *mut u64) {
        let t = thread_idx_x() as usize;
        let p = unsafe { *x.add(t) } != 0;
        let (b, a, l) = (ballot(p), any(p), all(p));
        warp_sync();
        unsafe {
            *out.add(t * 3) = b;
            *out.add(t * 3 + 1) = if a { 1 } else { 0 };
            *out.add(t * 3 + 2) = if l { 1 } else { 0 };
        }
    }

    /// Sum, minimum and maximum of `x[t]` over the warp.
    #[kernel(instances(T = [i32, f32, u64, f16]))]
    pub fn reduces<T: Element>(x: *const T, out: *mut T) {
        let t = thread_idx_x() as usize;
        let v = unsafe { *x.add(t) };
        let (s, lo, hi) = (warp_reduce_add(v), warp_reduce_min(v), warp_reduce_max(v));
        unsafe {
            *out.add(t * 3) = s;
            *out.add(t * 3 + 1) = lo;
            *out.add(t * 3 + 2) = hi;
        }
    }
}

/// The warp of thread `t` in a block of `threads`: (lane, first thread, lanes present).
fn warp_of(t: usize, threads: usize, w: usize) -> (usize, usize, usize) {
    let first = t / w * w;
    (t % w, first, (threads - first).min(w))
}

fn warp_size(iris: &Iris) -> iris::Result<usize> {
    let out: Buffer<u32> = iris.zeros(3 * 64)?;
    warps::ids::launch(iris, (1, 64), &out)?;
    let ids = out.to_vec()?;
    let w = ids[2] as usize;
    for t in 0..64 {
        assert_eq!(ids[t * 3], (t % w) as u32, "lane of {t}");
        assert_eq!(ids[t * 3 + 1], (t / w) as u32, "warp of {t}");
        assert_eq!(ids[t * 3 + 2], w as u32);
    }
    Ok(w)
}

/// Which lane a shuffle reads, by the rule every target follows (own lane outside).
fn source(kind: usize, lane: usize, k: usize, w: usize) -> usize {
    let src = match kind {
        0 => Some(k),
        1 => Some(lane ^ k),
        2 => lane.checked_add(k),
        _ => lane.checked_sub(k),
    };
    src.filter(|s| *s < w).unwrap_or(lane)
}

fn check_shuffles<T>(iris: &Iris, w: usize, make: impl Fn(usize) -> T) -> iris::Result<()>
where
    T: Element + iris::Pod + std::fmt::Debug,
    (T,): warps::shuffles::Instance,
{
    let threads = 2 * w;
    let x: Vec<T> = (0..threads).map(&make).collect();
    let dx = iris.from_slice(&x)?;
    for k in [0usize, 1, 3, w - 1, w, w + 5] {
        let out: Buffer<T> = iris.zeros(threads * 4)?;
        warps::shuffles::launch(iris, (1, threads as u32), &dx, &out, k as u32)?;
        let got = out.to_vec()?;
        for t in 0..threads {
            let (lane, first, _) = warp_of(t, threads, w);
            for kind in 0..4 {
                let want = x[first + source(kind, lane, k, w)];
                assert_eq!(got[t * 4 + kind], want, "thread {t}, shuffle {kind}, k {k}");
            }
        }
    }
    Ok(())
}

#[test]
fn shuffles_move_every_type_between_lanes() {
    for backend in backends() {
        World::threads(1)
            .backend(backend)
            .run(|iris| {
                let w = warp_size(iris)?;
                check_shuffles(iris, w, |i| i as u32 * 7 + 1)?;
                check_shuffles(iris, w, |i| i as f64 * -0.5)?;
                check_shuffles(iris, w, |i| bf16::from_f32(i as f32))?;
                check_shuffles(iris, w, |i| (i as i64 - 40) as i8)?;
                check_shuffles(iris, w, |i| u64::MAX - i as u64)?;

                let threads = w;
                let x: Vec<f32x4> = (0..threads)
                    .map(|i| f32x4::new([i as f32, -(i as f32), 0.5, i as f32 * 2.0]))
                    .collect();
                let dx = iris.from_slice(&x)?;
                let out: Buffer<f32x4> = iris.zeros(threads)?;
                let flags: Buffer<u32> = iris.zeros(threads)?;
                let addrs: Buffer<u64> = iris.zeros(threads)?;
                warps::shuffle_kinds::launch(iris, (1, threads as u32), &dx, &out, &flags, &addrs)?;
                let (v, f, a) = (out.to_vec()?, flags.to_vec()?, addrs.to_vec()?);
                let base = a[1]; // thread 1 read thread 0's address
                for t in 0..threads {
                    assert_eq!(v[t], x[t ^ 1], "vector of {t}");
                    assert_eq!(f[t], ((t ^ 1) % 2) as u32, "bool of {t}");
                    assert_eq!(a[t], base + ((t ^ 1) * 16) as u64, "pointer of {t}");
                }
                Ok(())
            })
            .unwrap_or_else(|e| panic!("{backend}: {e}"));
    }
}

#[test]
fn votes_and_reductions_cover_short_warps() {
    for backend in backends() {
        World::threads(1)
            .backend(backend)
            .run(|iris| {
                let w = warp_size(iris)?;
                // Two full warps and a short one of 5 lanes.
                let threads = 2 * w + 5;
                let preds: Vec<u32> = (0..threads)
                    .map(|t| u32::from(t < w || (t >= 2 * w && t % 2 == 0)))
                    .collect();
                let dp = iris.from_slice(&preds)?;
                let out: Buffer<u64> = iris.zeros(threads * 3)?;
                warps::votes::launch(iris, (1, threads as u32), &dp, &out)?;
                let got = out.to_vec()?;
                for t in 0..threads {
                    let (_, first, n) = warp_of(t, threads, w);
                    let bits = (0..n).fold(0u64, |b, l| b | (u64::from(preds[first + l]) << l));
                    assert_eq!(got[t * 3], bits, "ballot of {t}");
                    assert_eq!(got[t * 3 + 1], u64::from(bits != 0), "any of {t}");
                    let full = if n == 64 { u64::MAX } else { (1u64 << n) - 1 };
                    assert_eq!(got[t * 3 + 2], u64::from(bits == full), "all of {t}");
                }

                let ints: Vec<i32> = (0..threads).map(|t| (t as i32 * 37) % 101 - 50).collect();
                let di = iris.from_slice(&ints)?;
                let out: Buffer<i32> = iris.zeros(threads * 3)?;
                warps::reduces::launch(iris, (1, threads as u32), &di, &out)?;
                let got = out.to_vec()?;
                for t in 0..threads {
                    let (_, first, n) = warp_of(t, threads, w);
                    let lanes = &ints[first..first + n];
                    let want = [
                        lanes.iter().sum::<i32>(),
                        *lanes.iter().min().unwrap(),
                        *lanes.iter().max().unwrap(),
                    ];
                    assert_eq!(got[t * 3..t * 3 + 3], want, "reductions of thread {t}");
                }

                // Floats: small integers sum exactly in any order.
                let floats: Vec<f32> = (0..threads).map(|t| (t % 9) as f32 - 4.0).collect();
                let df = iris.from_slice(&floats)?;
                let out: Buffer<f32> = iris.zeros(threads * 3)?;
                warps::reduces::launch(iris, (1, threads as u32), &df, &out)?;
                let got = out.to_vec()?;
                let halves: Vec<f16> = floats.iter().map(|f| f16::from_f32(*f)).collect();
                let dh = iris.from_slice(&halves)?;
                let outh: Buffer<f16> = iris.zeros(threads * 3)?;
                warps::reduces::launch(iris, (1, threads as u32), &dh, &outh)?;
                let goth = outh.to_vec()?;
                let wides: Vec<u64> = (0..threads)
                    .map(|t| u64::MAX / 128 * (t as u64 % 3))
                    .collect();
                let dw = iris.from_slice(&wides)?;
                let outw: Buffer<u64> = iris.zeros(threads * 3)?;
                warps::reduces::launch(iris, (1, threads as u32), &dw, &outw)?;
                let gotw = outw.to_vec()?;
                for t in 0..threads {
                    let (_, first, n) = warp_of(t, threads, w);
                    let lanes = &floats[first..first + n];
                    let sum: f32 = lanes.iter().sum();
                    let lo = lanes.iter().cloned().fold(f32::INFINITY, f32::min);
                    let hi = lanes.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
                    assert_eq!(got[t * 3..t * 3 + 3], [sum, lo, hi], "f32 of {t}");
                    let goth3: Vec<f32> =
                        goth[t * 3..t * 3 + 3].iter().map(|h| h.to_f32()).collect();
                    assert_eq!(goth3, [sum, lo, hi], "f16 of {t}");
                    let wl = &wides[first..first + n];
                    let ws = wl.iter().fold(0u64, |a, b| a.wrapping_add(*b));
                    let want = [ws, *wl.iter().min().unwrap(), *wl.iter().max().unwrap()];
                    assert_eq!(gotw[t * 3..t * 3 + 3], want, "u64 of {t}");
                }
                Ok(())
            })
            .unwrap_or_else(|e| panic!("{backend}: {e}"));
    }
}

/// Lanes that a device function sends different ways: the compile-time check takes a
/// device function's parameters as agreed across the warp, so this compiles.
#[iris::kernels]
mod split_at_run_time {
    use iris::prelude::*;

    /// `warp_sync` for the lanes whose `x` is below 16.
    fn sync_if_low(x: u32) {
        if x < 16 {
            warp_sync();
        }
    }

    /// Half of each warp waits in `warp_sync`, the other half at `sync_threads`.
    #[kernel]
    pub fn half_warp_sync(out: *mut u32) {
        sync_if_low(lane_id());
        sync_threads();
        unsafe { *out.add(thread_idx_x() as usize) = 1 };
    }
}

/// A block whose threads would wait for each other forever is an error naming where they
/// wait, not a hang (the CPU backend; on a GPU such a kernel is undefined and not run).
#[test]
fn a_block_split_between_a_warp_operation_and_a_barrier_is_an_error_not_a_hang() {
    for backend in backends() {
        if backend != iris::BackendKind::Cpu {
            eprintln!("{backend}: skipped: a split warp is undefined on GPUs (it may hang); the CPU backend checks it");
            continue;
        }
        let start = std::time::Instant::now();
        let err = World::threads(1)
            .backend(backend)
            .run(|iris| {
                let out: Buffer<u32> = iris.zeros(64)?;
                split_at_run_time::half_warp_sync::launch(iris, (1, 64), &out)?;
                iris.synchronize()
            })
            .expect_err("a split warp must be an error");
        let text = err.to_string();
        assert!(
            text.contains("wait for each other forever")
                && text.contains("threads 0..=15, 32..=47 at a warp operation"),
            "{text}"
        );
        eprintln!("{backend}: reported in {:.1?}: {text}", start.elapsed());
    }
}
