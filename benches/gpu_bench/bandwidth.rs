//! The ceilings (the runtime's memset and copy, on plain and symmetric memory, and as
//! trivial kernels) and the two-rank store, load and copy against them.

use iris::prelude::*;
use iris::{DevicePtr, World};

use crate::harness::*;
use crate::kernels::*;

/// Memset and device-to-device copy through the runtime (the backend's own entry points,
/// and `Buffer::copy_from_buffer`), and the same two as iris kernels.
pub(crate) fn ceilings(plan: &Plan) -> iris::Result<Vec<Row>> {
    let bytes = plan.bw_bytes;
    let n = (bytes / 16) as u64;
    let heap = bytes + 16 * MIB;
    let rows = World::threads(1).heap_bytes(heap).run(|iris| {
        let rt = Runtime::new(iris, bytes)?;
        // SAFETY: the runtime's allocations outlive every launch below (synchronized).
        let (ra, rb) = unsafe {
            (
                DevicePtr::<f32x4>::from_raw(rt.a),
                DevicePtr::<f32x4>::from_raw(rt.b),
            )
        };
        let a = iris.zeros::<f32x4>(n as usize)?;
        let b = iris.zeros::<f32x4>(n as usize)?;
        let seed = random_seed();
        util::fill_hash::launch(iris, grid_for(iris, n), &a, n, seed)?;
        util::fill_hash::launch(iris, grid_for(iris, n), &ra, n, seed)?;
        iris.synchronize()?;
        let (w, r) = (plan.warmup, plan.repeats);
        let memset = rt.time(w, r, |s| {
            // SAFETY: the runtime's own live allocation of `bytes`.
            unsafe { rt.device.memset(s, rt.b, 0x5a, bytes) }
        })?;
        let memcpy = rt.time(w, r, |s| {
            // SAFETY: the runtime's own live allocations of `bytes` each.
            unsafe { rt.device.memcpy_dtod(s, rt.b, rt.a, bytes) }
        })?;
        rt.stream.synchronize(iris.timeout())?;
        let memcpy_ok = check(iris, rb, n, seed)?;
        poison(iris, &b.device_ptr(), n, seed)?;
        let buffer_copy = time_events(iris, w, r, 1, || b.copy_from_buffer(&a))?;
        let buffer_copy_ok = check(iris, b.device_ptr(), n, seed)?;
        let fill = time_events(iris, w, r, 1, || {
            util::fill_hash::launch(iris, grid_for(iris, n), &b, n, seed ^ 7)
        })?;
        let fill_ok = check(iris, b.device_ptr(), n, seed ^ 7)?;
        poison(iris, &b.device_ptr(), n, seed)?;
        let copy = time_events(iris, w, r, 1, || {
            util::copy_local::launch(iris, grid_for(iris, n), &a, &b, n)
        })?;
        let copy_kernel_ok = check(iris, b.device_ptr(), n, seed)?;
        let row = |name: &str, kernel: &str, moved: usize, ms: f64, ok: bool| Row {
            case: "ceiling".into(),
            kernel: kernel.into(),
            ranks: 1,
            size_bytes: bytes,
            bytes_moved: moved as f64,
            ms,
            ceiling: name.into(),
            launches: 1,
            correct: ok,
            ..Row::default()
        };
        Ok(vec![
            row("memset", "runtime memset", bytes, memset, true),
            row(
                "memcpy_dtod",
                "runtime memcpy_dtod",
                2 * bytes,
                memcpy,
                memcpy_ok,
            ),
            row(
                "memcpy_dtod",
                "Buffer::copy_from_buffer",
                2 * bytes,
                buffer_copy,
                buffer_copy_ok,
            ),
            row("memset", "iris fill_hash kernel", bytes, fill, fill_ok),
            row(
                "memcpy_dtod",
                "iris copy_local kernel",
                2 * bytes,
                copy,
                copy_kernel_ok,
            ),
        ])
    })?;
    let mut rows = rows.into_iter().next().unwrap_or_default();
    // Each ceiling row is compared with the runtime's own figure.
    let memset = rows[0].gbps();
    let memcpy = rows[1].gbps();
    for r in &mut rows {
        r.ceiling_gbps = if r.ceiling == "memset" {
            memset
        } else {
            memcpy
        };
    }
    Ok(rows)
}

// ----- two-rank bandwidth cases ----------------------------------------------------------

