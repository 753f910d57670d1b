//! A bf16 GEMM on the matrix units, written in the kernel language: `C = A x B` (row-major,
//! f32 accumulate, f32 out), each warp computing a 16 x 16 tile, a 32 x 32 block (four
//! accumulators) or a 64 x 64 block (a 4 x 4 array of accumulators) with `mma`; or, four
//! warps together, a 128 x 128 block staged through shared memory (`block_tile_128`), and
//! the same two buffers deep with asynchronous copies (`pipelined_128`), and three buffers
//! deep with k steps of 64, unrolled copies and fragments loaded a step ahead
//! (`staged_128`, 105 KiB of dynamic shared memory), and the same with its tiles brought
//! by the copy engine (`tiles_128`: `copy_tile`, swizzled fragment loads); or two
//! warpgroups, a 128 x 256 block with `wg_mma` (`wgmma` on Hopper) through four stages of
//! dynamic shared memory (`warpgroup_256`, which takes B transposed: the example passes
//! Bᵀ). Checked against an f64 host reference on sampled entries (relative to the sum of
//! |products|, the bound of f32 accumulation), timed with device events, and reported in
//! TFLOP/s, with the ceiling of `mma` on the device measured in the same run
//! (`mma_ceiling`: products of fragments held in registers, no memory traffic).
//!
//! ```text
//! cargo run --release --example gemm -- [--size 4096] [--iters 10] [--ranks R] [--kernel NAME]
//! ```
//! With `--ranks R` (ranks as threads), GEMM + all-scatter instead: each rank computes its
//! rows of C and `pipelined_128` (or `warpgroup_256` with `--kernel warpgroup_256`) stores
//! every finished tile into every rank's C, timed
//! against the unfused GEMM followed by `iris::ccl::all_gather`. `--size` is M = N = K, a
//! multiple of 128 (default 4096 on a GPU, 128 on the CPU, where the warp's matrix
//! product is emulated exactly lane by lane); other sizes are refused (the kernels have
//! no masked edges).

mod common;

use common::{median_ms, probe_backend};
use iris::prelude::*;
use iris::{BackendKind, Buffer, Iris, SymmetricBuffer, World};
use rand::{Rng, SeedableRng};
use std::process::ExitCode;

#[iris::kernels]
mod kernels {
    use iris::prelude::*;

    /// One 16 x 16 tile of C per warp: warp `w` computes tile `(w / (n / 16), w % (n / 16))`.
    #[kernel(instances(T = [bf16]))]
    pub fn warp_tile_16<T: MmaElement>(
        a: *const T,
        b: *const T,
        c: *mut f32,
        m: u32,
        n: u32,
        k: u32,
    ) {
        let warp = (block_idx_x() * block_dim_x() + thread_idx_x()) / warp_size();
        let tiles_n = n / 16;
        if warp < (m / 16) * tiles_n {
            let (tm, tn) = (warp / tiles_n, warp % tiles_n);
            let mut acc = mma_zero();
            let mut k0 = 0u32;
            while k0 < k {
                let fa = mma_load_a(unsafe { a.add((tm * 16 * k + k0) as usize) }, k);
                let fb = mma_load_b(unsafe { b.add((k0 * n + tn * 16) as usize) }, n);
                acc = mma(fa, fb, acc);
                k0 += 16;
            }
            mma_store(unsafe { c.add((tm * 16 * n + tn * 16) as usize) }, n, acc);
        }
    }

