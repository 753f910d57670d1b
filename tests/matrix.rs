//! Matrix units from the kernel language: a tiled GEMM with `mma` (a warp per 16 x 16 tile
//! of C) for bf16 and f16, and GEMM + all-scatter (each rank computes its row block and
//! stores every tile into every rank's C with `mma_store_peer`). Small-integer data keeps
//! every product and sum exact in f32, so results are compared exactly with the host. Run
//! on the CPU backend and any GPU present.

mod common;
// The guide's matrix example, shared with benches/cpu_blocks.rs.
#[path = "../examples/common/readme_gemm.rs"]
mod readme_gemm;

use common::backends;
use iris::prelude::*;
use iris::{Buffer, World};

#[iris::kernels]
mod gemm {
    use iris::prelude::*;

    /// Tile `(tm, tn)` of `A[.. x k] * B[k x n]` (row-major), 16 columns of A at a time: a
    /// device function with matrix operations (the kernels calling it inherit its need for
    /// the warp's lanes to run together).
    fn tile_product<T: MmaElement>(
        a: *const T,
        b: *const T,
        tm: u32,
        tn: u32,
        n: u32,
        k: u32,
    ) -> MmaAcc {
        let mut acc = mma_zero();
        let mut k0 = 0u32;
        while k0 < k {
            let fa = mma_load_a(unsafe { a.add((tm * 16 * k + k0) as usize) }, k);
            let fb = mma_load_b(unsafe { b.add((k0 * n + tn * 16) as usize) }, n);
            acc = mma(fa, fb, acc);
            k0 += 16;
        }
        acc
    }

    /// `C[m x n] = A[m x k] * B[k x n]`, row-major; warp `w` of the grid computes tile
    /// `(w / (n / 16), w % (n / 16))` of C (warps past the last tile do nothing).
    #[kernel(instances(T = [bf16, f16]))]
    pub fn tiles<T: MmaElement>(a: *const T, b: *const T, c: *mut f32, m: u32, n: u32, k: u32) {
        let warp = (block_idx_x() * block_dim_x() + thread_idx_x()) / warp_size();
        let tiles_n = n / 16;
        if warp < (m / 16) * tiles_n {
            let (tm, tn) = (warp / tiles_n, warp % tiles_n);
            let acc = tile_product(a, b, tm, tn, n, k);
            mma_store(unsafe { c.add((tm * 16 * n + tn * 16) as usize) }, n, acc);
        }
    }

    /// `A[16 x 16] * B[16 x 16]` stored at element `at` of `c`, rows `ld` apart: pairs of
    /// adjacent elements in one 8-byte store where that is aligned, else one by one.
    #[kernel(instances(T = [bf16]))]
    pub fn tile_at<T: MmaElement>(a: *const T, b: *const T, c: *mut f32, at: u32, ld: u32) {
        let acc = tile_product(a, b, 0, 0, 16, 16);
        mma_store(unsafe { c.add(at as usize) }, ld, acc);
    }

    /// GEMM + all-scatter: this rank's `A` is rows `me * m ..` of the whole A; each tile
    /// of its row block of C goes straight into every rank's C.
    #[kernel(instances(T = [bf16]))]
    pub fn all_scatter<T: MmaElement>(
        a: *const T,
        b: *const T,
        c: Symmetric<f32>,
        m: u32,
        n: u32,
        k: u32,
        me: u32,
        world: u32,
    ) {
        let warp = (block_idx_x() * block_dim_x() + thread_idx_x()) / warp_size();
        let tiles_n = n / 16;
        if warp < (m / 16) * tiles_n {
            let (tm, tn) = (warp / tiles_n, warp % tiles_n);
            let acc = tile_product(a, b, tm, tn, n, k);
            let tile = c.add(((me * m + tm * 16) * n + tn * 16) as usize);
            for p in 0..world {
                mma_store_peer(tile, n, acc, (me + p) % world);
            }
        }
    }

