//! The kernel language computes what Rust computes: the same functions run as device code
//! (on the CPU backend and any GPU present) and as host Rust, over random inputs.

mod common;

use common::{backends, random_u32};
use iris::{BackendKind, Iris, World};

/// `run` on one rank of every backend, with each backend's answer.
fn on_every_backend<R: Send>(
    run: impl Fn(&Iris) -> iris::Result<R> + Sync,
) -> Vec<(BackendKind, R)> {
    backends()
        .into_iter()
        .map(|backend| {
            let mut got = World::threads(1)
                .backend(backend)
                .heap_bytes(1 << 20)
                .run(&run)
                .unwrap_or_else(|e| panic!("{backend}: {e}"));
            (backend, got.remove(0))
        })
        .collect()
}

#[iris::kernels]
mod lang {
    use iris::prelude::*;

    /// Integer mix: wrapping arithmetic, shifts, division, bit operations, comparisons.
    pub fn mix(a: u32, b: u32) -> u32 {
        let s = a.wrapping_add(b.wrapping_mul(2654435761));
        let d = if b == 0 { 0 } else { a / b + a % b };
        let signed = (a as i32) >> 3; // arithmetic shift
        let t = s ^ (d << 5) ^ (signed as u32) ^ (a >> (b & 31));
        if t > a {
            t.wrapping_sub(a)
        } else {
            t | 1
        }
    }

    /// Float to integer casts saturate; integer to float rounds; f16/bf16 round-trip.
    pub fn casts(a: u32, b: u32) -> u32 {
        let f = (a as i32) as f32 * 1.0e3 / ((b % 1000) as f32 + 0.5);
        let sat = (f as u8 as u32).wrapping_add((f as i16) as u32);
        let h = f16::from_f32((b % 4096) as f32).to_f32() as u32;
        let g = bf16::from_f32((a % 256) as f32).to_f32() as u32;
        sat.wrapping_add(h * 3).wrapping_add(g * 7)
    }

    /// Loops: inclusive ranges, while with break and continue, early return.
    pub fn loops(a: u32, b: u32) -> u32 {
        let mut acc = 0u32;
        for i in 0..=(a % 17) {
            acc = acc.wrapping_add(i * i);
        }
        let mut j = 0u32;
        while j < 100 {
            j += 1;
            if j % 3 == 0 {
                continue;
            }
            if j > b % 50 {
                break;
            }
            acc ^= j;
        }
        if acc == 7 {
            return 7;
        }
        let mut k = 0u32;
        loop {
            k += 1;
            if k >= a % 5 {
                break;
            }
        }
        acc.wrapping_add(k)
    }

    /// Floats: sqrt, abs, min, max, constants, f64.
    pub fn floats(a: u32, b: u32) -> u32 {
        let x = (a % 10000) as f64 / 7.0 - 700.0;
        let y = (b % 10000) as f32 / 3.0;
        let r = x.abs().sqrt() + (y.min(100.0) as f64) - (y.max(2000.0) as f64);
        let big = if r > f64::MAX { 1.0 } else { r };
        (big * 1000.0) as i64 as u32 ^ u32::MAX
    }

    /// Lanes of a 16-byte vector: arithmetic and `get`.
    pub fn lanes(a: u32, b: u32) -> u32 {
        let v = u32x4::new([a, b, a ^ b, 7]);
        let w = v + u32x4::splat(3);
        let p = w * v;
        p.get(0) ^ p.get(1) ^ p.get(2) ^ p.get(3)
    }

    #[kernel]
    pub fn apply(which: u32, a: *const u32, b: *const u32, out: *mut u32, n: u64) {
        let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as u64;
        if i >= n {
            return;
        }
        let x = unsafe { *a.add(i as usize) };
        let y = unsafe { *b.add(i as usize) };
        let r = if which == 0 {
            mix(x, y)
        } else if which == 1 {
            casts(x, y)
        } else if which == 2 {
            loops(x, y)
        } else if which == 3 {
            floats(x, y)
        } else {
            lanes(x, y)
        };
        unsafe { *out.add(i as usize) = r };
    }
}