    /// One 32 x 32 block of C per warp, four accumulators: each A and B fragment loaded is
    /// used twice.
    #[kernel(instances(T = [bf16]))]
    pub fn warp_tile_32<T: MmaElement>(
        a: *const T,
        b: *const T,
        c: *mut f32,
        m: u32,
        n: u32,
        k: u32,
    ) {
        let warp = (block_idx_x() * block_dim_x() + thread_idx_x()) / warp_size();
        let blocks_n = n / 32;
        if warp < (m / 32) * blocks_n {
            let (r0, c0) = ((warp / blocks_n) * 32, (warp % blocks_n) * 32);
            let (mut c00, mut c01, mut c10, mut c11) =
                (mma_zero(), mma_zero(), mma_zero(), mma_zero());
            let mut k0 = 0u32;
            while k0 < k {
                let a0 = mma_load_a(unsafe { a.add((r0 * k + k0) as usize) }, k);
                let a1 = mma_load_a(unsafe { a.add(((r0 + 16) * k + k0) as usize) }, k);
                let b0 = mma_load_b(unsafe { b.add((k0 * n + c0) as usize) }, n);
                let b1 = mma_load_b(unsafe { b.add((k0 * n + c0 + 16) as usize) }, n);
                c00 = mma(a0, b0, c00);
                c01 = mma(a0, b1, c01);
                c10 = mma(a1, b0, c10);
                c11 = mma(a1, b1, c11);
                k0 += 16;
            }
            mma_store(unsafe { c.add((r0 * n + c0) as usize) }, n, c00);
            mma_store(unsafe { c.add((r0 * n + c0 + 16) as usize) }, n, c01);
            mma_store(unsafe { c.add(((r0 + 16) * n + c0) as usize) }, n, c10);
            mma_store(unsafe { c.add(((r0 + 16) * n + c0 + 16) as usize) }, n, c11);
        }
    }

    /// One 64 x 64 block of C per warp: 4 x 4 accumulators in a register array, each A
    /// and B fragment loaded used four times.
    #[kernel(instances(T = [bf16]))]
    pub fn warp_tile_64<T: MmaElement>(
        a: *const T,
        b: *const T,
        c: *mut f32,
        m: u32,
        n: u32,
        k: u32,
    ) {
        let warp = (block_idx_x() * block_dim_x() + thread_idx_x()) / warp_size();
        let blocks_n = n / 64;
        if warp < (m / 64) * blocks_n {
            let (r0, c0) = ((warp / blocks_n) * 64, (warp % blocks_n) * 64);
            let mut acc = [[mma_zero(); 4]; 4];
            let mut k0 = 0u32;
            while k0 < k {
                let mut fa = [mma_load_a(a, k); 4];
                let mut fb = [mma_load_b(b, n); 4];
                for i in 0..4 {
                    fa[i] = mma_load_a(
                        unsafe { a.add(((r0 + 16 * i as u32) * k + k0) as usize) },
                        k,
                    );
                    fb[i] = mma_load_b(unsafe { b.add((k0 * n + c0 + 16 * i as u32) as usize) }, n);
                }
                for i in 0..4 {
                    for j in 0..4 {
                        acc[i][j] = mma(fa[i], fb[j], acc[i][j]);
                    }
                }
                k0 += 16;
            }
            for i in 0..4 {
                for j in 0..4 {
                    let at = ((r0 + 16 * i as u32) * n + c0 + 16 * j as u32) as usize;
                    mma_store(unsafe { c.add(at) }, n, acc[i][j]);
                }
            }
        }
    }