    /// A block's 32 x 32 tile of C through shared memory, two buffers deep: the next
    /// 32 x 32 slices of A and B copied in with `copy_async` while the current ones feed
    /// `mma`. Four warps, one 16 x 16 tile each; the first 128 threads copy.
    #[kernel(instances(T = [bf16, f16]))]
    pub fn pipelined<T: MmaElement>(a: *const T, b: *const T, c: *mut f32, n: u32, k: u32) {
        let sa = shared_array::<T, 2560>(); // 2 buffers x 32 rows x 40
        let sb = shared_array::<T, 2560>(); // 2 buffers x 32 rows x 40
        let (bm, bn) = (
            (block_idx_x() / (n / 32)) * 32,
            (block_idx_x() % (n / 32)) * 32,
        );
        let t = thread_idx_x();
        let (r, c8) = (t / 4, (t % 4) * 8);
        let a0 = unsafe { a.add(((bm + r) * k + c8) as usize) };
        let b0 = unsafe { b.add((r * n + bn + c8) as usize) };
        let copies = t < 128;
        if copies {
            copy_async(
                unsafe { sa.add((r * 40 + c8) as usize) } as *mut [T; 8],
                a0 as *const [T; 8],
            );
            copy_async(
                unsafe { sb.add((r * 40 + c8) as usize) } as *mut [T; 8],
                b0 as *const [T; 8],
            );
        }
        copy_async_commit();
        let sub = t / warp_size();
        let (wr, wc) = ((sub / 2) * 16, (sub % 2) * 16);
        let mut acc = mma_zero();
        let mut k0 = 0u32;
        while k0 < k {
            let cur = (k0 / 32) % 2;
            if k0 + 32 < k {
                if copies {
                    let next = (1 - cur) * 1280 + r * 40 + c8;
                    let an = unsafe { a.add(((bm + r) * k + k0 + 32 + c8) as usize) };
                    let bn_ = unsafe { b.add(((k0 + 32 + r) * n + bn + c8) as usize) };
                    copy_async(
                        unsafe { sa.add(next as usize) } as *mut [T; 8],
                        an as *const [T; 8],
                    );
                    copy_async(
                        unsafe { sb.add(next as usize) } as *mut [T; 8],
                        bn_ as *const [T; 8],
                    );
                }
                copy_async_commit();
                copy_async_wait(1);
            } else {
                copy_async_wait(0);
            }
            sync_threads();
            let base = cur * 1280;
            for kk in 0..2 {
                let kk = kk as u32;
                let fa = mma_load_a(unsafe { sa.add((base + wr * 40 + 16 * kk) as usize) }, 40);
                let fb = mma_load_b(unsafe { sb.add((base + 16 * kk * 40 + wc) as usize) }, 40);
                acc = mma(fa, fb, acc);
            }
            sync_threads();
            k0 += 32;
        }
        mma_store(unsafe { c.add(((bm + wr) * n + bn + wc) as usize) }, n, acc);
    }

    /// GEMM + reduce-scatter: this rank holds columns `me * k ..` of A (`a`, m x k) and
    /// rows `me * k ..` of B (`b`, k x n), so its product is a partial C; each tile of it
    /// is added into the owner's block of C (rank `o` owns rows `o * m / world ..`) with
    /// `mma_add_peer`. `c` (`m / world` x n on every rank) starts at zero.
    #[kernel(instances(T = [bf16]))]
    pub fn reduce_scatter<T: MmaElement>(
        a: *const T,
        b: *const T,
        c: Symmetric<f32>,
        m: u32,
        n: u32,
        k: u32,
        world: u32,
    ) {
        let warp = (block_idx_x() * block_dim_x() + thread_idx_x()) / warp_size();
        let tiles_n = n / 16;
        if warp < (m / 16) * tiles_n {
            let (tm, tn) = (warp / tiles_n, warp % tiles_n);
            let acc = tile_product(a, b, tm, tn, n, k);
            let rows = m / world;
            let owner = tm * 16 / rows;
            let tile = c.add((((tm * 16) % rows) * n + tn * 16) as usize);
            mma_add_peer(tile, n, acc, owner);
        }
    }

