//! The CUDA backend object: the devices the driver reports, and peer access between them.

use std::sync::{Arc, Mutex};

use cudarc::driver::sys::{self, CUresult};

use super::api::CudaDevice;
use super::driver::{check, load};
use super::info::device_handle;
use crate::error::{Error, Result};
use crate::sync::lock;
use crate::{Backend, BackendKind, Device};

/// NVIDIA GPUs through the CUDA driver API. Devices are opened (their primary contexts
/// retained) on first use and shared by every caller after that.
pub struct CudaBackend {
    devices: Mutex<Vec<Option<Arc<CudaDevice>>>>,
    driver_version: i32,
}

impl CudaBackend {
    /// Loads the driver and counts the devices; errors when there is no driver or no device.
    pub(super) fn open() -> Result<CudaBackend> {
        let driver = load()?;
        let mut count = 0;
        // SAFETY: a valid out-pointer; the driver is initialised.
        check("cuDeviceGetCount", unsafe {
            sys::cuDeviceGetCount(&mut count)
        })?;
        let count = usize::try_from(count).unwrap_or(0);
        if count == 0 {
            return Err(Error::BackendUnavailable {
                kind: BackendKind::Cuda,
                reason: "the CUDA driver reports no device".into(),
            });
        }
        tracing::debug!(count, version = driver.version, "CUDA driver loaded");
        Ok(CudaBackend {
            devices: Mutex::new(vec![None; count]),
            driver_version: driver.version,
        })
    }

    /// The driver's CUDA version, `major * 1000 + minor * 10` (13000 for CUDA 13.0).
    pub fn driver_version(&self) -> i32 {
        self.driver_version
    }

    /// Device `ordinal` as the concrete CUDA device.
    pub fn cuda_device(&self, ordinal: usize) -> Result<Arc<CudaDevice>> {
        let mut devices = lock(&self.devices);
        let count = devices.len();
        let slot = devices.get_mut(ordinal).ok_or(Error::NoSuchDevice {
            backend: BackendKind::Cuda,
            ordinal,
            count,
        })?;
        if let Some(device) = slot {
            return Ok(device.clone());
        }
        let device = Arc::new(CudaDevice::open(ordinal)?);
        *slot = Some(device.clone());
        Ok(device)
    }

    fn check_ordinal(&self, ordinal: usize) -> Result<()> {
        let count = self.device_count();
        if ordinal < count {
            Ok(())
        } else {
            Err(Error::NoSuchDevice {
                backend: BackendKind::Cuda,
                ordinal,
                count,
            })
        }
    }
}

impl Backend for CudaBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Cuda
    }

    fn device_count(&self) -> usize {
        lock(&self.devices).len()
    }

    fn device(&self, ordinal: usize) -> Result<Arc<dyn Device>> {
        Ok(self.cuda_device(ordinal)?)
    }

    fn can_access_peer(&self, from: usize, to: usize) -> Result<bool> {
        self.check_ordinal(from)?;
        self.check_ordinal(to)?;
        if from == to {
            return Ok(true);
        }
        let mut can = 0;
        // SAFETY: a valid out-pointer and device handles.
        check("cuDeviceCanAccessPeer", unsafe {
            sys::cuDeviceCanAccessPeer(&mut can, device_handle(from)?, device_handle(to)?)
        })?;
        Ok(can != 0)
    }

    fn enable_peer_access(&self, from: usize, to: usize) -> Result<()> {
        self.check_ordinal(from)?;
        self.check_ordinal(to)?;
        if from == to {
            return Ok(());
        }
        let accessor = self.cuda_device(from)?;
        let owner = self.cuda_device(to)?;
        accessor.make_current()?;
        // SAFETY: both contexts are retained; flags must be 0.
        match unsafe { sys::cuCtxEnablePeerAccess(owner.raw_context(), 0) } {
            CUresult::CUDA_SUCCESS | CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED => Ok(()),
            r => check("cuCtxEnablePeerAccess", r),
        }
    }
}