    /// One 128 x 128 block of C per block of four warps, staged through shared memory:
    /// the block copies 32 columns of A and 32 rows of B at a time into shared memory
    /// (16 bytes per thread and copy), then each warp computes its 64 x 64 quarter from
    /// there with a 4 x 4 array of accumulators. Launch with 4 x warp-size threads.
    /// Rows `row0..` of C get the result, in the copies of `peers` ranks from `me` on: one
    /// rank's own C, or (GEMM + all-scatter) every rank's as each tile finishes.
    #[kernel(instances(T = [bf16]))]
    pub fn block_tile_128<T: MmaElement>(
        a: *const T,
        b: *const T,
        c: Symmetric<f32>,
        n: u32,
        k: u32,
        row0: u32,
        me: u32,
        peers: u32,
        world: u32,
    ) {
        let sa = shared_array::<T, 5120>(); // 128 rows x 40 (32 + 8 padding)
        let sb = shared_array::<T, 4352>(); // 32 rows x 136 (128 + 8 padding)
        let blocks_n = n / 128;
        let (br, bc) = (
            (block_idx_x() / blocks_n) * 128,
            (block_idx_x() % blocks_n) * 128,
        );
        let warp = thread_idx_x() / warp_size();
        let (wr, wc) = ((warp / 2) * 64, (warp % 2) * 64);
        let mut acc = [[mma_zero(); 4]; 4];
        let mut k0 = 0u32;
        while k0 < k {
            sync_threads();
            // 512 chunks of 8 elements in each tile.
            let mut chunk = thread_idx_x();
            while chunk < 512 {
                let (ra, ca) = (chunk / 4, (chunk % 4) * 8);
                let va = unsafe { *(a.add(((br + ra) * k + k0 + ca) as usize) as *const [T; 8]) };
                unsafe { *(sa.add((ra * 40 + ca) as usize) as *mut [T; 8]) = va };
                let (rb, cb) = (chunk / 16, (chunk % 16) * 8);
                let vb = unsafe { *(b.add(((k0 + rb) * n + bc + cb) as usize) as *const [T; 8]) };
                unsafe { *(sb.add((rb * 136 + cb) as usize) as *mut [T; 8]) = vb };
                chunk += block_dim_x();
            }
            sync_threads();
            for kk in 0..2 {
                let mut fa = [mma_load_a(sa, 40); 4];
                let mut fb = [mma_load_b(sb, 136); 4];
                for i in 0..4 {
                    fa[i] = mma_load_a(
                        unsafe { sa.add(((wr + 16 * i as u32) * 40 + 16 * kk as u32) as usize) },
                        40,
                    );
                    fb[i] = mma_load_b(
                        unsafe { sb.add((16 * kk as u32 * 136 + wc + 16 * i as u32) as usize) },
                        136,
                    );
                }
                for i in 0..4 {
                    for j in 0..4 {
                        acc[i][j] = mma(fa[i], fb[j], acc[i][j]);
                    }
                }
            }
            k0 += 32;
        }
        for i in 0..4 {
            for j in 0..4 {
                let at = ((row0 + br + wr + 16 * i as u32) * n + bc + wc + 16 * j as u32) as usize;
                for p in 0..peers {
                    mma_store_peer(c.add(at), n, acc[i][j], (me + p) % world);
                }
            }
        }
    }

    /// The ceiling of `mma` on this device: each warp multiplies the fragments it holds in
    /// registers into 16 independent accumulators, `reps` times over, with no memory
    /// traffic in the loop (the instruction's own rate, which no GEMM built on it can
    /// pass), then stores them (distinct tiles, so none is optimized away): warp `w`'s at
    /// `out + 4096 w`.
    #[kernel(instances(T = [bf16]))]
    pub fn mma_ceiling<T: MmaElement>(a: *const T, out: *mut f32, reps: u32) {
        let fa = mma_load_a(a, 16);
        let fb = mma_load_b(a, 16);
        let mut acc = [[mma_zero(); 4]; 4];
        let mut r = 0u32;
        while r < reps {
            for i in 0..4 {
                for j in 0..4 {
                    acc[i][j] = mma(fa, fb, acc[i][j]);
                }
            }
            r += 1;
        }
        let warp = (block_idx_x() * block_dim_x() + thread_idx_x()) / warp_size();
        for i in 0..4 {
            for j in 0..4 {
                let at = (warp * 4096 + (4 * i as u32 + j as u32) * 256) as usize;
                mma_store(unsafe { out.add(at) }, 16, acc[i][j]);
            }
        }
    }

