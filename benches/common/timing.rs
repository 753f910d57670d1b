//! What the ranks-as-threads benches share: their command-line numbers and their timing.

use iris::Iris;

/// The value after `name` on the command line, parsed.
pub fn arg<T: std::str::FromStr>(name: &str) -> Option<T> {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
}

/// The calls a queued sample runs back to back between its two events.
pub const QUEUED_CALLS: usize = 10;

/// How a bench times a call.
#[derive(Clone, Copy, Debug)]
pub struct Timing {
    /// Samples taken; the median is reported (`--iters`).
    pub iters: usize,
    /// `false`: each sample is one call, every rank starting it after a host barrier (the
    /// slowest rank's time, so a rank that queues its call late counts against the call).
    /// `true` (`--queued`): each sample is [`QUEUED_CALLS`] calls queued back to back, as
    /// a program runs them, divided by their number: the host is ahead of the device and
    /// the threads' start, paid once, is spread over the calls.
    pub queued: bool,
}

impl Timing {
    /// `--iters` (else `default_iters`) and `--queued` from the command line.
    pub fn from_args(default_iters: usize) -> Self {
        Timing {
            iters: arg("--iters").unwrap_or(default_iters),
            queued: std::env::args().any(|a| a == "--queued"),
        }
    }

    /// How the samples were taken, for a bench's heading.
    pub fn describe(&self) -> String {
        if self.queued {
            format!(
                "median of {} samples of {QUEUED_CALLS} calls queued back to back",
                self.iters
            )
        } else {
            format!("median of {} calls, each after a host barrier", self.iters)
        }
    }
}

/// The median over `timing.iters` samples of the slowest rank's time of one call of
/// `work` in ms (device events, every rank starting a sample after a host barrier), after
/// one untimed call.
pub fn time(
    iris: &Iris,
    timing: Timing,
    mut work: impl FnMut() -> iris::Result<()>,
) -> iris::Result<f64> {
    iris.barrier()?;
    work()?;
    let calls = if timing.queued { QUEUED_CALLS } else { 1 };
    let mut times = Vec::new();
    for _ in 0..timing.iters.max(1) {
        iris.barrier()?;
        let start = iris.record_event()?;
        for _ in 0..calls {
            work()?;
        }
        let end = iris.record_event()?;
        end.synchronize()?;
        let mine = f64::from(start.elapsed_ms(&end)?) / calls as f64;
        times.push(iris.all_gather(mine)?.into_iter().fold(0.0, f64::max));
    }
    times.sort_by(f64::total_cmp);
    Ok(times[times.len() / 2])
}