    /// All-gather + GEMM: rank `me` holds rows `me * m / world ..` of A (`shard`); `a`
    /// (m x k) fills with every rank's rows as the tiles need them, and `c = a * b`. The
    /// first warp to need a 16-row band of A claims it (`flags[band]`: 0 missing, 1 being
    /// copied, 2 present), copies it from its owner and marks it present; a warp that
    /// finds it claimed waits for the mark, at most `limit_ns` (then `status[0]` gets 1
    /// and the tile is not computed).
    #[kernel(instances(T = [bf16]))]
    pub fn all_gather<T: MmaElement>(
        shard: Symmetric<T>,
        a: Symmetric<T>,
        b: *const T,
        c: *mut f32,
        flags: Symmetric<u32>,
        status: *mut u32,
        m: u32,
        n: u32,
        k: u32,
        me: u32,
        world: u32,
        limit_ns: u64,
    ) {
        let warp = (block_idx_x() * block_dim_x() + thread_idx_x()) / warp_size();
        let tiles_n = n / 16;
        if warp < (m / 16) * tiles_n {
            let (tm, tn) = (warp / tiles_n, warp % tiles_n);
            let flag = flags.add(tm as usize);
            let mut claim = 1u32;
            if lane_id() == 0 {
                claim = atomic_cas(flag, 0, 1, me, Ordering::Acquire, Scope::Device);
            }
            claim = shfl(claim, 0);
            let mut present = true;
            if claim == 0 {
                let rows = m / world;
                let src = shard.add((((tm * 16) % rows) * k) as usize);
                let dst = a.add((tm * 16 * k) as usize);
                let owner = tm * 16 / rows;
                let mut i = lane_id();
                while i < 16 * k {
                    store(dst.add(i as usize), load(src.add(i as usize), owner), me);
                    i += warp_size();
                }
                // Every lane's copies are visible device-wide before lane 0's mark.
                fence(Ordering::Release, Scope::Device);
                warp_sync();
                if lane_id() == 0 {
                    atomic_store(flag, 2, me, Ordering::Release, Scope::Device);
                }
                // The lanes together again before the matrix operations (which need the
                // whole warp converged).
                warp_sync();
            } else {
                let mut waited = 0u32;
                if lane_id() == 0 {
                    let start = global_timer_ns();
                    while atomic_load(flag, me, Ordering::Acquire, Scope::Device) != 2 {
                        if global_timer_ns() - start > limit_ns {
                            unsafe { *status = 1 };
                            waited = 1;
                            break;
                        }
                        nanosleep(100);
                    }
                }
                present = shfl(waited, 0) == 0;
                warp_sync();
                // Every lane reads the band after lane 0 saw the mark.
                fence(Ordering::Acquire, Scope::Device);
            }
            if present {
                let acc = tile_product(a.local() as *const T, b, tm, tn, n, k);
                mma_store(unsafe { c.add((tm * 16 * n + tn * 16) as usize) }, n, acc);
            }
        }
    }
}

/// Integers in -4..=4: exact in bf16, f16 and every f32 sum here.
fn small(i: usize, seed: usize) -> f32 {
    ((i * 7 + seed * 13 + i / 5) % 9) as f32 - 4.0
}

fn host_gemm(a: &[f32], b: &[f32], m: usize, n: usize, k: usize) -> Vec<f32> {
    let mut c = vec![0.0f32; m * n];
    for r in 0..m {
        for j in 0..n {
            c[r * n + j] = (0..k).map(|x| a[r * k + x] * b[x * n + j]).sum();
        }
    }
    c
}

/// Threads per block: a multiple of every target's warp (32 and 64).
const BLOCK: u32 = 64;

#[test]
fn tiled_gemm_with_mma_matches_the_host_exactly() {
    let (m, n, k) = (64usize, 48usize, 80usize);
    let a: Vec<f32> = (0..m * k).map(|i| small(i, 1)).collect();
    let b: Vec<f32> = (0..k * n).map(|i| small(i, 2)).collect();
    let want = host_gemm(&a, &b, m, n, k);
    let tiles = (m / 16 * (n / 16)) as u32;
    for backend in backends() {
        World::threads(1)
            .backend(backend)
            .run(|iris| {
                let da = iris.from_slice(&as_bf16(&a))?;
                let db = iris.from_slice(&as_bf16(&b))?;
                let c: Buffer<f32> = iris.full(m * n, f32::NAN)?;
                gemm::tiles::launch(
                    iris,
                    (tiles, BLOCK),
                    &da,
                    &db,
                    &c,
                    m as u32,
                    n as u32,
                    k as u32,
                )?;
                assert_eq!(c.to_vec()?, want, "bf16");
                let da = iris.from_slice(&as_f16(&a))?;
                let db = iris.from_slice(&as_f16(&b))?;
                let c: Buffer<f32> = iris.full(m * n, f32::NAN)?;
                gemm::tiles::launch::<f16>(
                    iris,
                    (tiles, BLOCK),
                    &da,
                    &db,
                    &c,
                    m as u32,
                    n as u32,
                    k as u32,
                )?;
                assert_eq!(c.to_vec()?, want, "f16");
                // The guide's kernel, 32 x 32 per warp: C's first 32 columns (n = 48).
                let c: Buffer<f32> = iris.full(m * n, f32::NAN)?;
                let blocks = (m / 32) as u32;
                readme_gemm::readme::readme_gemm::launch::<f16>(
                    iris,
                    (blocks, BLOCK),
                    &da,
                    &db,
                    &c,
                    m as u32,
                    n as u32,
                    k as u32,
                )?;
                let got = c.to_vec()?;
                for r in 0..m {
                    for j in 0..32 {
                        assert_eq!(
                            got[r * n + j],
                            want[r * n + j],
                            "the guide's kernel at ({r}, {j})"
                        );
                    }
                }
                Ok(())
            })
            .unwrap_or_else(|e| panic!("{backend}: {e}"));
    }
}