    /// The 128 x 128 block tile of [`block_tile_128`], two shared buffers deep: while the
    /// warps multiply the slices of A and B in one buffer, `copy_async` fills the other
    /// with the next 32 columns of A and 32 rows of B (`cp.async` on NVIDIA), and the
    /// fragments come from shared memory with `ldmatrix`. Each warp keeps its four B
    /// fragments and loads A one fragment at a time. Same arguments as `block_tile_128`.
    #[kernel(instances(T = [bf16]))]
    pub fn pipelined_128<T: MmaElement>(
        a: *const T,
        b: *const T,
        c: Symmetric<f32>,
        n: u32,
        k: u32,
        row0: u32,
        me: u32,
        peers: u32,
        world: u32,
    ) {
        let sa = shared_array::<T, 10240>(); // 2 buffers x 128 rows x 40 (32 + 8 padding)
        let sb = shared_array::<T, 8704>(); // 2 buffers x 32 rows x 136 (128 + 8 padding)
        let blocks_n = n / 128;
        let (br, bc) = (
            (block_idx_x() / blocks_n) * 128,
            (block_idx_x() % blocks_n) * 128,
        );
        let warp = thread_idx_x() / warp_size();
        let (wr, wc) = ((warp / 2) * 64, (warp % 2) * 64);
        let mut acc = [[mma_zero(); 4]; 4];
        let steps = k / 32;
        stage_slices(a, b, sa, sb, 0, br, bc, n, k, 0);
        copy_async_commit();
        let mut s = 0u32;
        while s < steps {
            let cur = s % 2;
            if s + 1 < steps {
                stage_slices(a, b, sa, sb, 1 - cur, br, bc, n, k, (s + 1) * 32);
                copy_async_commit();
                copy_async_wait(1);
            } else {
                copy_async_wait(0);
            }
            sync_threads();
            let ta = unsafe { sa.add((cur * 5120 + wr * 40) as usize) };
            let tb = unsafe { sb.add((cur * 4352 + wc) as usize) };
            for kk in 0..2 {
                let kk = kk as u32;
                // B's four fragments at this k step: the first, then the other three.
                let row = unsafe { tb.add((16 * kk * 136) as usize) };
                let mut fb = [mma_load_b(row, 136); 4];
                for j in 1..4 {
                    fb[j] = mma_load_b(unsafe { row.add((16 * j) as usize) }, 136);
                }
                for i in 0..4 {
                    let fa = mma_load_a(
                        unsafe { ta.add((16 * i as u32 * 40 + 16 * kk) as usize) },
                        40,
                    );
                    for j in 0..4 {
                        acc[i][j] = mma(fa, fb[j], acc[i][j]);
                    }
                }
            }
            // Every warp is done with this buffer before the next step refills it.
            sync_threads();
            s += 1;
        }
        for i in 0..4 {
            for j in 0..4 {
                let at = ((row0 + br + wr + 16 * i as u32) * n + bc + wc + 16 * j as u32) as usize;
                for p in 0..peers {
                    mma_store_peer(c.add(at), n, acc[i][j], (me + p) % world);
                }
            }
        }
    }

    /// Starts copying (`copy_async`) the 128 x 32 slice of A at column `k0` of block row
    /// `br` and the 32 x 128 slice of B at row `k0` of block column `bc` into buffer `buf`
    /// of `sa` and `sb`: 16 bytes per copy, the block's threads taking turns.
    fn stage_slices<T: MmaElement>(
        a: *const T,
        b: *const T,
        sa: *mut T,
        sb: *mut T,
        buf: u32,
        br: u32,
        bc: u32,
        n: u32,
        k: u32,
        k0: u32,
    ) {
        let mut chunk = thread_idx_x();
        while chunk < 512 {
            let (ra, ca) = (chunk / 4, (chunk % 4) * 8);
            copy_async(
                unsafe { sa.add((buf * 5120 + ra * 40 + ca) as usize) } as *mut [T; 8],
                unsafe { a.add(((br + ra) * k + k0 + ca) as usize) } as *const [T; 8],
            );
            let (rb, cb) = (chunk / 16, (chunk % 16) * 8);
            copy_async(
                unsafe { sb.add((buf * 4352 + rb * 136 + cb) as usize) } as *mut [T; 8],
                unsafe { b.add(((k0 + rb) * n + bc + cb) as usize) } as *const [T; 8],
            );
            chunk += block_dim_x();
        }
    }
}

/// The Hopper kernel (`warpgroup_256`), shared with tests/matrix.rs.
/// The tile order the shared-memory kernels share (a device library).
#[path = "common/tile_order.rs"]
#[macro_use]
mod tile_order;
#[path = "common/warpgroup_gemm.rs"]
mod warpgroup_gemm;
use warpgroup_gemm::warpgroup_kernels;

/// The multistage `mma` kernel (`staged_128`), shared with tests/matrix.rs.
#[path = "common/staged_gemm.rs"]
mod staged_gemm;
use staged_gemm::staged_kernels;

/// Threads per block: a multiple of every target's warp (32 and 64).
const BLOCK: u32 = 256;

/// Lanes in a warp of the device: 64 on AMD (wave64), 32 on NVIDIA and the CPU backend.
fn warp_lanes(iris: &Iris) -> u32 {
    if iris.backend_kind() == BackendKind::Hip {
        64
    } else {
        32
    }
}

