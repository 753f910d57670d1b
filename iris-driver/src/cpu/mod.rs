//! The CPU backend: device memory is host memory, kernels are shared objects run by
//! worker threads, one call of the kernel entry per GPU thread.
//!
//! There is one device. Launches, `memset` and `memcpy_dtod` are queued on a stream's own
//! thread, so they are asynchronous as on a GPU.

mod barrier;
mod clock;
mod device;
mod event;
mod fibers;
mod grid;
mod memory;
mod module;
mod stream;
mod warp;

use std::sync::Arc;

use crate::error::{Error, Result};
use crate::{Backend, BackendKind, Device};

pub use device::CpuDevice;

/// The target name of CPU code objects this backend loads: the host triple.
pub const HOST_TRIPLE: &str = if cfg!(all(target_arch = "x86_64", target_os = "linux")) {
    "x86_64-unknown-linux-gnu"
} else if cfg!(all(target_arch = "aarch64", target_os = "linux")) {
    "aarch64-unknown-linux-gnu"
} else {
    "unsupported-host"
};

/// The CPU backend: one device, the host.
pub struct CpuBackend {
    device: Arc<CpuDevice>,
}

impl CpuBackend {
    /// A CPU backend with its one device.
    pub fn new() -> Result<Self> {
        if !cfg!(target_os = "linux") {
            return Err(Error::BackendUnavailable {
                kind: BackendKind::Cpu,
                reason: "the CPU backend needs Linux (memfd_create, /proc/self/fd)".into(),
            });
        }
        Ok(Self {
            device: Arc::new(CpuDevice::new()),
        })
    }
}

impl Backend for CpuBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Cpu
    }

    fn device_count(&self) -> usize {
        1
    }

    fn device(&self, ordinal: usize) -> Result<Arc<dyn Device>> {
        if ordinal == 0 {
            Ok(self.device.clone())
        } else {
            Err(Error::NoSuchDevice {
                backend: BackendKind::Cpu,
                ordinal,
                count: 1,
            })
        }
    }

    fn can_access_peer(&self, from: usize, to: usize) -> Result<bool> {
        self.device(from)?;
        self.device(to)?;
        Ok(true)
    }

    fn enable_peer_access(&self, from: usize, to: usize) -> Result<()> {
        self.device(from)?;
        self.device(to)?;
        Ok(())
    }
}

/// Opens the CPU backend.
pub fn open() -> Result<Arc<dyn Backend>> {
    Ok(Arc::new(CpuBackend::new()?))
}