#[test]
fn gemm_all_scatter_fills_every_rank_s_c() {
    let (m, n, k) = (32usize, 32usize, 48usize);
    for backend in backends() {
        for world in [1usize, 2, 4] {
            let a: Vec<f32> = (0..world * m * k).map(|i| small(i, 3)).collect();
            let b: Vec<f32> = (0..k * n).map(|i| small(i, 4)).collect();
            let want = host_gemm(&a, &b, world * m, n, k);
            let got = World::threads(world)
                .backend(backend)
                .heap_bytes(1 << 20)
                .run(|iris| {
                    let me = iris.rank();
                    let da = iris.from_slice(&as_bf16(&a[me * m * k..(me + 1) * m * k]))?;
                    let db = iris.from_slice(&as_bf16(&b))?;
                    let c = iris.symmetric_full::<f32>(world * m * n, f32::NAN)?;
                    let tiles = (m / 16 * (n / 16)) as u32;
                    gemm::all_scatter::launch(
                        iris,
                        (tiles, BLOCK),
                        &da,
                        &db,
                        &c,
                        m as u32,
                        n as u32,
                        k as u32,
                        me as u32,
                        world as u32,
                    )?;
                    iris.synchronize()?;
                    iris.host_barrier()?;
                    c.to_vec()
                })
                .unwrap_or_else(|e| panic!("{backend} at {world} ranks: {e}"));
            for (rank, c) in got.iter().enumerate() {
                assert_eq!(c, &want, "{backend} at {world} ranks: rank {rank}'s C");
            }
        }
    }
}

/// `x` rounded to bf16 (exactly, for the small integers of these tests).
fn as_bf16(x: &[f32]) -> Vec<bf16> {
    x.iter().map(|&v| bf16::from_f32(v)).collect()
}

/// `x` rounded to f16 (exactly, for the small integers of these tests).
fn as_f16(x: &[f32]) -> Vec<f16> {
    x.iter().map(|&v| f16::from_f32(v)).collect()
}

/// `world * rows` x `cols` of small integers, as bf16, and the same values as f32.
fn small_bf16(len: usize, seed: usize) -> (Vec<f32>, Vec<bf16>) {
    let f: Vec<f32> = (0..len).map(|i| small(i, seed)).collect();
    let h = as_bf16(&f);
    (f, h)
}

/// Columns `cols` of a row-major `rows` x `width` matrix.
fn columns(x: &[f32], width: usize, cols: std::ops::Range<usize>) -> Vec<f32> {
    x.chunks(width)
        .flat_map(|row| row[cols.clone()].iter().copied())
        .collect()
}

#[test]
fn gemm_reduce_scatter_matches_gemm_then_ccl_reduce_scatter() {
    use iris::ccl::{self, Ccl, ReduceOp};
    // C = A (m x world*k) * B (world*k x n); rank r holds A's columns and B's rows r*k..
    let (m, n, k) = (64usize, 32usize, 32usize);
    for backend in backends() {
        for world in [1usize, 2, 4] {
            let (a, _) = small_bf16(m * world * k, 5);
            let (b, _) = small_bf16(world * k * n, 6);
            let want = host_gemm(&a, &b, m, n, world * k);
            let rows = m / world;
            let got = World::threads(world)
                .backend(backend)
                .heap_bytes(1 << 20)
                .run(|iris| {
                    let me = iris.rank();
                    let to_bf16 =
                        |x: Vec<f32>| x.iter().map(|&v| bf16::from_f32(v)).collect::<Vec<_>>();
                    let da =
                        iris.from_slice(&to_bf16(columns(&a, world * k, me * k..(me + 1) * k)))?;
                    let db = iris.from_slice(&to_bf16(b[me * k * n..(me + 1) * k * n].to_vec()))?;
                    let tiles = (m / 16 * (n / 16)) as u32;
                    // Fused: every tile added into its owner's block.
                    let fused = iris.symmetric_zeros::<f32>(rows * n)?;
                    iris.host_barrier()?;
                    gemm::reduce_scatter::launch(
                        iris,
                        (tiles, BLOCK),
                        &da,
                        &db,
                        &fused,
                        m as u32,
                        n as u32,
                        k as u32,
                        world as u32,
                    )?;
                    iris.synchronize()?;
                    iris.host_barrier()?;
                    // Unfused: the partial product, then ccl::reduce_scatter.
                    let partial = iris.symmetric_full::<f32>(m * n, f32::NAN)?;
                    let out = iris.symmetric_full::<f32>(rows * n, f32::NAN)?;
                    gemm::tiles::launch(
                        iris,
                        (tiles, BLOCK),
                        &da,
                        &db,
                        &partial.local_ptr(),
                        m as u32,
                        n as u32,
                        k as u32,
                    )?;
                    iris.synchronize()?;
                    let ccl = Ccl::new(iris)?;
                    ccl::reduce_scatter(&ccl, &partial, &out, ReduceOp::Sum)?;
                    ccl.synchronize()?;
                    Ok((fused.to_vec()?, out.to_vec()?))
                })
                .unwrap_or_else(|e| panic!("{backend} at {world} ranks: {e}"));
            for (rank, (fused, unfused)) in got.iter().enumerate() {
                let mine = &want[rank * rows * n..(rank + 1) * rows * n];
                assert_eq!(
                    unfused, mine,
                    "{backend} at {world} ranks: rank {rank}, unfused"
                );
                assert_eq!(
                    fused, unfused,
                    "{backend} at {world} ranks: rank {rank}, fused"
                );
            }
        }
    }
}