/// Blocks of [`BLOCK`] threads that give every `tile` x `tile` tile of C a warp (of 64
/// lanes, or two of 32).
fn warp_tile_blocks(m: usize, n: usize, tile: usize) -> u32 {
    ((m / tile * (n / tile)) as u32 * 64).div_ceil(BLOCK)
}

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => {
            eprintln!("gemm: a result is outside the f32-accumulation bound");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("gemm: {e}");
            ExitCode::FAILURE
        }
    }
}

fn arg(flag: &str) -> Result<Option<usize>, String> {
    let args: Vec<String> = std::env::args().collect();
    match args.iter().position(|a| a == flag) {
        None => Ok(None),
        Some(i) => args
            .get(i + 1)
            .and_then(|v| common::parse_count(v).ok())
            .map(Some)
            .ok_or_else(|| format!("{flag} needs a count")),
    }
}

/// `B` (K x N, row-major) transposed: Bᵀ, N x K row-major, as the warpgroup kernels take it.
fn transposed(b: &[bf16], k: usize, n: usize) -> Vec<bf16> {
    let mut t = vec![bf16::ZERO; n * k];
    for (r, row) in b.chunks(n).enumerate() {
        for (c, v) in row.iter().enumerate() {
            t[c * k + r] = *v;
        }
    }
    t
}

/// `--kernel NAME`: run that kernel only.
fn kernel_filter() -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    let i = args.iter().position(|a| a == "--kernel")?;
    args.get(i + 1).cloned()
}

fn run() -> Result<bool, String> {
    let backend = probe_backend().map_err(|e| e.to_string())?;
    let size = arg("--size")?.unwrap_or(if backend == BackendKind::Cpu {
        128
    } else {
        4096
    });
    let iters = arg("--iters")?.unwrap_or(if backend == BackendKind::Cpu { 1 } else { 10 });
    if size == 0 || size % 128 != 0 {
        return Err(format!("--size {size}: a positive multiple of 128"));
    }
    let ranks = arg("--ranks")?.unwrap_or(1);
    // C, and for the unfused path each rank's part of it, in every rank's heap.
    let heap = (2 * size * size * 4).next_multiple_of(1 << 20) + (16 << 20);
    let world = World::threads(ranks).backend(backend).heap_bytes(heap);
    if ranks > 1 {
        if size % (128 * ranks) != 0 {
            return Err(format!(
                "--size {size} --ranks {ranks}: each rank's rows must be a multiple of 128"
            ));
        }
        return world
            .run(|iris| gemm_all_scatter(iris, size, iters))
            .map(|ok| ok.iter().all(|&o| o))
            .map_err(|e| e.to_string());
    }
    world
        .run(|iris| gemm(iris, size, iters))
        .map(|mut ok| ok.remove(0))
        .map_err(|e| e.to_string())
}

