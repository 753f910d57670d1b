//! Reduce-scatter with `iris::ccl`: every rank's input is `ranks` blocks; rank `r` gets
//! block `r` summed over every rank (in rank order). Each rank's block is checked against a
//! host sum.
//!
//! ```text
//! cargo run --release --example reduce_scatter -- [--ranks 1,2,4,8] [--elems 4K,1M] [--iters K]
//! ```
//! `--elems` counts `f32`s of each rank's output block (the input holds `ranks` times as many).

mod common;

use common::{close, median_ms, parse_options, random_f32, run_collective_example, Measured};
use iris::ccl::{self, Ccl, ReduceOp};
use iris::BackendKind;
use std::process::ExitCode;

fn main() -> ExitCode {
    let default_elems = |b: BackendKind| {
        if b == BackendKind::Cpu {
            vec![1 << 10, 1 << 14]
        } else {
            vec![1 << 10, 1 << 16, 1 << 20]
        }
    };
    let usage = "[--ranks 1,2,4,8] [--elems 4K,1M (f32s per output block)] [--iters K]";
    let opts = match parse_options("reduce_scatter", usage, &[1, 2, 4, 8], default_elems, &[]) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("reduce_scatter: {e}");
            return ExitCode::from(2);
        }
    };
    let max = opts.elems.iter().max().copied().unwrap_or(0);
    let max_ranks = opts.ranks.iter().max().copied().unwrap_or(1);
    let heap = (max * 4 * (max_ranks + 2)).next_multiple_of(1 << 20) + (1 << 20);
    let bus = |w: usize| (w as f64 - 1.0) / w as f64;
    let result = run_collective_example("reduce_scatter", &opts.ranks, heap, bus, |iris| {
        let ccl = Ccl::new(iris)?;
        let (world, me) = (iris.world_size(), iris.rank());
        let mut rows = Vec::new();
        for &c in &opts.elems {
            let input = iris.symmetric_from_slice(&random_f32(c * world))?;
            let inputs = iris.all_gather(input.to_vec()?)?;
            let want: Vec<f32> = (0..c)
                .map(|j| {
                    inputs[1..]
                        .iter()
                        .fold(inputs[0][me * c + j], |acc, v| acc + v[me * c + j])
                })
                .collect();
            let scale: Vec<f32> = (0..c)
                .map(|j| inputs.iter().map(|v| v[me * c + j].abs()).sum())
                .collect();
            let output = iris.symmetric_full::<f32>(c, f32::NAN)?;
            ccl::reduce_scatter(&ccl, &input, &output, ReduceOp::Sum)?;
            ccl.synchronize()?;
            let correct = close(&output.to_vec()?, &want, &scale, 1e-6);
            let ms = median_ms(iris, opts.iters, || {
                ccl::reduce_scatter(&ccl, &input, &output, ReduceOp::Sum)
            })?;
            ccl.check()?;
            rows.push(Measured {
                variant: "Sum".into(),
                bytes: c * 4 * world,
                ms,
                correct,
            });
        }
        Ok(rows)
    });
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => {
            eprintln!("reduce_scatter: a block differs from the host reference");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}
