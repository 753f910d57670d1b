//! Bounded waits on streams and events: the driver's own waits block without a limit, so
//! the backend polls (`cuStreamQuery`, `cuEventQuery`) instead, spinning briefly and then
//! sleeping.

use std::time::{Duration, Instant};

use cudarc::driver::sys::CUresult;

use super::driver::error;
use crate::error::{Error, Result};

/// How long a copy that returns once complete may wait for the work before it.
pub(super) const COPY_TIMEOUT: Duration = Duration::from_secs(600);

/// Calls `query` until it reports completion, an error, or `timeout` passes. `what` names
/// the wait in a timeout error; `call` names the query in a driver error.
pub(super) fn poll(
    call: &'static str,
    what: impl FnOnce() -> String,
    timeout: Duration,
    mut query: impl FnMut() -> CUresult,
) -> Result<()> {
    let start = Instant::now();
    loop {
        match query() {
            CUresult::CUDA_SUCCESS => return Ok(()),
            CUresult::CUDA_ERROR_NOT_READY => {}
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