/// GEMM + all-scatter over `world` ranks (threads on the devices present): rank `r` holds
/// rows `r * M / world ..` of A and computes those rows of C; fused, each finished tile
/// goes straight into every rank's C (`mma_store_peer`); unfused, into the rank's own part
/// first, then `iris::ccl::all_gather` moves the parts. Both must give every rank the same
/// C, checked against the host on sampled entries.
fn gemm_all_scatter(iris: &Iris, size: usize, iters: usize) -> iris::Result<bool> {
    let (world, me) = (iris.world_size(), iris.rank());
    let (m, n, k) = (size, size, size);
    let rows = m / world;
    // Every rank makes the same A and B (a fixed seed), so each can check any entry.
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let a: Vec<bf16> = (0..m * k)
        .map(|_| bf16::from_f32(rng.random_range(-1.0..1.0)))
        .collect();
    let b: Vec<bf16> = (0..k * n)
        .map(|_| bf16::from_f32(rng.random_range(-1.0..1.0)))
        .collect();
    let da = iris.from_slice(&a[me * rows * k..(me + 1) * rows * k])?;
    let db = iris.from_slice(&b)?;
    let dbt = iris.from_slice(&transposed(&b, k, n))?;
    let c = iris.symmetric_zeros::<f32>(m * n)?;
    let part = iris.symmetric_zeros::<f32>(rows * n)?;
    let ccl = iris::ccl::Ccl::new(iris)?;
    let warp = warp_lanes(iris);
    let (w, r) = (world as u32, me as u32);
    // `--kernel warpgroup_256` (wg_mma, N a multiple of 256), else pipelined_128.
    let wide = kernel_filter().as_deref() == Some("warpgroup_256");
    if me == 0 {
        let name = if wide {
            "warpgroup_256"
        } else {
            "pipelined_128"
        };
        println!("GEMM + all-scatter with {name}");
    }
    // Rows `row0..` of C into the copies of `peers` ranks from this one on.
    let launch = |c: &SymmetricBuffer<'_, f32>, row0: u32, peers: u32| {
        if wide {
            warpgroup_kernels::warpgroup_256::launch(
                iris,
                ((rows / 128 * (n / 256)) as u32, 256),
                &da,
                &dbt,
                c,
                n as u32,
                k as u32,
                row0,
                r,
                peers,
                w,
            )
        } else {
            kernels::pipelined_128::launch(
                iris,
                ((rows / 128 * (n / 128)) as u32, 4 * warp),
                &da,
                &db,
                c,
                n as u32,
                k as u32,
                row0,
                r,
                peers,
                w,
            )
        }
    };
    let fused = || launch(&c, r * rows as u32, w);
    let unfused = || {
        launch(&part, 0, 1)?;
        iris::ccl::all_gather(&ccl, &part, &c, iris::ccl::AllGatherAlgo::Push)
    };
    let mut ok = true;
    let mut results = Vec::new();
    for (name, run) in [
        ("fused", &fused as &dyn Fn() -> iris::Result<()>),
        ("unfused", &unfused),
    ] {
        c.copy_from_slice(&vec![f32::NAN; m * n])?;
        iris.barrier()?;
        run()?;
        ccl.synchronize()?;
        iris.barrier()?;
        results.push(c.to_vec()?);
        let ms = median_ms(iris, iters, run)?;
        ccl.check()?;
        let slowest = iris.all_gather(ms)?.into_iter().fold(0.0f32, f32::max);
        let (good, err) = check(&a, &b, &results[results.len() - 1], m, n, k, &mut rng);
        ok &= good;
        if me == 0 {
            println!(
                "{world} ranks, {m} x {n} x {k}: {name:<8} {slowest:>9.3} ms (slowest rank) {:>7.1} TFLOP/s  max err {err:.2e}  {}",
                2.0 * (m * n * k) as f64 / (slowest as f64 * 1e-3) / 1e12,
                if good { "ok" } else { "WRONG" }
            );
        }
    }
    let same = results[0]
        .iter()
        .zip(&results[1])
        .all(|(x, y)| x.to_bits() == y.to_bits());
    if !same {
        eprintln!("gemm: rank {me}: fused and unfused C differ");
    }
    Ok(ok && same)
}

