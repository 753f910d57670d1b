//! `iris-trace`: reads the traces a world wrote with `IRIS_TRACE=<dir>`.
//!
//! ```text
//! iris-trace summary <dir>/trace.json   per call and kernel: count, device time, GB/s
//! iris-trace merge <dir>                 merges the ranks' files into <dir>/trace.json
//! ```
//! (the world merges by itself when every rank ended; `merge` is for the rest). Open
//! `trace.json` in <https://ui.perfetto.dev> or `chrome://tracing`.

use std::path::Path;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        ["summary", file] => iris_host::trace::summary(Path::new(file)).map(|table| {
            print!("{table}");
        }),
        ["merge", dir] => iris_host::trace::merge(Path::new(dir)).map(|path| {
            println!("{}", path.display());
        }),
        _ => {
            eprintln!("usage: iris-trace summary <trace.json> | iris-trace merge <dir>");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("iris-trace: {err}");
            ExitCode::FAILURE
        }
    }
}