#[test]
fn device_code_computes_what_host_rust_computes() {
    let n = 4099usize;
    let names = ["mix", "casts", "loops", "floats", "lanes"];
    let host: [fn(u32, u32) -> u32; 5] = [
        lang::mix,
        lang::casts,
        lang::loops,
        lang::floats,
        lang::lanes,
    ];
    for backend in backends() {
        let mismatches = World::threads(1)
            .backend(backend)
            .heap_bytes(1 << 20)
            .run(|iris| {
                let mut report = Vec::new();
                for (which, name) in names.iter().enumerate() {
                    let a = random_u32(n);
                    let b = random_u32(n);
                    let (da, db) = (iris.from_slice(&a)?, iris.from_slice(&b)?);
                    let out = iris.full::<u32>(n, 0xDEAD_BEEF)?;
                    lang::apply::launch(
                        iris,
                        ((n as u32).div_ceil(128), 128),
                        which as u32,
                        &da,
                        &db,
                        &out,
                        n as u64,
                    )?;
                    let got = out.to_vec()?;
                    let bad = (0..n)
                        .filter(|&i| got[i] != host[which](a[i], b[i]))
                        .count();
                    if bad > 0 {
                        let i = (0..n)
                            .find(|&i| got[i] != host[which](a[i], b[i]))
                            .unwrap_or(0);
                        report.push(format!(
                            "{name}: {bad} of {n} differ, e.g. ({}, {}) -> device {} host {}",
                            a[i],
                            b[i],
                            got[i],
                            host[which](a[i], b[i])
                        ));
                    }
                }
                Ok(report)
            })
            .unwrap_or_else(|e| panic!("{backend}: {e}"));
        assert!(mismatches[0].is_empty(), "{backend}: {:#?}", mismatches[0]);
    }
}

/// `const` items of the module: named in expressions (at their declared type, one naming
/// another) and as a shared array's length.
#[iris::kernels]
mod constants {
    use iris::prelude::*;

    const BLOCK: usize = 64;
    const SCALE: u32 = 3;
    const OFFSET: u32 = SCALE * 100 + 7;

    /// Each block reverses its 64 elements through shared memory, times `SCALE`, plus
    /// `OFFSET`.
    #[kernel]
    pub fn reverse_scaled(x: *const u32, out: *mut u32) {
        let s = shared_array::<u32, BLOCK>();
        let t = thread_idx_x() as usize;
        let base = block_idx_x() as usize * BLOCK;
        unsafe { *s.add(t) = *x.add(base + t) };
        sync_threads();
        unsafe { *out.add(base + t) = *s.add(BLOCK - 1 - t) * SCALE + OFFSET };
    }
}

#[test]
fn module_constants_name_values_and_shared_array_lengths() {
    let x: Vec<u32> = (0..256).collect();
    let want: Vec<u32> = (0..256)
        .map(|i| (i / 64 * 64 + 63 - i % 64) * 3 + 307)
        .collect();
    for (backend, got) in on_every_backend(|iris| {
        let input = iris.from_slice(&x)?;
        let out = iris.zeros::<u32>(256)?;
        constants::reverse_scaled::launch(iris, (4, 64), &input, &out)?;
        out.to_vec()
    }) {
        assert_eq!(got, want, "{backend}");
    }
}

/// Tuples and structs: a device function returning a tuple, taken apart by `let`; structs of
/// the module built, passed, returned, read (nested too) and assigned field by field; and
/// `match` on numbers and `bool`.
#[iris::kernels]
mod aggregates {
    use iris::prelude::*;

    /// The smallest, largest and sum of the values folded in.
    #[derive(Clone, Copy)]
    pub struct Stats {
        pub lo: u32,
        pub hi: u32,
        pub sum: u64,
    }

    /// Stats and a scale.
    #[derive(Clone, Copy)]
    pub struct Scaled {
        pub stats: Stats,
        pub scale: f32,
    }

    /// `(min, max)`.
    pub fn min_max(a: u32, b: u32) -> (u32, u32) {
        if a < b {
            (a, b)
        } else {
            (b, a)
        }
    }

    /// `s` with `v` folded in.
    pub fn fold(mut s: Stats, v: u32) -> Stats {
        let (lo, _) = min_max(s.lo, v);
        s.lo = lo;
        s.hi = min_max(s.hi, v).1;
        s.sum += u64::from(v);
        s
    }

    /// A `match` on a number and on a `bool`.
    pub fn classify(a: u32, odd: bool) -> u32 {
        let class = match a % 11 {
            0 => 7,
            1 | 2 => 70,
            3..=5 => 700,
            n if n > 8 => n * 3,
            _ => 1,
        };
        match odd {
            true => class + 1,
            false => class,
        }
    }