/// Translate-then-store, translate-then-load and `iris::copy` between two ranks.
pub(crate) fn two_rank_cases(
    plan: &Plan,
    memset_gbps: f64,
    memcpy_gbps: f64,
    which: &dyn Fn(&str) -> bool,
) -> iris::Result<Vec<Row>> {
    let bytes = plan.bw_bytes;
    let n = (bytes / 16) as u64;
    let heap = 2 * bytes + 16 * MIB;
    let (do_store, do_load, do_copy) = (which("store"), which("load"), which("copy"));
    let per_rank = World::threads(2).heap_bytes(heap).run(|iris| {
        let me = iris.rank();
        let seeds = iris.all_gather(random_seed())?;
        let (w, r) = (plan.warmup, plan.repeats);
        let mut rows = Vec::new();
        let row = |case: &str, kernel: &str, moved: usize, ms: f64, ceiling: &str, ok: bool| Row {
            case: case.into(),
            kernel: kernel.into(),
            ranks: 2,
            size_bytes: bytes,
            bytes_moved: moved as f64,
            ms,
            ceiling: ceiling.into(),
            ceiling_gbps: if ceiling == "memset" {
                memset_gbps
            } else {
                memcpy_gbps
            },
            launches: 1,
            correct: ok,
            extra: Vec::new(),
        };

        // Each case in two shapes: grid-stride over a grid that fills the GPU, and chunked
        // (one block per 4 * 256 vectors, as Triton launches).
        let variants = [false, true];
        let name = |base: &str, what: &str, chunked: bool| {
            if chunked {
                format!("{base}c (chunked, {what})")
            } else {
                format!("{base} (grid-stride, {what})")
            }
        };
        let config = |chunked: bool| {
            if chunked {
                chunk_grid(n)
            } else {
                grid_for(iris, n)
            }
        };

        // Rank 0 stores into rank 1's copy; rank 1 checks what arrived.
        if do_store {
            let dst = iris.symmetric::<f32>(bytes / 4)?;
            for chunked in variants {
                poison(iris, &dst.local_ptr().cast(), n, seeds[0])?;
                iris.barrier()?;
                let ms = if me == 0 {
                    time_events(iris, w, r, 1, || {
                        if chunked {
                            store_v4c::launch(iris, config(true), &dst, n, 1, seeds[0])
                        } else {
                            store_v4::launch(iris, config(false), &dst, n, 1, seeds[0])
                        }
                    })?
                } else {
                    0.0
                };
                iris.barrier()?;
                let ok = if me == 1 {
                    check(iris, dst.local_ptr().cast(), n, seeds[0])?
                } else {
                    true
                };
                let ok = iris.all_gather(ok)?.iter().all(|&x| x);
                if me == 0 {
                    let kernel = name("store_v4", "translate, 16-byte store", chunked);
                    rows.push(row("store", &kernel, bytes, ms, "memset", ok));
                }
                iris.barrier()?;
            }
        }

        // Rank 0 loads rank 1's copy into a local buffer.
        if do_load {
            let src = iris.symmetric::<f32>(bytes / 4)?;
            let src_local = src.local_ptr().cast::<f32x4>();
            util::fill_hash::launch(iris, grid_for(iris, n), &src_local, n, seeds[me])?;
            let dst = iris.zeros::<f32x4>(n as usize)?;
            for chunked in variants {
                poison(iris, &dst.device_ptr(), n, seeds[1])?;
                iris.barrier()?;
                if me == 0 {
                    let ms = time_events(iris, w, r, 1, || {
                        if chunked {
                            load_v4c::launch(iris, config(true), &src, &dst, n, 1)
                        } else {
                            load_v4::launch(iris, config(false), &src, &dst, n, 1)
                        }
                    })?;
                    let ok = check(iris, dst.device_ptr(), n, seeds[1])?;
                    let kernel = name("load_v4", "translate, 16-byte load", chunked);
                    rows.push(row("load", &kernel, 2 * bytes, ms, "memcpy_dtod", ok));
                }
                iris.barrier()?;
            }
        }

        // iris::copy from rank 1's copy of `a` into rank 0's copy of `b`.
        if do_copy {
            let a = iris.symmetric::<f32>(bytes / 4)?;
            let b = iris.symmetric::<f32>(bytes / 4)?;
            let a_local = a.local_ptr().cast::<f32x4>();
            util::fill_hash::launch(iris, grid_for(iris, n), &a_local, n, seeds[me])?;
            for chunked in variants {
                poison(iris, &b.local_ptr().cast(), n, seeds[1])?;
                iris.barrier()?;
                if me == 0 {
                    let ms = time_events(iris, w, r, 1, || {
                        if chunked {
                            copy_v4c::launch(iris, config(true), &a, &b, n, 1, 0)
                        } else {
                            copy_v4::launch(iris, config(false), &a, &b, n, 1, 0)
                        }
                    })?;
                    let ok = check(iris, b.local_ptr().cast(), n, seeds[1])?;
                    let kernel = name("copy_v4", "iris::copy, two allocations", chunked);
                    rows.push(row("copy", &kernel, 2 * bytes, ms, "memcpy_dtod", ok));
                }
                iris.barrier()?;
            }
        }
        Ok(rows)
    })?;
    Ok(per_rank.into_iter().flatten().collect())
}

// ----- all-gather -------------------------------------------------------------------------