#[test]
fn all_gather_gemm_matches_ccl_all_gather_then_gemm() {
    use iris::ccl::{self, AllGatherAlgo, Ccl};
    // C_r = A (m x k) * B_r (k x n); rank r holds rows r*m/world.. of A.
    let (m, n, k) = (64usize, 32usize, 48usize);
    for backend in backends() {
        for world in [1usize, 2, 4] {
            let (a, a16) = small_bf16(m * k, 7);
            let rows = m / world;
            let got = World::threads(world)
                .backend(backend)
                .heap_bytes(1 << 20)
                .run(|iris| {
                    let me = iris.rank();
                    let (b, b16) = small_bf16(k * n, 8 + me);
                    let want = host_gemm(&a, &b, m, n, k);
                    let shard = iris.symmetric::<bf16>(rows * k)?;
                    shard.copy_from_slice(&a16[me * rows * k..(me + 1) * rows * k])?;
                    let db = iris.from_slice(&b16)?;
                    let tiles = (m / 16 * (n / 16)) as u32;
                    // Fused: the bands of A copied in as the tiles need them.
                    let gathered = iris.symmetric_zeros::<bf16>(m * k)?;
                    let flags = iris.symmetric_zeros::<u32>(m / 16)?;
                    let status = iris.zeros::<u32>(1)?;
                    let fused = iris.full::<f32>(m * n, f32::NAN)?;
                    iris.host_barrier()?;
                    gemm::all_gather::launch(
                        iris,
                        (tiles, BLOCK),
                        &shard,
                        &gathered,
                        &db,
                        &fused,
                        &flags,
                        &status,
                        m as u32,
                        n as u32,
                        k as u32,
                        me as u32,
                        world as u32,
                        10_000_000_000u64,
                    )?;
                    iris.synchronize()?;
                    assert_eq!(
                        status.to_vec()?,
                        [0],
                        "a band of A was never marked present"
                    );
                    // Unfused: ccl::all_gather, then the GEMM.
                    let full = iris.symmetric_full::<bf16>(m * k, bf16::from_f32(f32::NAN))?;
                    let ccl = Ccl::new(iris)?;
                    ccl::all_gather(&ccl, &shard, &full, AllGatherAlgo::Push)?;
                    ccl.synchronize()?;
                    let unfused = iris.full::<f32>(m * n, f32::NAN)?;
                    gemm::tiles::launch(
                        iris,
                        (tiles, BLOCK),
                        &full.local_ptr(),
                        &db,
                        &unfused,
                        m as u32,
                        n as u32,
                        k as u32,
                    )?;
                    iris.synchronize()?;
                    iris.host_barrier()?;
                    Ok((want, fused.to_vec()?, unfused.to_vec()?))
                })
                .unwrap_or_else(|e| panic!("{backend} at {world} ranks: {e}"));
            for (rank, (want, fused, unfused)) in got.iter().enumerate() {
                assert_eq!(
                    unfused, want,
                    "{backend} at {world} ranks: rank {rank}, unfused"
                );
                assert_eq!(
                    fused, unfused,
                    "{backend} at {world} ranks: rank {rank}, fused"
                );
            }
        }
    }
}

