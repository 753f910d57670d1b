//! Bulk copies (`copy_bulk` counted on a shared barrier, `bulk_wait`): batches of rows
//! through three shared buffers, so each buffer's barrier goes through phases of both
//! parities, with the rows at 16-byte aligned places (the copy engine on Hopper) and one
//! element off (copied by the thread at once, and counted on the barrier by it). Run on
//! the CPU backend and any GPU present; every value is checked. And tile copies
//! (`copy_tile` through a host tile map): boxes of a matrix, inside it and across its
//! edges, land in shared memory in the 128-byte swizzle with zeros outside the matrix.

mod common;

use common::backends;
use iris::World;

#[iris::kernels]
mod bulk {
    use iris::prelude::*;

    /// `out[i] = sum over batches b of (b + 1) * src[shift + 256 b + i]` for the block's
    /// 256 values: batch `b` (32 rows of 8 `u32`) is copied into buffer `b % 3` two
    /// batches ahead, and read after its barrier's phase `b / 3` completes. Launch with one
    /// block of 64 threads or more (the first 64 sum four values each).
    #[kernel]
    pub fn weighted_sum(src: *const u32, out: *mut u32, batches: u32, shift: u32) {
        let rows = shared_array::<u32, 768>(); // 3 buffers x 32 rows x 8
        let bars = shared_array::<u64, 3>();
        let t = thread_idx_x();
        if t == 0 {
            for i in 0..3 {
                bulk_barrier_init(unsafe { bars.add(i) });
            }
        }
        sync_threads();
        for first in 0..2 {
            let first = first as u32;
            if first < batches {
                start_batch(src, rows, bars, first, shift);
            }
        }
        let mut sums = [0u32; 4];
        let mut b = 0u32;
        while b < batches {
            bulk_wait(unsafe { bars.add((b % 3) as usize) }, (b / 3) % 2);
            if t < 64 {
                for e in 0..4 {
                    let v = unsafe { *rows.add(((b % 3) * 256 + t * 4 + e as u32) as usize) };
                    sums[e] += (b + 1) * v;
                }
            }
            // Every thread is done reading batches up to b: batch b + 2 may refill batch
            // b - 1's buffer.
            sync_threads();
            if b + 2 < batches {
                start_batch(src, rows, bars, b + 2, shift);
            }
            b += 1;
        }
        if t < 64 {
            for e in 0..4 {
                unsafe { *out.add((t * 4 + e as u32) as usize) = sums[e] };
            }
        }
    }

    /// Copies the 16-row box of `map` at (`col`, `row`) into shared memory with one
    /// `copy_tile`, then writes the shared box (16 rows of 64 `u16`, as it lies) to `out`.
    /// Launch with one block of 32 threads.
    #[kernel]
    pub fn tile_box(map: *const u64, out: *mut u16, col: u32, row: u32) {
        let tile = shared_array::<u16, 1024>();
        let bar = shared_array::<u64, 1>();
        let t = thread_idx_x();
        if t == 0 {
            bulk_barrier_init(bar);
        }
        sync_threads();
        if t == 0 {
            bulk_expect(bar, 16 * 128);
            copy_tile(tile, map, col, row, bar);
        }
        bulk_wait(bar, 0);
        let mut i = t;
        while i < 1024 {
            unsafe { *out.add(i as usize) = *tile.add(i as usize) };
            i += 32;
        }
    }

    /// Starts copying batch `batch` into buffer `batch % 3`: 32 rows of 32 bytes, one per
    /// thread of the first 32, counted on the buffer's barrier.
    fn start_batch(src: *const u32, rows: *mut u32, bars: *mut u64, batch: u32, shift: u32) {
        let t = thread_idx_x();
        let bar = unsafe { bars.add((batch % 3) as usize) };
        if t == 0 {
            bulk_expect(bar, 32 * 32);
        }
        if t < 32 {
            copy_bulk(
                unsafe { rows.add(((batch % 3) * 256 + t * 8) as usize) } as *mut [u32; 8],
                unsafe { src.add((shift + batch * 256 + t * 8) as usize) } as *const [u32; 8],
                bar,
            );
        }
    }
}

