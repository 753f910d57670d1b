//! Settings read from the environment.

use std::time::Duration;

use iris_driver::{Error, Result};

/// The bound on every wait when `IRIS_TIMEOUT` is not set.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// The bound on every wait: `IRIS_TIMEOUT` (seconds, fractions allowed) or 60 s.
pub fn timeout_from_env() -> Result<Duration> {
    match std::env::var("IRIS_TIMEOUT") {
        Ok(value) if !value.trim().is_empty() => parse_timeout(&value),
        _ => Ok(DEFAULT_TIMEOUT),
    }
}

/// Parses an `IRIS_TIMEOUT` value: a positive number of seconds.
pub fn parse_timeout(value: &str) -> Result<Duration> {
    let invalid = |reason: &str| Error::InvalidEnv {
        var: "IRIS_TIMEOUT",
        value: value.to_string(),
        reason: reason.to_string(),
    };
    let seconds: f64 = value
        .trim()
        .parse()
        .map_err(|_| invalid("expected a number of seconds"))?;
    if seconds.is_nan() || seconds <= 0.0 {
        return Err(invalid("the timeout must be positive"));
    }
    Duration::try_from_secs_f64(seconds).map_err(|_| invalid("the timeout is too large"))
}

/// Whether a context loads every kernel unit of the program on its device when it is
/// made: yes unless `IRIS_PRELOAD=0` (which saves the start-up time of a program with many
/// kernels, and lets a launch load its unit, which on CUDA waits for the device's running
/// kernels: a kernel waiting for another rank's launch then never ends).
pub fn preload_from_env() -> bool {
    std::env::var("IRIS_PRELOAD").map_or(true, |v| v.trim() != "0")
}

/// The folder `IRIS_TRACE` names, where a world writes its trace (see [`crate::trace`]);
/// `None` when it is unset or empty.
pub fn trace_dir_from_env() -> Option<std::path::PathBuf> {
    std::env::var_os("IRIS_TRACE")
        .filter(|v| !v.is_empty())
        .map(std::path::PathBuf::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_seconds() {
        assert_eq!(parse_timeout("5").unwrap(), Duration::from_secs(5));
        assert_eq!(parse_timeout(" 0.25 ").unwrap(), Duration::from_millis(250));
        for bad in ["0", "-1", "abc", "NaN", "1e300"] {
            let err = parse_timeout(bad).unwrap_err();
            assert!(err.to_string().contains("IRIS_TIMEOUT"), "{err}");
        }
    }
}
