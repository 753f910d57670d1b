//! Bounded waits on streams and events: the runtimes' own waits block without a limit, so
//! the device polls (`cuStreamQuery`, `hipEventQuery`, ...) instead, spinning briefly and
//! then sleeping longer the longer the wait lasts.

use std::time::{Duration, Instant};

use super::api::Query;
use crate::error::{Error, Result};

/// How long a copy that returns once complete may wait for the work before it.
pub(crate) const COPY_TIMEOUT: Duration = Duration::from_secs(600);

/// Calls `query` until it reports completion, an error, or `timeout` passes. `what` names
/// the wait in a timeout error.
pub(crate) fn poll(
    what: impl FnOnce() -> String,
    timeout: Duration,
    mut query: impl FnMut() -> Query,
) -> Result<()> {
    let start = Instant::now();
    loop {
        match query() {
            Query::Done => return Ok(()),
            Query::NotReady => {}
            Query::Failed(err) => return Err(err),
        }
        let waited = start.elapsed();
        if waited >= timeout {
            return Err(Error::Timeout {
                rank: None,
                what: what(),
                waited,
                missing: Vec::new(),
            });
        }
        pause(waited);
    }
}

/// Spins for the first tens of microseconds (kernels and copies often finish that fast),
/// then yields, then sleeps longer the longer the wait has lasted.
fn pause(waited: Duration) {
    if waited < Duration::from_micros(50) {
        std::hint::spin_loop();
    } else if waited < Duration::from_millis(2) {
        std::thread::yield_now();
    } else if waited < Duration::from_millis(100) {
        std::thread::sleep(Duration::from_micros(20));
    } else {
        std::thread::sleep(Duration::from_millis(1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_that_never_finishes_times_out_naming_the_wait() {
        let err = poll(
            || "a test wait".into(),
            Duration::from_millis(20),
            || Query::NotReady,
        )
        .unwrap_err();
        assert!(err.to_string().contains("a test wait"), "{err}");
    }

    #[test]
    fn done_and_failed_end_the_wait() {
        assert!(poll(String::new, Duration::from_secs(1), || Query::Done).is_ok());
        let failed = poll(String::new, Duration::from_secs(1), || {
            Query::Failed(Error::InvalidConfig("broken".into()))
        });
        assert!(matches!(failed, Err(Error::InvalidConfig(_))));
    }
}
