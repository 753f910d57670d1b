//! The CPU backend on kernels whose blocks meet at barriers, exchange within warps or use
//! the matrix units, in one run, against the same arithmetic as plain Rust on one thread
//! (the floor). Run it with the CPU backend (`IRIS_BACKEND=cpu`, the default where no GPU
//! is present):
//!
//! ```text
//! cargo bench --bench cpu_blocks
//! ```
//!
//! - `block reduction`: 100,003 `f32` summed by 256-thread blocks in shared memory (a
//!   tree, 8 `sync_threads` a block) at 8 ranks (threads), every rank its own input;
//! - `8 barriers`: one 256-thread block meeting at 8 barriers, per launch;
//! - `warp sums`: the guide's warp example (docs/guide/02-kernel-language.md), `warp_reduce_add` over 1 Mi `f32`;
//! - `mma GEMM 256^3`: the guide's matrix example (docs/guide/06-matrix-units.md) at one rank, bf16 in, f32 out.

use std::time::{Duration, Instant};

use iris::{bf16, World};

// The guide's matrix example, shared with tests/matrix.rs.
#[path = "../examples/common/readme_gemm.rs"]
mod readme_gemm;

#[iris::kernels]
mod kernels {
    use iris::prelude::*;

    /// Each 256-thread block sums its 256 elements in shared memory (8 halving steps,
    /// a barrier each) and adds the block's sum into `out[0]`.
    #[kernel]
    pub fn block_sum(x: *const f32, n: u32, out: Symmetric<f32>, me: u32) {
        let s = shared_array::<f32, 256>();
        let t = thread_idx_x();
        let i = block_idx_x() * 256 + t;
        unsafe { *s.add(t as usize) = if i < n { *x.add(i as usize) } else { 0.0 } };
        let mut half = 128u32;
        while half > 0 {
            sync_threads();
            if t < half {
                unsafe { *s.add(t as usize) += *s.add((t + half) as usize) };
            }
            half /= 2;
        }
        sync_threads();
        if t == 0 {
            atomic_add(out, unsafe { *s }, me, Ordering::Relaxed, Scope::System);
        }
    }

    /// One block meets at 8 barriers, writing between them.
    #[kernel]
    pub fn eight_barriers(p: *mut u32) {
        let t = thread_idx_x() as usize;
        for k in 0..8u32 {
            unsafe { *p.add(t) = k };
            sync_threads();
        }
    }