#[test]
fn pipelined_gemm_with_async_copies_matches_the_host_exactly() {
    let (m, n, k) = (64usize, 64usize, 96usize);
    let a: Vec<f32> = (0..m * k).map(|i| small(i, 9)).collect();
    let b: Vec<f32> = (0..k * n).map(|i| small(i, 10)).collect();
    let want = host_gemm(&a, &b, m, n, k);
    let blocks = (m / 32 * (n / 32)) as u32;
    for backend in backends() {
        // Four warps: 64 lanes each on AMD, 32 elsewhere.
        let threads = if backend == iris::BackendKind::Hip {
            256
        } else {
            128
        };
        World::threads(1)
            .backend(backend)
            .run(|iris| {
                let da = iris.from_slice(&as_bf16(&a))?;
                let db = iris.from_slice(&as_bf16(&b))?;
                let c: Buffer<f32> = iris.full(m * n, f32::NAN)?;
                gemm::pipelined::launch(iris, (blocks, threads), &da, &db, &c, n as u32, k as u32)?;
                assert_eq!(c.to_vec()?, want, "bf16");
                let da = iris.from_slice(&as_f16(&a))?;
                let db = iris.from_slice(&as_f16(&b))?;
                let c: Buffer<f32> = iris.full(m * n, f32::NAN)?;
                gemm::pipelined::launch::<f16>(
                    iris,
                    (blocks, threads),
                    &da,
                    &db,
                    &c,
                    n as u32,
                    k as u32,
                )?;
                assert_eq!(c.to_vec()?, want, "f16");
                Ok(())
            })
            .unwrap_or_else(|e| panic!("{backend}: {e}"));
    }
}

/// Warpgroup matrix operations (`wg_mma`: `wgmma` on Hopper, computed elsewhere).
#[iris::kernels]
mod warpgroup {
    use iris::prelude::*;

    /// `C = A x B` for `A`: 128 x k and `B`: k x 128 (row-major), one block of two
    /// warpgroups, k in steps of 64 through one shared buffer in the swizzled warpgroup
    /// layout, written element by element (B transposed on the way). C's tile starts at
    /// element `at` of `c`, rows `ld` apart.
    #[kernel(instances(T = [bf16, f16]))]
    pub fn gemm_128<T: MmaElement>(
        a: *const T,
        b: *const T,
        c: *mut f32,
        k: u32,
        at: u32,
        ld: u32,
    ) {
        let sa = shared_array::<T, 8192>(); // 128 rows x 64 k
        let sb = shared_array::<T, 8192>(); // Bᵀ: 128 rows x 64 k
        let group = thread_idx_x() / 128;
        let mut acc = wg_zero();
        let mut k0 = 0u32;
        while k0 < k {
            let mut i = thread_idx_x();
            while i < 8192 {
                let (r, kk) = (i / 64, i % 64);
                let at = r * 64 + ((kk / 8) ^ (r % 8)) * 8 + kk % 8;
                unsafe { *sa.add(at as usize) = *a.add((r * k + k0 + kk) as usize) };
                unsafe { *sb.add(at as usize) = *b.add(((k0 + kk) * 128 + r) as usize) };
                i += block_dim_x();
            }
            sync_threads();
            let ta = unsafe { sa.add((group * 4096) as usize) } as *const T;
            for s in 0..4 {
                acc = wg_mma(ta, sb as *const T, s as u32, acc);
            }
            wg_commit();
            acc = wg_wait(acc, 0);
            sync_threads();
            k0 += 64;
        }
        wg_store(unsafe { c.add((at + group * 64 * ld) as usize) }, ld, acc);
    }
}

#[test]
fn mma_store_writes_aligned_and_unaligned_tiles() {
    let a: Vec<f32> = (0..256).map(|i| small(i, 15)).collect();
    let b: Vec<f32> = (0..256).map(|i| small(i, 16)).collect();
    let want = host_gemm(&a, &b, 16, 16, 16);
    for backend in backends() {
        World::threads(1)
            .backend(backend)
            .run(|iris| {
                let da = iris.from_slice(&as_bf16(&a))?;
                let db = iris.from_slice(&as_bf16(&b))?;
                // Paired stores (8-byte aligned, even ld), then single ones: an odd
                // element, an odd ld, both. A paired store there would fault on a GPU.
                for (at, ld) in [(0usize, 16usize), (2, 18), (1, 16), (2, 17), (3, 21)] {
                    let len = at + 16 * ld + 3;
                    let c: Buffer<f32> = iris.full(len, f32::NAN)?;
                    gemm::tile_at::launch(iris, (1, BLOCK), &da, &db, &c, at as u32, ld as u32)?;
                    let got = c.to_vec()?;
                    for (i, g) in got.iter().enumerate() {
                        let (r, col) = ((i.wrapping_sub(at)) / ld, (i.wrapping_sub(at)) % ld);
                        if i >= at && r < 16 && col < 16 {
                            assert_eq!(*g, want[r * 16 + col], "at {at}, ld {ld}: ({r}, {col})");
                        } else {
                            assert!(g.is_nan(), "at {at}, ld {ld}: element {i} written");
                        }
                    }
                }
                Ok(())
            })
            .unwrap_or_else(|e| panic!("{backend}: {e}"));
    }
}

