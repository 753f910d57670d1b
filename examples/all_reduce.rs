//! All-reduce with `iris::ccl`: one-shot (every rank reads every rank's input and reduces
//! all of it) and two-shot (each rank reduces one share and stores it into every rank),
//! for `f32` sums. Every rank's result is checked against a host sum in rank order, and
//! every rank's result must be identical.
//!
//! ```text
//! cargo run --release --example all_reduce -- [--ranks 1,2,4,8] [--elems 4K,1M] [--iters K] [--op sum|min|max]
//! ```
//! `--elems` counts `f32`s per rank. One-shot suits small messages, two-shot large ones:
//! the table shows where they cross on this machine.

mod common;

use common::{close, median_ms, parse_options, random_f32, run_collective_example, Measured};
use iris::ccl::{self, AllReduceAlgo, Ccl, ReduceOp};
use iris::BackendKind;
use std::process::ExitCode;

fn main() -> ExitCode {
    let default_elems = |b: BackendKind| {
        if b == BackendKind::Cpu {
            vec![1 << 10, 1 << 16]
        } else {
            vec![1 << 10, 1 << 16, 1 << 22]
        }
    };
    let usage = "[--ranks 1,2,4,8] [--elems 4K,1M (f32s per rank)] [--iters K] [--op sum|min|max]";
    let opts = match parse_options("all_reduce", usage, &[1, 2, 4, 8], default_elems, &["--op"]) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("all_reduce: {e}");
            return ExitCode::from(2);
        }
    };
    let op = match opts.extra("--op").unwrap_or("sum") {
        "sum" => ReduceOp::Sum,
        "min" => ReduceOp::Min,
        "max" => ReduceOp::Max,
        other => {
            eprintln!("all_reduce: --op: `{other}` is not sum, min or max");
            return ExitCode::from(2);
        }
    };
    let max = opts.elems.iter().max().copied().unwrap_or(0);
    let heap = (max * 4 * 8).next_multiple_of(1 << 20) + (1 << 20);
    let bus = |w: usize| 2.0 * (w as f64 - 1.0) / w as f64;
    let result = run_collective_example("all_reduce", &opts.ranks, heap, bus, |iris| {
        let ccl = Ccl::new(iris)?;
        let mut rows = Vec::new();
        for &n in &opts.elems {
            let input = iris.symmetric_from_slice(&random_f32(n))?;
            let inputs = iris.all_gather(input.to_vec()?)?;
            let combine = |a: f32, b: f32| match op {
                ReduceOp::Sum => a + b,
                ReduceOp::Min => a.min(b),
                ReduceOp::Max => a.max(b),
            };
            let want: Vec<f32> = (0..n)
                .map(|i| {
                    inputs[1..]
                        .iter()
                        .fold(inputs[0][i], |acc, v| combine(acc, v[i]))
                })
                .collect();
            let scale: Vec<f32> = (0..n)
                .map(|i| inputs.iter().map(|v| v[i].abs()).sum())
                .collect();
            for algo in [AllReduceAlgo::OneShot, AllReduceAlgo::TwoShot] {
                let output = iris.symmetric_full::<f32>(n, f32::NAN)?;
                ccl::all_reduce(&ccl, &input, &output, op, algo)?;
                ccl.synchronize()?;
                let got = output.to_vec()?;
                let same_everywhere = iris.all_gather(got.clone())?.iter().all(|g| {
                    g.iter()
                        .map(|x| x.to_bits())
                        .eq(got.iter().map(|x| x.to_bits()))
                });
                let correct = close(&got, &want, &scale, 1e-6) && same_everywhere;
                let ms = median_ms(iris, opts.iters, || {
                    ccl::all_reduce(&ccl, &input, &output, op, algo)
                })?;
                ccl.check()?;
                rows.push(Measured {
                    variant: format!("{algo:?} {op:?}"),
                    bytes: n * 4,
                    ms,
                    correct,
                });
            }
        }
        Ok(rows)
    });
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => {
            eprintln!("all_reduce: a result differs from the host reference or between ranks");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}
