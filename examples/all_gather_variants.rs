//! All-gather with `iris::ccl`, both variants: push (every rank stores its elements into
//! every rank's output) and pull (every rank loads every rank's elements into its own). The
//! gathered result is checked against every rank's input. (`examples/all_gather.rs` is the
//! same collective as a ten-line kernel of your own.)
//!
//! ```text
//! cargo run --release --example all_gather_variants -- [--ranks 1,2,4,8] [--elems 4K,1M] [--iters K]
//! ```
//! `--elems` counts `f32`s per rank (the output holds `ranks` times as many).

mod common;

use common::{median_ms, parse_options, random_f32, run_collective_example, Measured};
use iris::ccl::{self, AllGatherAlgo, Ccl};
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
    let usage = "[--ranks 1,2,4,8] [--elems 4K,1M (f32s per rank)] [--iters K]";
    let opts = match parse_options(
        "all_gather_variants",
        usage,
        &[1, 2, 4, 8],
        default_elems,
        &[],
    ) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("all_gather_variants: {e}");
            return ExitCode::from(2);
        }
    };
    let max = opts.elems.iter().max().copied().unwrap_or(0);
    let max_ranks = opts.ranks.iter().max().copied().unwrap_or(1);
    let heap = (max * 4 * (max_ranks + 2)).next_multiple_of(1 << 20) + (1 << 20);
    let bus = |w: usize| (w as f64 - 1.0) / w as f64;
    let result = run_collective_example("all_gather_variants", &opts.ranks, heap, bus, |iris| {
        let ccl = Ccl::new(iris)?;
        let world = iris.world_size();
        let mut rows = Vec::new();
        for &n in &opts.elems {
            let input = iris.symmetric_from_slice(&random_f32(n))?;
            let want: Vec<f32> = iris.all_gather(input.to_vec()?)?.concat();
            for algo in [AllGatherAlgo::Push, AllGatherAlgo::Pull] {
                let output = iris.symmetric_full::<f32>(n * world, f32::NAN)?;
                ccl::all_gather(&ccl, &input, &output, algo)?;
                ccl.synchronize()?;
                let correct = output.to_vec()? == want;
                let ms = median_ms(iris, opts.iters, || {
                    ccl::all_gather(&ccl, &input, &output, algo)
                })?;
                ccl.check()?;
                rows.push(Measured {
                    variant: format!("{algo:?}"),
                    bytes: n * 4 * world,
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
            eprintln!("all_gather_variants: the gathered data did not match the inputs");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}