/// Whether `launched` failed because the kernel asks for more shared memory per block
/// than the device gives (the module load says so, naming the kernel): then the test is
/// skipped on this backend, and says so.
fn refused_for_shared_memory(backend: iris::BackendKind, launched: &iris::Result<()>) -> bool {
    match launched {
        Err(err @ iris::Error::ModuleLoad { .. })
            if err.to_string().contains("more than the device allows") =>
        {
            eprintln!("{backend}: SKIPPED: {err}");
            true
        }
        _ => false,
    }
}

/// The example's 128 x 128 `mma` kernels (three stages, dynamic shared memory on GPUs):
/// `staged_128` with `copy_async`, `tiles_128` with the copy engine's `copy_tile` and
/// swizzled fragment loads.
/// The tile order of the example's shared-memory kernels (a device library).
#[path = "../examples/common/tile_order.rs"]
#[macro_use]
mod tile_order;
#[path = "../examples/common/staged_gemm.rs"]
mod staged_gemm;

#[test]
fn staged_gemms_with_three_stages_match_the_host_exactly() {
    // Four k steps of 64: the third buffer's refill wraps to the first (and, for
    // `tiles_128`, its barrier's second phase has parity 1).
    let (m, n, k) = (128usize, 128usize, 256usize);
    let a: Vec<f32> = (0..m * k).map(|i| small(i, 17)).collect();
    let b: Vec<f32> = (0..k * n).map(|i| small(i, 18)).collect();
    let want = host_gemm(&a, &b, m, n, k);
    for backend in backends() {
        let threads = if backend == iris::BackendKind::Hip {
            256
        } else {
            128
        };
        for kernel in ["staged_128", "tiles_128"] {
            World::threads(1)
                .backend(backend)
                .run(|iris| {
                    let da = iris.from_slice(&as_bf16(&a))?;
                    let db = iris.from_slice(&as_bf16(&b))?;
                    let c = iris.symmetric_zeros::<f32>(m * n)?;
                    c.copy_from_slice(&vec![f32::NAN; m * n])?;
                    let grid = ((m / 128 * (n / 128)) as u32, threads);
                    let (n32, k32) = (n as u32, k as u32);
                    let launched = if kernel == "staged_128" {
                        staged_gemm::staged_kernels::staged_128::launch(
                            iris, grid, &da, &db, &c, n32, k32, 0, 0, 1, 1,
                        )
                    } else {
                        let a_map = iris.tile_map(&da, m, k, 128)?;
                        let b_map = iris.tile_map(&db, k, n, 64)?;
                        staged_gemm::staged_kernels::tiles_128::launch(
                            iris, grid, &a_map, &b_map, &c, n32, k32, 0, 0, 1, 1,
                        )
                    };
                    // 96 or 105 KiB of shared memory: more than gfx90a, gfx942 and NVIDIA
                    // GPUs before Ampere give a block.
                    if refused_for_shared_memory(backend, &launched) {
                        return Ok(());
                    }
                    launched?;
                    assert_eq!(c.to_vec()?, want, "{kernel}");
                    Ok(())
                })
                .unwrap_or_else(|e| panic!("{backend}, {kernel}: {e}"));
        }
    }
}

/// The example's 128 x 256 kernel (four stages, dynamic shared memory on GPUs).
#[path = "../examples/common/warpgroup_gemm.rs"]
mod warpgroup_gemm;
use warpgroup_gemm::warpgroup_kernels as warpgroup_wide;

