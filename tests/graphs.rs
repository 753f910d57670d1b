//! Graphs: each rank captures an all-reduce and a kernel of its own from its stream
//! (`Iris::capture`) and replays the graph 1000 times, writing fresh inputs between
//! replays, and every result is checked: the collectives count their barrier epochs on
//! the device, so each replay synchronises the ranks again. Waiting inside a capture is
//! refused. On the CPU backend (no graphs) the capture is refused with `Unsupported`,
//! which is checked, and the same 1000 steps run eagerly with the same checks.

mod common;

use common::backends;
use iris::ccl::{self, AllReduceAlgo, Ccl, ReduceOp};
use iris::{BackendKind, Error, World};

#[iris::kernels]
mod affine {
    use iris::prelude::*;

    /// `y[i] = 2 * x[i] + 1`.
    #[kernel]
    pub fn double_plus_one(x: *const f32, y: *mut f32, n: u32) {
        let i = block_idx_x() * block_dim_x() + thread_idx_x();
        if i < n {
            unsafe { *y.add(i as usize) = 2.0 * *x.add(i as usize) + 1.0 };
        }
    }
}

/// Rank `rank`'s input at replay `step`: small integers, exact in every f32 sum here.
fn input(rank: usize, step: usize, n: usize) -> Vec<f32> {
    (0..n)
        .map(|i| ((i * 7 + step * 13 + rank * 31) % 101) as f32)
        .collect()
}

const REPLAYS: usize = 1000;

#[test]
fn a_captured_all_reduce_and_kernel_replay_with_fresh_inputs() {
    let n = 1024usize;
    for backend in backends() {
        for world in [1usize, 2] {
            let replayed = World::threads(world)
                .backend(backend)
                .heap_bytes(1 << 20)
                .run(|iris| {
                    let ccl = Ccl::new(iris)?;
                    let x = iris.symmetric_zeros::<f32>(n)?;
                    let sum = iris.symmetric_zeros::<f32>(n)?;
                    let y = iris.zeros::<f32>(n)?;
                    let step = |iris: &iris::Iris| {
                        ccl::all_reduce(&ccl, &x, &sum, ReduceOp::Sum, AllReduceAlgo::OneShot)?;
                        let blocks = n.div_ceil(256) as u32;
                        affine::double_plus_one::launch(
                            iris,
                            (blocks, 256),
                            &sum.local_ptr(),
                            &y,
                            n as u32,
                        )
                    };
                    // Once before capturing: the first call loads the kernels (which waits).
                    step(iris)?;
                    ccl.synchronize()?;
                    let graph = if backend == BackendKind::Cpu {
                        let refused = iris.capture(step);
                        assert!(
                            matches!(refused, Err(Error::Unsupported { .. })),
                            "the CPU backend has no graphs: {:?}",
                            refused.err()
                        );
                        None
                    } else {
                        // Waiting inside a capture is refused, and the capture ends cleanly.
                        let waits = iris.capture(|iris| iris.synchronize());
                        assert!(
                            matches!(waits, Err(Error::Unsupported { .. })),
                            "a synchronize inside a capture: {:?}",
                            waits.err()
                        );
                        Some(iris.capture(step)?)
                    };
                    let mut wrong = 0usize;
                    for s in 0..REPLAYS {
                        x.copy_from_slice(&input(iris.rank(), s, n))?;
                        match &graph {
                            Some(g) => g.launch()?,
                            None => step(iris)?,
                        }
                        let got = y.to_vec()?;
                        let inputs: Vec<Vec<f32>> = (0..world).map(|r| input(r, s, n)).collect();
                        for (i, v) in got.iter().enumerate() {
                            let total: f32 = inputs.iter().map(|x| x[i]).sum();
                            if *v != 2.0 * total + 1.0 {
                                wrong += 1;
                            }
                        }
                    }
                    ccl.synchronize()?;
                    Ok((graph.is_some(), wrong))
                })
                .unwrap_or_else(|e| panic!("{backend} at {world} ranks: {e}"));
            for (rank, (captured, wrong)) in replayed.iter().enumerate() {
                eprintln!(
                    "{backend} at {world} ranks, rank {rank}: {REPLAYS} {}, {wrong} wrong values",
                    if *captured {
                        "graph replays"
                    } else {
                        "eager steps (no graphs on this backend)"
                    }
                );
                assert_eq!(*wrong, 0, "{backend} at {world} ranks, rank {rank}");
            }
        }
    }
}
