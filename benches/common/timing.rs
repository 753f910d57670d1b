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

/// The median over `iters` of the slowest rank's time of `work` in ms (device events,
/// every rank starting after a host barrier), after one untimed run.
pub fn time(
    iris: &Iris,
    iters: usize,
    mut work: impl FnMut() -> iris::Result<()>,
) -> iris::Result<f64> {
    iris.barrier()?;
    work()?;
    let mut times = Vec::new();
    for _ in 0..iters.max(1) {
        iris.barrier()?;
        let start = iris.record_event()?;
        work()?;
        let end = iris.record_event()?;
        end.synchronize()?;
        let mine = f64::from(start.elapsed_ms(&end)?);
        times.push(iris.all_gather(mine)?.into_iter().fold(0.0, f64::max));
    }
    times.sort_by(f64::total_cmp);
    Ok(times[times.len() / 2])
}