fn expected(src: &[u32], batches: usize, shift: usize) -> Vec<u32> {
    (0..256)
        .map(|i| {
            (0..batches)
                .map(|b| (b as u32 + 1) * src[shift + 256 * b + i])
                .sum()
        })
        .collect()
}

#[test]
fn bulk_copies_fill_three_buffers_through_both_barrier_parities() {
    // Seven batches: buffers 0, 1, 2 hold three, two and two batches (phases 0, 1, 0).
    let batches = 7usize;
    let src: Vec<u32> = (0..256 * batches + 1)
        .map(|i| (i * 7 % 101) as u32)
        .collect();
    for backend in backends() {
        for shift in [0usize, 1] {
            World::threads(1)
                .backend(backend)
                .run(|iris| {
                    let d = iris.from_slice(&src)?;
                    let out = iris.zeros::<u32>(256)?;
                    bulk::weighted_sum::launch(
                        iris,
                        (1, 128),
                        &d,
                        &out,
                        batches as u32,
                        shift as u32,
                    )?;
                    assert_eq!(
                        out.to_vec()?,
                        expected(&src, batches, shift),
                        "{backend}, rows {shift} element(s) off"
                    );
                    Ok(())
                })
                .unwrap_or_else(|e| panic!("{backend}: {e}"));
        }
    }
}

/// Where the box at (`col`, `row`) of the `rows` x `cols` matrix lands in the swizzled
/// shared box: chunk `c` of box row `r` at chunk `c ^ (r % 8)`, zeros outside the matrix.
fn swizzled_box(m: &[u16], rows: usize, cols: usize, col: usize, row: usize) -> Vec<u16> {
    let mut out = vec![0u16; 1024];
    for r in 0..16 {
        for c in 0..8 {
            let (gr, gc) = (row + r, col + 8 * c);
            if gr < rows && gc + 8 <= cols {
                let at = 64 * r + 8 * (c ^ (r % 8));
                out[at..at + 8].copy_from_slice(&m[gr * cols + gc..gr * cols + gc + 8]);
            }
        }
    }
    out
}

#[test]
fn tile_copies_land_in_the_128_byte_swizzle() {
    let (rows, cols) = (40usize, 72usize);
    let m: Vec<u16> = (0..rows * cols)
        .map(|i| (i * 37 % 65521) as u16 + 1)
        .collect();
    for backend in backends() {
        World::threads(1)
            .backend(backend)
            .run(|iris| {
                let dm = iris.from_slice(&m)?;
                let map = iris.tile_map(&dm, rows, cols, 16)?;
                let out = iris.zeros::<u16>(1024)?;
                // Inside; touching the last row and column; across both edges.
                for (col, row) in [(0usize, 0usize), (8, 24), (16, 30)] {
                    out.copy_from_slice(&[0xdead; 1024])?;
                    bulk::tile_box::launch(iris, (1, 32), &map, &out, col as u32, row as u32)?;
                    assert_eq!(
                        out.to_vec()?,
                        swizzled_box(&m, rows, cols, col, row),
                        "{backend}: box at column {col}, row {row}"
                    );
                }
                Ok(())
            })
            .unwrap_or_else(|e| panic!("{backend}: {e}"));
    }
}

#[test]
fn tile_maps_refuse_shapes_the_copy_engine_cannot_read() {
    World::threads(1)
        .backend(iris::BackendKind::Cpu)
        .run(|iris| {
            let m = iris.zeros::<u16>(40 * 72)?;
            for (rows, cols, box_rows, want) in [
                (40, 73, 16, "in a buffer of 2880 elements"),
                (41, 72, 16, "in a buffer of 2880 elements"),
                (90, 32, 16, "fewer than a box row's 64"),
                (40, 72, 0, "boxes of 0 rows"),
                (40, 72, 257, "boxes of 257 rows"),
            ] {
                let err = iris
                    .tile_map(&m, rows, cols, box_rows)
                    .unwrap_err()
                    .to_string();
                assert!(err.contains(want), "{rows} x {cols}, {box_rows}: {err}");
            }
            let odd = iris.zeros::<u16>(65 * 4)?;
            let err = iris.tile_map(&odd, 4, 65, 4).unwrap_err().to_string();
            assert!(err.contains("16-byte multiples"), "{err}");
            Ok(())
        })
        .unwrap();
}