    /// The guide's warp example: each warp's sum, written by its lane 0.
    #[kernel]
    pub fn warp_sums(x: *const f32, out: *mut f32) {
        let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as usize;
        let s = warp_reduce_add(unsafe { *x.add(i) });
        if lane_id() == 0 {
            unsafe { *out.add(i / warp_size() as usize) = s };
        }
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn time(reps: usize, mut f: impl FnMut() -> iris::Result<()>) -> iris::Result<Duration> {
    let mut samples = Vec::with_capacity(reps);
    for _ in 0..reps {
        let start = Instant::now();
        f()?;
        samples.push(start.elapsed());
    }
    Ok(median(samples))
}

fn floor(reps: usize, mut f: impl FnMut()) -> Duration {
    let mut samples = Vec::with_capacity(reps);
    for _ in 0..reps {
        let start = Instant::now();
        f();
        samples.push(start.elapsed());
    }
    median(samples)
}

fn row(name: &str, iris: Duration, floor: Duration, note: &str) {
    println!(
        "{name:<32} {:>12.3} ms {:>12.3} ms {:>8.1}x  {note}",
        iris.as_secs_f64() * 1e3,
        floor.as_secs_f64() * 1e3,
        iris.as_secs_f64() / floor.as_secs_f64().max(1e-9)
    );
}

fn main() -> iris::Result<()> {
    println!(
        "{:<32} {:>15} {:>15} {:>9}",
        "case", "iris cpu", "plain Rust", "ratio"
    );
    // Block reduction at 8 ranks.
    let n = 100_003usize;
    let x: Vec<f32> = (0..n).map(|i| (i % 7) as f32).collect();
    let blocks = n.div_ceil(256) as u32;
    let start = Instant::now();
    let sums = World::threads(8).heap_bytes(1 << 20).run(|iris| {
        let input = iris.from_slice(&x)?;
        let out = iris.symmetric_zeros::<f32>(1)?;
        iris.barrier()?;
        kernels::block_sum::launch(
            iris,
            (blocks, 256),
            &input,
            n as u32,
            &out,
            iris.rank() as u32,
        )?;
        iris.synchronize()?;
        Ok(out.to_vec()?[0])
    })?;
    let took = start.elapsed();
    let want: f32 = x.iter().sum();
    assert!(
        sums.iter().all(|&s| (s - want).abs() <= 1e-3 * want),
        "{sums:?} vs {want}"
    );
    let plain = floor(5, || {
        let s: f32 = std::hint::black_box(&x).iter().sum();
        std::hint::black_box(s);
    });
    row(
        "block reduction, 8 ranks",
        took,
        plain * 8,
        "whole world (start-up included); floor: 8 sums",
    );
    World::threads(1).heap_bytes(1 << 20).run(|iris| {
        // 8 barriers in one block.
        let p = iris.zeros::<u32>(256)?;
        let one = time(50, || {
            kernels::eight_barriers::launch(iris, (1, 256), &p)?;
            iris.synchronize()
        })?;
        row(
            "256-thread block, 8 barriers",
            one,
            Duration::from_nanos(1),
            "per launch and wait",
        );
        // Warp sums.
        let len = 1 << 20;
        let xs: Vec<f32> = (0..len).map(|i| (i % 5) as f32).collect();
        let input = iris.from_slice(&xs)?;
        let out = iris.zeros::<f32>(len / 32)?;
        let warp = time(3, || {
            kernels::warp_sums::launch(iris, ((len / 256) as u32, 256), &input, &out)?;
            iris.synchronize()
        })?;
        let got = out.to_vec()?;
        assert_eq!(got[1], xs[32..64].iter().sum::<f32>());
        let plain = floor(5, || {
            let s: Vec<f32> = xs.chunks(32).map(|c| c.iter().sum()).collect();
            std::hint::black_box(s);
        });
        row("warp sums, 1 Mi f32", warp, plain, "");
        // mma GEMM 256^3.
        let d = 256usize;
        let a: Vec<bf16> = (0..d * d)
            .map(|i| bf16::from_f32(((i % 13) as f32 - 6.0) / 8.0))
            .collect();
        let b: Vec<bf16> = (0..d * d)
            .map(|i| bf16::from_f32(((i % 11) as f32 - 5.0) / 8.0))
            .collect();
        let (ga, gb, gc) = (
            iris.from_slice(&a)?,
            iris.from_slice(&b)?,
            iris.zeros::<f32>(d * d)?,
        );
        let warps = (d / 32) * (d / 32);
        let gemm = time(3, || {
            readme_gemm::readme::readme_gemm::launch::<bf16>(
                iris,
                ((warps / 4) as u32, 128),
                &ga,
                &gb,
                &gc,
                d as u32,
                d as u32,
                d as u32,
            )?;
            iris.synchronize()
        })?;
        let (af, bf): (Vec<f32>, Vec<f32>) = (
            a.iter().map(|v| v.to_f32()).collect(),
            b.iter().map(|v| v.to_f32()).collect(),
        );
        let mut c = vec![0f32; d * d];
        let plain = floor(3, || {
            for i in 0..d {
                for p in 0..d {
                    let av = af[i * d + p];
                    for j in 0..d {
                        c[i * d + j] += av * bf[p * d + j];
                    }
                }
            }
            std::hint::black_box(&c);
        });
        let got = gc.to_vec()?;
        let want: f32 = (0..d).map(|p| af[p] * bf[p * d]).sum();
        assert!(
            (got[0] - want).abs() <= 1e-3 * want.abs().max(1.0),
            "{} vs {want}",
            got[0]
        );
        row("mma GEMM 256^3, 1 rank", gemm, plain, "");
        Ok(())
    })?;
    Ok(())
}
