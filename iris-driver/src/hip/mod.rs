//! The HIP backend: AMD GPUs through HIP, loaded at run time.
//!
//! Nothing of ROCm is needed to build: `libamdhip64.so` is opened when the backend is, and
//! a machine without it gets [`Error::BackendUnavailable`](crate::Error::BackendUnavailable).
//! ROCm 6 or newer is needed (`hipGetDevicePropertiesR0600`). HIP's current device is
//! per thread, so each call selects its device first and ranks running as threads may
//! share one. Kernels come as HSA code objects, one per processor: a device loads the one
//! built for its `gcnArchName` without feature suffixes (see [`target`]). Symmetric memory
//! is fine-grained, so that system-scope atomics reach peers.

use std::sync::Arc;

use crate::error::Result;
use crate::Backend;

mod api;
mod backend;
mod info;
mod module;
mod runtime;
mod shared;
pub mod target;

pub use api::{Hip, HipDevice, HipEvent, HipModule, HipStream};
pub use backend::HipBackend;

/// Opens the HIP backend: loads the runtime and finds the devices.
pub fn open() -> Result<Arc<dyn Backend>> {
    Ok(Arc::new(HipBackend::open()?))
}

#[cfg(test)]
mod tests {
    use crate::error::Error;

    #[test]
    fn opening_without_a_runtime_is_an_error_not_a_panic() {
        match super::open() {
            Ok(backend) => assert!(backend.device_count() > 0),
            Err(Error::BackendUnavailable { reason, .. }) => {
                eprintln!("HIP unavailable here: {reason}");
            }
            Err(other) => panic!("opening failed in an unexpected way: {other}"),
        }
        // A second open gives the same answer (the load is done once).
        assert_eq!(super::open().is_ok(), super::open().is_ok());
    }
}