#[test]
fn warpgroup_gemm_matches_the_host_exactly() {
    let (m, n, k) = (128usize, 128usize, 192usize);
    let a: Vec<f32> = (0..m * k).map(|i| small(i, 11)).collect();
    let b: Vec<f32> = (0..k * n).map(|i| small(i, 12)).collect();
    let want = host_gemm(&a, &b, m, n, k);
    for backend in backends() {
        World::threads(1)
            .backend(backend)
            .run(|iris| {
                let da = iris.from_slice(&as_bf16(&a))?;
                let db = iris.from_slice(&as_bf16(&b))?;
                let c: Buffer<f32> = iris.full(m * n, f32::NAN)?;
                warpgroup::gemm_128::launch(iris, (1, 256), &da, &db, &c, k as u32, 0, 128)?;
                assert_eq!(c.to_vec()?, want, "bf16");
                let da = iris.from_slice(&as_f16(&a))?;
                let db = iris.from_slice(&as_f16(&b))?;
                let c: Buffer<f32> = iris.full(m * n, f32::NAN)?;
                warpgroup::gemm_128::launch::<f16>(iris, (1, 256), &da, &db, &c, k as u32, 0, 128)?;
                assert_eq!(c.to_vec()?, want, "f16");
                // A tile at an odd element, rows 129 apart: `wg_store` cannot pair its
                // stores (8-byte aligned ones) and writes them one by one; nothing else
                // changes.
                let (at, ld) = (1usize, 129usize);
                let c: Buffer<f32> = iris.full(at + m * ld, f32::NAN)?;
                let launched = warpgroup::gemm_128::launch::<f16>(
                    iris,
                    (1, 256),
                    &da,
                    &db,
                    &c,
                    k as u32,
                    at as u32,
                    ld as u32,
                );
                launched?;
                let got = c.to_vec()?;
                for (i, v) in got.iter().enumerate() {
                    let (r, j) = ((i.max(at) - at) / ld, (i.max(at) - at) % ld);
                    if i >= at && j < n {
                        assert_eq!(
                            v.to_bits(),
                            want[r * n + j].to_bits(),
                            "unpaired ({r}, {j})"
                        );
                    } else {
                        assert!(v.is_nan(), "element {i} outside the tile was written");
                    }
                }
                Ok(())
            })
            .unwrap_or_else(|e| panic!("{backend}: {e}"));
    }
}

#[test]
fn wide_warpgroup_gemm_with_dynamic_shared_memory_matches_the_host_exactly() {
    // Two block columns; and ten block rows, so the blocks' order crosses from a group of
    // eight block rows into a short one.
    for (m, n, k) in [(128usize, 512usize, 320usize), (1280, 256, 128)] {
        wide_warpgroup_gemm(m, n, k);
    }
}

fn wide_warpgroup_gemm(m: usize, n: usize, k: usize) {
    let a: Vec<f32> = (0..m * k).map(|i| small(i, 13)).collect();
    let b: Vec<f32> = (0..k * n).map(|i| small(i, 14)).collect();
    let want = host_gemm(&a, &b, m, n, k);
    for backend in backends() {
        if backend == iris::BackendKind::Hip {
            eprintln!(
                "hip: SKIPPED: the kernel takes 192 KiB of shared memory per block; AMD GPUs give a block at most 160 KiB"
            );
            continue;
        }
        World::threads(1)
            .backend(backend)
            .run(|iris| {
                let da = iris.from_slice(&as_bf16(&a))?;
                // The kernel takes Bᵀ (N x K).
                let bt: Vec<bf16> = (0..n * k)
                    .map(|i| bf16::from_f32(b[(i % k) * n + i / k]))
                    .collect();
                let db = iris.from_slice(&bt)?;
                let c = iris.symmetric_zeros::<f32>(m * n)?;
                c.copy_from_slice(&vec![f32::NAN; m * n])?;
                let blocks = (m / 128 * (n / 256)) as u32;
                let launched = warpgroup_wide::warpgroup_256::launch(
                    iris,
                    (blocks, 256),
                    &da,
                    &db,
                    &c,
                    n as u32,
                    k as u32,
                    0,
                    0,
                    1,
                    1,
                );
                // NVIDIA GPUs before Hopper give a block less than 192 KiB: the module
                // load says so, naming the kernel.
                if refused_for_shared_memory(backend, &launched) {
                    return Ok(());
                }
                launched?;
                assert_eq!(c.to_vec()?, want);
                // Built with `max_threads = 256`: larger blocks are refused.
                let err = warpgroup_wide::warpgroup_256::launch(
                    iris,
                    (blocks, 512),
                    &da,
                    &db,
                    &c,
                    n as u32,
                    k as u32,
                    0,
                    0,
                    1,
                    1,
                )
                .expect_err("512 threads per block launched");
                assert!(
                    matches!(err, iris::Error::InvalidLaunchConfig { .. })
                        && err.to_string().contains("built for at most 256"),
                    "{err}"
                );
                Ok(())
            })
            .unwrap_or_else(|e| panic!("{backend}: {e}"));
    }
}
