//! Bounded waits on streams and events: HIP's own waits block without a limit, so the
//! backend polls (`hipStreamQuery`, `hipEventQuery`) instead, spinning briefly and then
//! sleeping.

use std::time::{Duration, Instant};

use cubecl_hip_sys::{hipError_t, hipError_t_hipErrorNotReady, hipError_t_hipSuccess};

use super::runtime::error;
use crate::error::{Error, Result};

/// How long a copy that returns once complete may wait for the work before it.
pub(super) const COPY_TIMEOUT: Duration = Duration::from_secs(600);

/// Calls `query` until it reports completion, an error, or `timeout` passes. `what` names
/// the wait in a timeout error; `call` names the query in a runtime error.
pub(super) fn poll(
    call: &'static str,
    what: impl FnOnce() -> String,
    timeout: Duration,
    mut query: impl FnMut() -> hipError_t,
) -> Result<()> {
    let start = Instant::now();
    loop {
        match query() {
            r if r == hipError_t_hipSuccess => return Ok(()),
            r if r == hipError_t_hipErrorNotReady => {}
            other => return Err(error(call, other)),
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
}
