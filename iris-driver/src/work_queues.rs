//! How many hardware queues a GPU runtime gives this process's streams, and asking for
//! enough of them before the runtime starts.
//!
//! A GPU runs the streams of one context through a fixed number of hardware queues
//! (CUDA: `CUDA_DEVICE_MAX_CONNECTIONS`, default 8; HIP: `GPU_MAX_HW_QUEUES`, default 4).
//! More streams than queues share them, in order: a kernel queued behind another stream's
//! kernel on the same queue does not start until that kernel ends. Ranks as threads on one
//! device are one stream each, and kernels that wait for each other (the device barrier of
//! `iris::ccl`) then deadlock until their wait gives up. So before the runtime reads the
//! variable, iris sets it when the user has not, and the device reports what is in force
//! ([`DeviceInfo::work_queues`](super::DeviceInfo::work_queues)).

/// What the process's environment said about one runtime's queue count, read once before
/// the runtime started.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct QueueSetting {
    /// The value in force for contexts created after the runtime started.
    queues: u32,
    /// Whether iris set the variable (the user had not).
    claimed: bool,
    /// The value the runtime uses when the variable is unset.
    runtime_default: u32,
}

impl QueueSetting {
    /// The queues of a context: one another library created before iris set the variable
    /// has the runtime's default.
    pub(crate) fn for_context(&self, created_before_iris: bool) -> u32 {
        if self.claimed && created_before_iris {
            self.runtime_default
        } else {
            self.queues
        }
    }
}

/// Reads `var`; when it is unset (or not a positive number, which the runtime ignores
/// too), sets it to `wanted`. Call once per process, before the runtime's first call.
pub(crate) fn claim(var: &str, runtime_default: u32, wanted: u32) -> QueueSetting {
    match parse(std::env::var(var).ok().as_deref()) {
        Some(user) => QueueSetting {
            queues: user,
            claimed: false,
            runtime_default,
        },
        None => {
            // The runtime reads the variable when it creates a context, later in this
            // process; this runs once (the runtime's loader is a `OnceLock`), before any
            // iris call into the runtime.
            std::env::set_var(var, wanted.to_string());
            tracing::debug!(var, wanted, "set the hardware queue count");
            QueueSetting {
                queues: wanted,
                claimed: true,
                runtime_default,
            }
        }
    }
}

/// A positive queue count, or `None`.
fn parse(value: Option<&str>) -> Option<u32> {
    value
        .and_then(|v| v.trim().parse::<u32>().ok())
        .filter(|&n| n > 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_positive_numbers_count() {
        assert_eq!(parse(Some("32")), Some(32));
        assert_eq!(parse(Some(" 4 ")), Some(4));
        assert_eq!(parse(Some("0")), None);
        assert_eq!(parse(Some("many")), None);
        assert_eq!(parse(None), None);
    }

    #[test]
    fn a_user_setting_is_kept_and_an_unset_one_is_claimed() {
        let var = "IRIS_TEST_WORK_QUEUES_VAR";
        std::env::set_var(var, "12");
        let user = claim(var, 8, 32);
        assert_eq!((user.for_context(false), user.for_context(true)), (12, 12));
        assert_eq!(std::env::var(var).as_deref(), Ok("12"));
        std::env::remove_var(var);
        let claimed = claim(var, 8, 32);
        assert_eq!(std::env::var(var).as_deref(), Ok("32"));
        // A context made before iris set it has the runtime's default.
        assert_eq!(
            (claimed.for_context(false), claimed.for_context(true)),
            (32, 8)
        );
        std::env::remove_var(var);
    }
}
