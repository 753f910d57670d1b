//! Copies staged through shared memory, the way a kernel stages data it works on: a block
//! takes 8 KiB chunks of a buffer, grid-stride, moves each into shared memory two chunks
//! deep, and writes it back out from there. Filled by `copy_async` (16 bytes a thread, as
//! `cp.async`) or by `copy_bulk` (the whole chunk in one copy-engine request on Hopper),
//! against the runtime's device-to-device copy.

use iris::prelude::*;
use iris::World;

use crate::harness::*;
use crate::kernels::*;

/// Vectors (`f32x4`) per chunk: 8 KiB.
const CHUNK: u64 = 512;

#[iris::kernels]
pub mod staging {
    use iris::prelude::*;

    /// `dst = src` through shared memory, each thread copying its 16-byte pieces of a chunk
    /// with `copy_async`. `n` is a multiple of 512 vectors; blocks of 256 threads.
    #[kernel]
    pub fn staged_async(src: *const f32x4, dst: *mut f32x4, n: u64) {
        let buf = shared_array::<f32x4, 1024>(); // two chunks
        let t = thread_idx_x() as u64;
        let chunks = n / 512;
        let stride = grid_dim_x() as u64;
        let mut c = block_idx_x() as u64;
        let mut i = 0u64;
        if c < chunks {
            for j in 0..2 {
                let e = t + 256 * j as u64;
                copy_async(unsafe { buf.add(e as usize) }, unsafe {
                    src.add((c * 512 + e) as usize)
                });
            }
        }
        copy_async_commit();
        while c < chunks {
            let next = c + stride;
            let other = ((i + 1) % 2) * 512;
            if next < chunks {
                for j in 0..2 {
                    let e = t + 256 * j as u64;
                    copy_async(unsafe { buf.add((other + e) as usize) }, unsafe {
                        src.add((next * 512 + e) as usize)
                    });
                }
            }
            copy_async_commit();
            copy_async_wait(1);
            sync_threads();
            let mine = (i % 2) * 512;
            for j in 0..2 {
                let e = t + 256 * j as u64;
                unsafe { *dst.add((c * 512 + e) as usize) = *buf.add((mine + e) as usize) };
            }
            sync_threads();
            c = next;
            i += 1;
        }
    }

    /// `dst = src` through shared memory, each chunk one `copy_bulk` by the block's first
    /// thread, counted on the buffer's barrier. `n` is a multiple of 512 vectors; blocks of
    /// 256 threads.
    #[kernel]
    pub fn staged_bulk(src: *const f32x4, dst: *mut f32x4, n: u64) {
        let buf = shared_array::<f32x4, 1024>(); // two chunks
        let bars = shared_array::<u64, 2>();
        let t = thread_idx_x() as u64;
        let chunks = n / 512;
        let stride = grid_dim_x() as u64;
        let mut c = block_idx_x() as u64;
        let mut i = 0u64;
        if t == 0 {
            bulk_barrier_init(bars);
            bulk_barrier_init(unsafe { bars.add(1) });
            if c < chunks {
                bulk_expect(bars, 8192);
                copy_bulk(
                    buf as *mut [f32; 2048],
                    unsafe { src.add((c * 512) as usize) } as *const [f32; 2048],
                    bars,
                );
            }
        }
        sync_threads();
        while c < chunks {
            let next = c + stride;
            let other = (i + 1) % 2;
            if t == 0 && next < chunks {
                let bar = unsafe { bars.add(other as usize) };
                bulk_expect(bar, 8192);
                copy_bulk(
                    unsafe { buf.add((other * 512) as usize) } as *mut [f32; 2048],
                    unsafe { src.add((next * 512) as usize) } as *const [f32; 2048],
                    bar,
                );
            }
            // Chunk i is in buffer i % 2, the barrier's phase i / 2 there.
            bulk_wait(unsafe { bars.add((i % 2) as usize) }, ((i / 2) % 2) as u32);
            let mine = (i % 2) * 512;
            for j in 0..2 {
                let e = t + 256 * j as u64;
                unsafe { *dst.add((c * 512 + e) as usize) = *buf.add((mine + e) as usize) };
            }
            // Every thread is done with this buffer before the next iteration refills it.
            sync_threads();
            c = next;
            i += 1;
        }
    }
}

/// Both staged copies of the plan's buffer size, checked, against the runtime's copy.
pub(crate) fn shared_staging_case(plan: &Plan, memcpy_gbps: f64) -> iris::Result<Vec<Row>> {
    let bytes = plan.bw_bytes;
    let n = (bytes / 16) as u64;
    let n = n - n % CHUNK;
    let rows = World::threads(1).run(|iris| {
        let a = iris.zeros::<f32x4>(n as usize)?;
        let b = iris.zeros::<f32x4>(n as usize)?;
        let seed = random_seed();
        util::fill_hash::launch(iris, grid_for(iris, n), &a, n, seed)?;
        iris.synchronize()?;
        let (w, r) = (plan.warmup, plan.repeats);
        let grid = grid_for(iris, n / CHUNK * u64::from(BLOCK));
        let mut rows = Vec::new();
        for kernel in ["copy_async", "copy_bulk"] {
            poison(iris, &b.device_ptr(), n, seed)?;
            let ms = time_events(iris, w, r, 1, || {
                if kernel == "copy_async" {
                    staging::staged_async::launch(iris, grid, &a, &b, n)
                } else {
                    staging::staged_bulk::launch(iris, grid, &a, &b, n)
                }
            })?;
            rows.push(Row {
                case: "shared_staging".into(),
                kernel: format!("8 KiB via shared, {kernel}"),
                ranks: 1,
                size_bytes: (n * 16) as usize,
                bytes_moved: 2.0 * (n * 16) as f64,
                ms,
                ceiling: "memcpy_dtod".into(),
                ceiling_gbps: memcpy_gbps,
                launches: 1,
                correct: check(iris, b.device_ptr(), n, seed)?,
                ..Row::default()
            });
        }
        Ok(rows)
    })?;
    Ok(rows.into_iter().next().unwrap_or_default())
}
