//! The CUDA backend: NVIDIA GPUs through the driver API, loaded at run time.
//!
//! Nothing of CUDA is needed to build: `libcuda.so` is opened when the backend is, and a
//! machine without it gets [`Error::BackendUnavailable`](crate::Error::BackendUnavailable).
//! Each device is driven through its primary context (the one the CUDA runtime and other
//! libraries of the process use), made current on the calling thread before every call, so
//! ranks running as threads may share a device. Kernels come as PTX, JIT-compiled by the
//! driver when loaded.

use std::sync::Arc;

use crate::error::Result;
use crate::Backend;

mod api;
mod backend;
mod context;
mod driver;
mod info;
mod module;
mod shared;
pub mod target;

pub use api::{Cuda, CudaDevice, CudaEvent, CudaModule, CudaStream};
pub use backend::CudaBackend;
pub use context::PrimaryContext;
pub use shared::{SharedApi, IPC_HANDLE_BYTES};

/// Opens the CUDA backend: loads the driver and finds the devices.
pub fn open() -> Result<Arc<dyn Backend>> {
    Ok(Arc::new(CudaBackend::open()?))
}

/// Opens the CUDA backend as its concrete type, for the CUDA-specific calls of
/// [`CudaBackend`] and [`CudaDevice`] (legacy IPC handles, the choice of shared-memory API).
pub fn open_cuda() -> Result<Arc<CudaBackend>> {
    Ok(Arc::new(CudaBackend::open()?))
}

#[cfg(test)]
mod tests {
    use crate::error::Error;

    #[test]
    fn opening_without_a_runtime_is_an_error_not_a_panic() {
        match super::open() {
            Ok(backend) => assert!(backend.device_count() > 0),
            Err(Error::BackendUnavailable { reason, .. }) => {
                eprintln!("CUDA unavailable here: {reason}");
            }
            Err(other) => panic!("opening failed in an unexpected way: {other}"),
        }
        // A second open gives the same answer (the load is done once).
        assert_eq!(super::open().is_ok(), super::open().is_ok());
    }
}