fn gemm(iris: &Iris, size: usize, iters: usize) -> iris::Result<bool> {
    let (m, n, k) = (size, size, size);
    let mut rng = rand::rng();
    let a: Vec<bf16> = (0..m * k)
        .map(|_| bf16::from_f32(rng.random_range(-1.0..1.0)))
        .collect();
    let b: Vec<bf16> = (0..k * n)
        .map(|_| bf16::from_f32(rng.random_range(-1.0..1.0)))
        .collect();
    let (da, db) = (iris.from_slice(&a)?, iris.from_slice(&b)?);
    let dbt = iris.from_slice(&transposed(&b, k, n))?;
    // What `tiles_128` copies from: A in boxes of 128 rows, B in boxes of 64.
    let a_map = iris.tile_map(&da, m, k, 128)?;
    let b_map = iris.tile_map(&db, k, n, 64)?;
    let c: Buffer<f32> = iris.zeros(m * n)?;
    let cs = iris.symmetric_zeros::<f32>(m * n)?;
    let flops = 2.0 * (m * n * k) as f64;
    println!(
        "bf16 GEMM {m} x {n} x {k} on {} ({}), f32 accumulate; {iters} timed runs, median",
        iris.backend_kind(),
        iris.device_info().name
    );
    println!(
        "{:<14} {:>10} {:>9} {:>9}  ok",
        "kernel", "ms", "TFLOP/s", "max err"
    );
    let mut all_ok = true;
    // Four warps per block for the shared-memory kernel.
    let warp = warp_lanes(iris);
    // The CPU emulates a warp's matrix product lane by lane (a warp exchange per element):
    // it runs the shared-memory kernel only.
    let variants: &[&str] = if iris.backend_kind() == BackendKind::Cpu {
        &[
            "block_tile_128",
            "pipelined_128",
            "staged_128",
            "tiles_128",
            "warpgroup_256",
        ]
    } else {
        &[
            "warp_tile_16",
            "warp_tile_32",
            "warp_tile_64",
            "block_tile_128",
            "pipelined_128",
            "staged_128",
            "tiles_128",
            "warpgroup_256",
        ]
    };
    let only = kernel_filter();
    for &variant in variants {
        if only.as_deref().is_some_and(|o| o != variant) {
            continue;
        }
        if variant == "warpgroup_256" && iris.backend_kind() == BackendKind::Hip {
            println!(
                "{variant:<14} skipped: it takes 192 KiB of shared memory per block; AMD GPUs give a block at most 160 KiB"
            );
            continue;
        }
        if variant == "warpgroup_256" && n % 256 != 0 {
            println!("{variant:<14} skipped: N = {n} is not a multiple of 256");
            continue;
        }
        let run: &dyn Fn() -> iris::Result<()> = match variant {
            "warp_tile_16" => &|| {
                let blocks = warp_tile_blocks(m, n, 16);
                kernels::warp_tile_16::launch(
                    iris,
                    (blocks, BLOCK),
                    &da,
                    &db,
                    &c,
                    m as u32,
                    n as u32,
                    k as u32,
                )
            },
            "block_tile_128" => &|| {
                let blocks = (m / 128 * (n / 128)) as u32;
                kernels::block_tile_128::launch(
                    iris,
                    (blocks, 4 * warp),
                    &da,
                    &db,
                    &cs,
                    n as u32,
                    k as u32,
                    0,
                    0,
                    1,
                    1,
                )
            },
            "pipelined_128" => &|| {
                let blocks = (m / 128 * (n / 128)) as u32;
                kernels::pipelined_128::launch(
                    iris,
                    (blocks, 4 * warp),
                    &da,
                    &db,
                    &cs,
                    n as u32,
                    k as u32,
                    0,
                    0,
                    1,
                    1,
                )
            },
            "staged_128" => &|| {
                let blocks = (m / 128 * (n / 128)) as u32;
                staged_kernels::staged_128::launch(
                    iris,
                    (blocks, 4 * warp),
                    &da,
                    &db,
                    &cs,
                    n as u32,
                    k as u32,
                    0,
                    0,
                    1,
                    1,
                )
            },
            "tiles_128" => &|| {
                let blocks = (m / 128 * (n / 128)) as u32;
                staged_kernels::tiles_128::launch(
                    iris,
                    (blocks, 4 * warp),
                    &a_map,
                    &b_map,
                    &cs,
                    n as u32,
                    k as u32,
                    0,
                    0,
                    1,
                    1,
                )
            },
            "warpgroup_256" => &|| {
                let blocks = (m / 128 * (n / 256)) as u32;
                warpgroup_kernels::warpgroup_256::launch(
                    iris,
                    (blocks, 256),
                    &da,
                    &dbt,
                    &cs,
                    n as u32,
                    k as u32,
                    0,
                    0,
                    1,
                    1,
                )
            },
            "warp_tile_64" => &|| {
                let blocks = warp_tile_blocks(m, n, 64);
                kernels::warp_tile_64::launch(
                    iris,
                    (blocks, BLOCK),
                    &da,
                    &db,
                    &c,
                    m as u32,
                    n as u32,
                    k as u32,
                )
            },
            _ => &|| {
                let blocks = warp_tile_blocks(m, n, 32);
                kernels::warp_tile_32::launch(
                    iris,
                    (blocks, BLOCK),
                    &da,
                    &db,
                    &c,
                    m as u32,
                    n as u32,
                    k as u32,
                )
            },
        };
        c.copy_from_slice(&vec![f32::NAN; m * n])?;
        cs.copy_from_slice(&vec![f32::NAN; m * n])?;
        match run() {
            // More shared memory per block than the device gives (`staged_128`'s 105 KiB
            // on gfx90a and gfx942, `warpgroup_256`'s 192 KiB before Hopper), which the
            // runtime refuses when it loads the kernel.
            Err(err @ iris::Error::ModuleLoad { .. })
                if err.to_string().contains("more than the device allows") =>
            {
                println!("{variant:<14} skipped: {err}");
                continue;
            }
            other => other?,
        }
        // The block kernels write the symmetric C, the warp kernels the plain one.
        let got = if variant.ends_with("_128") || variant.starts_with("warpgroup") {
            cs.to_vec()?
        } else {
            c.to_vec()?
        };
        let (ok, err) = check(&a, &b, &got, m, n, k, &mut rng);
        all_ok &= ok;
        let ms = median_ms(iris, iters, run)?;
        println!(
            "{variant:<14} {ms:>10.3} {:>9.1} {err:>9.2e}  {}",
            flops / (ms as f64 * 1e-3) / 1e12,
            if ok { "yes" } else { "NO" }
        );
    }
    if only.is_none() || only.as_deref() == Some("mma_ceiling") {
        mma_ceiling(iris, &da, iters)?;
    }
    Ok(all_ok)
}

