//! All-gather at 2, 4 and 8 ranks, 4 KiB to 1 GiB per rank, against the copy bandwidth.

use iris::prelude::*;
use iris::{DevicePtr, LaunchConfig, World};

use crate::harness::*;
use crate::kernels::*;

/// All-gather at `ranks` ranks, every size of the plan, both kernels.
pub(crate) fn all_gather_case(
    plan: &Plan,
    ranks: usize,
    memcpy_gbps: f64,
) -> iris::Result<Vec<Row>> {
    let max = plan.gather_sizes.iter().copied().max().unwrap_or(0);
    let heap = ranks * max + 16 * MIB;
    let per_rank = World::threads(ranks).heap_bytes(heap).run(|iris| {
        let me = iris.rank();
        let world = ranks as u32;
        let seeds = iris.all_gather(random_seed())?;
        // (kernel, size) -> this rank's samples (ms per operation) and check.
        let mut out_rows = Vec::new();
        for &size in &plan.gather_sizes {
            let nv = (size / 16) as u64; // vectors per rank
            let nf = (size / 4) as u64; // floats per rank
            let input = iris.zeros::<f32x4>(nv as usize)?;
            util::fill_hash::launch(iris, grid_for(iris, nv), &input, nv, seeds[me])?;
            let out = iris.symmetric::<f32>(ranks * size / 4)?;
            // Aggregate bytes: every rank reads its input once and writes it to every rank.
            let moved = (ranks * (ranks + 1) * size) as f64;
            let expected_ms = moved / (memcpy_gbps.max(1.0) * 1e9) * 1e3;
            let launches = if plan.gpu {
                (0.5 / expected_ms).ceil().clamp(1.0, 100.0) as usize
            } else {
                2
            };
            let input_f32: DevicePtr<f32> = input.device_ptr().cast();
            for kernel in ["all_gather_v4", "all_gather_v4c", "all_gather"] {
                for (r, &seed) in seeds.iter().enumerate() {
                    poison(
                        iris,
                        &out.local_ptr().cast::<f32x4>().add(r * nv as usize),
                        nv,
                        seed,
                    )?;
                }
                iris.barrier()?;
                let op = || {
                    if kernel == "all_gather_v4c" {
                        all_gather_v4c::launch(
                            iris,
                            chunk_grid(nv),
                            &input,
                            &out,
                            nv,
                            me as u32,
                            world,
                        )
                    } else if kernel == "all_gather_v4" {
                        all_gather_v4::launch(
                            iris,
                            grid_for(iris, nv),
                            &input,
                            &out,
                            nv,
                            me as u32,
                            world,
                        )
                    } else {
                        all_gather::launch(
                            iris,
                            LaunchConfig::for_elements(nf, BLOCK),
                            &input_f32,
                            &out,
                            nf,
                            me as u32,
                            world,
                        )
                    }
                };
                for _ in 0..plan.warmup {
                    op()?;
                }
                iris.synchronize()?;
                let (start, end) = (iris.event()?, iris.event()?);
                let mut samples = Vec::with_capacity(plan.repeats);
                for _ in 0..plan.repeats {
                    // All ranks start together: the sample is this rank's span, and the
                    // slowest rank's span is the operation's time.
                    iris.barrier()?;
                    iris.record(&start)?;
                    for _ in 0..launches {
                        op()?;
                    }
                    iris.record(&end)?;
                    samples.push(f64::from(start.elapsed_ms(&end)?) / launches as f64);
                }
                iris.barrier()?;
                let mut ok = true;
                for (r, &seed) in seeds.iter().enumerate() {
                    ok &= check(
                        iris,
                        out.local_ptr().cast::<f32x4>().add(r * nv as usize),
                        nv,
                        seed,
                    )?;
                }
                out_rows.push((kernel, size, moved, launches, samples, ok));
            }
        }
        Ok(out_rows)
    })?;
    let mut rows = Vec::new();
    for (k, (kernel, size, moved, launches, _, _)) in per_rank[0].iter().enumerate() {
        // Per sample, the slowest rank; then the median over samples.
        let repeats = per_rank[0][k].4.len();
        let mut worst: Vec<f64> = (0..repeats)
            .map(|s| per_rank.iter().map(|r| r[k].4[s]).fold(0.0, f64::max))
            .collect();
        let correct = per_rank.iter().all(|r| r[k].5);
        rows.push(Row {
            case: "all_gather".into(),
            kernel: (*kernel).into(),
            ranks,
            size_bytes: *size,
            bytes_moved: *moved,
            ms: median(&mut worst),
            ceiling: "memcpy_dtod".into(),
            ceiling_gbps: memcpy_gbps,
            launches: *launches,
            correct,
            extra: Vec::new(),
        });
    }
    Ok(rows)
}

// ----- ping-pong ----------------------------------------------------------------------------