    /// A number from the stats of `a`, `b` and `a ^ b`.
    pub fn summary(a: u32, b: u32) -> u32 {
        let mut st = Stats {
            hi: 0,
            lo: u32::MAX,
            sum: 0,
        };
        st = fold(st, a);
        st = fold(st, b);
        st = fold(st, a ^ b);
        let p = Scaled {
            stats: st,
            scale: 0.5,
        };
        let t = (p.stats.lo, p.stats.hi, p.stats.sum);
        (t.0 ^ t.1.wrapping_mul(3))
            ^ (t.2 as u32)
            ^ ((p.scale * 8.0) as u32)
            ^ classify(a, b % 2 == 1)
    }

    #[kernel]
    pub fn apply(a: *const u32, b: *const u32, out: *mut u32, n: u64) {
        let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as u64;
        if i < n {
            let (x, y) = unsafe { (*a.add(i as usize), *b.add(i as usize)) };
            unsafe { *out.add(i as usize) = summary(x, y) };
        }
    }
}

#[test]
fn tuples_and_structs_compute_what_host_rust_computes() {
    let n = 1000usize;
    let (a, b) = (random_u32(n), random_u32(n));
    let want: Vec<u32> = (0..n).map(|i| aggregates::summary(a[i], b[i])).collect();
    for (backend, got) in on_every_backend(|iris| {
        let (da, db) = (iris.from_slice(&a)?, iris.from_slice(&b)?);
        let out = iris.zeros::<u32>(n)?;
        let blocks = (n as u32).div_ceil(64);
        aggregates::apply::launch(iris, (blocks, 64), &da, &db, &out, n as u64)?;
        out.to_vec()
    }) {
        assert_eq!(got, want, "{backend}");
    }
}

/// Structs taken by kernels by value: numbers and vectors, one nested in another, and a
/// struct of bytes between other parameters; the launcher passes them as the host lays them
/// out.
#[iris::kernels]
mod by_value {
    use iris::prelude::*;

    /// `x[i * stride] * scale + shift` for `i < n`.
    #[derive(Clone, Copy)]
    pub struct Affine {
        pub scale: f32,
        pub shift: f32,
        pub n: u32,
        pub stride: u32,
    }

    /// An affine map and a vector whose lane 1 is added.
    #[derive(Clone, Copy)]
    pub struct Wide {
        pub extra: f32x4,
        pub map: Affine,
    }

    /// Three small numbers.
    #[derive(Clone, Copy)]
    pub struct Bytes {
        pub a: u8,
        pub b: u8,
        pub c: u16,
    }

    #[kernel]
    pub fn affine(w: Wide, x: *const f32, small: Bytes, out: *mut f32) {
        let i = block_idx_x() * block_dim_x() + thread_idx_x();
        let m = w.map;
        if i < m.n {
            let bytes = (small.a as u32 + small.b as u32 * 2 + small.c as u32 * 3) as f32;
            let v = unsafe { *x.add((i * m.stride) as usize) };
            unsafe { *out.add(i as usize) = v * m.scale + m.shift + w.extra.get(1) + bytes };
        }
    }
}

#[test]
fn kernels_take_structs_by_value() {
    use by_value::{Affine, Bytes, Wide};
    let n = 300u32;
    let x: Vec<f32> = (0..2 * n).map(|i| i as f32 * 0.25).collect();
    let w = Wide {
        extra: iris::prelude::f32x4::new([1.0, 2.0, 3.0, 4.0]),
        map: Affine {
            scale: 3.0,
            shift: -1.5,
            n,
            stride: 2,
        },
    };
    let small = Bytes {
        a: 7,
        b: 200,
        c: 1000,
    };
    let bytes = (7 + 400 + 3000) as f32;
    let want: Vec<f32> = (0..n)
        .map(|i| x[(i * 2) as usize] * 3.0 - 1.5 + 2.0 + bytes)
        .collect();
    for (backend, got) in on_every_backend(|iris| {
        let dx = iris.from_slice(&x)?;
        let out = iris.zeros::<f32>(n as usize)?;
        by_value::affine::launch(iris, (n.div_ceil(64), 64), w, &dx, small, &out)?;
        out.to_vec()
    }) {
        assert_eq!(got, want, "{backend}");
    }
}
