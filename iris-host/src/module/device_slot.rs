//! A device together with its module cache, shared by the ranks that run on it.

use std::sync::Arc;

use iris_device::abi::KernelUnit;

use super::{ModuleCache, ModuleRef};
use crate::backend::{Device, DeviceInfo, Module};
use crate::error::Result;

/// One device of a world and the modules loaded on it.
pub struct DeviceSlot {
    device: Arc<dyn Device>,
    modules: ModuleCache,
}

impl DeviceSlot {
    /// Wraps `device` with an empty module cache.
    pub fn new(device: Arc<dyn Device>) -> Self {
        Self {
            device,
            modules: ModuleCache::new(),
        }
    }

    /// The device.
    pub fn device(&self) -> &dyn Device {
        &*self.device
    }

    /// What the device is.
    pub fn info(&self) -> &DeviceInfo {
        self.device.info()
    }

    /// The module of `unit` on this device, loaded on first use.
    pub fn module(&self, unit: &'static KernelUnit) -> Result<Arc<dyn Module>> {
        self.modules.get_or_load(&*self.device, unit)
    }

    /// The module of `unit` on this device, loaded on first use, borrowed without locking
    /// once loaded (the launch path).
    #[inline]
    pub fn module_ref(&self, unit: &'static KernelUnit) -> Result<ModuleRef<'_>> {
        self.modules.get_or_load_ref(&*self.device, unit)
    }

    /// The cache of loaded modules.
    pub fn modules(&self) -> &ModuleCache {
        &self.modules
    }
}

impl std::fmt::Debug for DeviceSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeviceSlot")
            .field("device", self.info())
            .field("modules", &self.modules)
            .finish()
    }
}