/// Times `mma_ceiling` (eight warps per block, eight blocks per multiprocessor) and prints
/// its rate: the most the `mma` kernels above could reach on this device. Skipped on the
/// CPU, whose `mma` is emulated lane by lane.
fn mma_ceiling(iris: &Iris, a: &Buffer<bf16>, iters: usize) -> iris::Result<()> {
    if iris.backend_kind() == BackendKind::Cpu {
        println!(
            "{:<14} skipped: the CPU emulates mma lane by lane",
            "mma_ceiling"
        );
        return Ok(());
    }
    let warp = warp_lanes(iris);
    // Eight blocks of eight warps per multiprocessor (as many warps as it holds), and one
    // (eight warps: the occupancy of the shared-memory kernels, whose accumulators take
    // most of the registers).
    for per_sm in [8, 1] {
        let blocks = per_sm * iris.device_info().multiprocessors.max(1);
        let warps = (blocks * 8) as usize;
        let out: Buffer<f32> = iris.zeros(warps * 4096)?;
        let reps = 4096u32;
        let run = || kernels::mma_ceiling::launch(iris, (blocks, 8 * warp), a, &out, reps);
        run()?;
        let ms = median_ms(iris, iters, run)?;
        // 16 products of 16 x 16 x 16 per warp and repetition.
        let flops = warps as f64 * f64::from(reps) * 16.0 * 2.0 * 4096.0;
        println!(
            "{:<14} {ms:>10.3} {:>9.1}         -  (ceiling: mma from registers, no memory; {} warps per multiprocessor)",
            "mma_ceiling",
            flops / (ms as f64 * 1e-3) / 1e12,
            8 * per_sm
        );
    }
    Ok(())
}

/// 256 sampled entries (and the four corners) against an f64 reference: the error must
/// stay within 2^-16 of the sum of |products| (f32 accumulation over k terms).
fn check(
    a: &[bf16],
    b: &[bf16],
    c: &[f32],
    m: usize,
    n: usize,
    k: usize,
    rng: &mut impl Rng,
) -> (bool, f64) {
    let mut points: Vec<(usize, usize)> = vec![(0, 0), (0, n - 1), (m - 1, 0), (m - 1, n - 1)];
    points.extend((0..256).map(|_| (rng.random_range(0..m), rng.random_range(0..n))));
    let mut worst = 0.0f64;
    let mut ok = true;
    for (r, j) in points {
        let (mut want, mut scale) = (0.0f64, 0.0f64);
        for x in 0..k {
            let p = a[r * k + x].to_f64() * b[x * n + j].to_f64();
            want += p;
            scale += p.abs();
        }
        let err = (c[r * n + j] as f64 - want).abs() / scale.max(1e-30);
        worst = worst.max(err);
        ok &= err <= 1.0 / 65536.0;
    }
    (ok, worst)
}
