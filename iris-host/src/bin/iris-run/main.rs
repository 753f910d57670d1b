//! `iris-run -n N [--nnodes M --node-rank K --master-addr HOST --master-port P] [--]
//! PROGRAM [ARGS...]`: runs N processes of PROGRAM as the ranks of one job on this node,
//! or as node K's ranks of a job on M nodes (the logic is in `launcher.rs`).

mod launcher;

use std::process::ExitCode;

use launcher::{Invocation, USAGE};

fn main() -> ExitCode {
    let invocation = match launcher::parse_args(std::env::args_os().skip(1)) {
        Ok(invocation) => invocation,
        Err(message) => {
            eprintln!("iris-run: {message}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let options = match invocation {
        Invocation::Help => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Invocation::Version => {
            println!("iris-run {}", env!("CARGO_PKG_VERSION"));
            return ExitCode::SUCCESS;
        }
        Invocation::Run(options) => options,
    };
    match launcher::run(&options) {
        Ok(outcome) => ExitCode::from(u8::try_from(outcome.exit_code()).unwrap_or(1)),
        Err(err) => {
            eprintln!("iris-run: {err}");
            ExitCode::from(1)
        }
    }
}
