//! All-to-all with `iris::ccl`: every rank's input is `ranks` blocks; block `p` of rank
//! `r` lands in block `r` of rank `p`'s output (a transpose of blocks). Checked against
//! every rank's input.
//!
//! ```text
//! cargo run --release --example all_to_all -- [--ranks 1,2,4,8] [--elems 4K,1M] [--iters K]
//! ```
//! `--elems` counts 4-byte elements (`u32`) per block (each rank's input and output hold `ranks` blocks).

mod common;

use common::{median_ms, parse_options, run_collective_example, Measured};
use iris::ccl::{self, Ccl};
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
    let usage = "[--ranks 1,2,4,8] [--elems 4K,1M (f32s per block)] [--iters K]";
    let opts = match parse_options("all_to_all", usage, &[1, 2, 4, 8], default_elems, &[]) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("all_to_all: {e}");
            return ExitCode::from(2);
        }
    };
    let max = opts.elems.iter().max().copied().unwrap_or(0);
    let max_ranks = opts.ranks.iter().max().copied().unwrap_or(1);
    let heap = (max * 4 * max_ranks * 2).next_multiple_of(1 << 20) + (1 << 20);
    let bus = |w: usize| (w as f64 - 1.0) / w as f64;
    let result = run_collective_example("all_to_all", &opts.ranks, heap, bus, |iris| {
        let ccl = Ccl::new(iris)?;
        let (world, me) = (iris.world_size(), iris.rank());
        let mut rows = Vec::new();
        for &c in &opts.elems {
            // Element j of block p of rank r holds (r, p, j): a wrong block is easy to see.
            let mine: Vec<u32> = (0..world * c)
                .map(|k| ((me as u32) << 24) | (((k / c) as u32) << 16) | (k % c) as u32 & 0xFFFF)
                .collect();
            let input = iris.symmetric_from_slice(&mine)?;
            let inputs = iris.all_gather(mine)?;
            let want: Vec<u32> = (0..world)
                .flat_map(|r| inputs[r][me * c..(me + 1) * c].to_vec())
                .collect();
            let output = iris.symmetric_full::<u32>(world * c, u32::MAX)?;
            ccl::all_to_all(&ccl, &input, &output)?;
            ccl.synchronize()?;
            let correct = output.to_vec()? == want;
            let ms = median_ms(iris, opts.iters, || ccl::all_to_all(&ccl, &input, &output))?;
            ccl.check()?;
            rows.push(Measured {
                variant: "push".into(),
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
            eprintln!("all_to_all: a block landed in the wrong place");
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}
