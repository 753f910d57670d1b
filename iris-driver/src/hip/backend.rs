//! The HIP backend object: the devices the runtime reports, and peer access between them.

use std::sync::{Arc, Mutex};

use cubecl_hip_sys as hip;

use super::api::HipDevice;
use super::runtime::{check, load, set_device};
use crate::error::{Error, Result};
use crate::sync::lock;
use crate::{Backend, BackendKind, Device};

/// AMD GPUs through HIP. Devices are opened on first use and shared by every caller after
/// that.
pub struct HipBackend {
    devices: Mutex<Vec<Option<Arc<HipDevice>>>>,
    runtime_version: i32,
}

impl HipBackend {
    /// Loads the runtime and counts the devices; errors when there is no runtime or no
    /// device.
    pub(super) fn open() -> Result<HipBackend> {
        let runtime = load()?;
        let mut count = 0;
        // SAFETY: a valid out-pointer; the runtime is initialised.
        check("hipGetDeviceCount", unsafe {
            hip::hipGetDeviceCount(&mut count)
        })?;
        let count = usize::try_from(count).unwrap_or(0);
        if count == 0 {
            return Err(Error::BackendUnavailable {
                kind: BackendKind::Hip,
                reason: "the HIP runtime reports no device".into(),
            });
        }
        tracing::debug!(count, version = runtime.version, "HIP runtime loaded");
        Ok(HipBackend {
            devices: Mutex::new(vec![None; count]),
            runtime_version: runtime.version,
        })
    }

    /// The HIP runtime version (`major * 10_000_000 + minor * 100_000 + patch`).
    pub fn runtime_version(&self) -> i32 {
        self.runtime_version
    }

    /// Device `ordinal` as the concrete HIP device.
    pub fn hip_device(&self, ordinal: usize) -> Result<Arc<HipDevice>> {
        let mut devices = lock(&self.devices);
        let count = devices.len();
        let slot = devices.get_mut(ordinal).ok_or(Error::NoSuchDevice {
            backend: BackendKind::Hip,
            ordinal,
            count,
        })?;
        if let Some(device) = slot {
            return Ok(device.clone());
        }
        let device = Arc::new(HipDevice::open(ordinal)?);
        *slot = Some(device.clone());
        Ok(device)
    }

    /// `ordinal` as HIP's device id, if such a device exists.
    fn ordinal(&self, ordinal: usize) -> Result<i32> {
        let count = self.device_count();
        match i32::try_from(ordinal) {
            Ok(id) if ordinal < count => Ok(id),
            _ => Err(Error::NoSuchDevice {
                backend: BackendKind::Hip,
                ordinal,
                count,
            }),
        }
    }
}

impl Backend for HipBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Hip
    }

    fn device_count(&self) -> usize {
        lock(&self.devices).len()
    }

    fn device(&self, ordinal: usize) -> Result<Arc<dyn Device>> {
        Ok(self.hip_device(ordinal)?)
    }

    fn can_access_peer(&self, from: usize, to: usize) -> Result<bool> {
        let from = self.ordinal(from)?;
        let to = self.ordinal(to)?;
        if from == to {
            return Ok(true);
        }
        let mut can = 0;
        // SAFETY: a valid out-pointer; the runtime checks the ordinals.
        check("hipDeviceCanAccessPeer", unsafe {
            hip::hipDeviceCanAccessPeer(&mut can, from, to)
        })?;
        Ok(can != 0)
    }

    fn enable_peer_access(&self, from: usize, to: usize) -> Result<()> {
        let from = self.ordinal(from)?;
        let to = self.ordinal(to)?;
        if from == to {
            return Ok(());
        }
        set_device(from)?;
        // SAFETY: the device `from` is selected; flags must be 0.
        match unsafe { hip::hipDeviceEnablePeerAccess(to, 0) } {
            r if r == hip::hipError_t_hipSuccess
                || r == hip::hipError_t_hipErrorPeerAccessAlreadyEnabled =>
            {
                Ok(())
            }
            r => check("hipDeviceEnablePeerAccess", r),
        }
    }
}
