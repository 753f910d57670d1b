//! A device together with its module cache, shared by the ranks that run on it and by
//! every world of the process.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use iris_device::abi::{KernelUnit, KERNEL_UNITS};

use super::{ModuleCache, ModuleRef};
use iris_driver::sync::lock;
use iris_driver::Result;
use iris_driver::{BackendKind, Device, DeviceInfo, Module};

/// The process's slots, one per device: a unit is loaded (on CUDA: JIT-compiled from PTX)
/// once per device and process, not once per world.
static SLOTS: Mutex<Vec<(DeviceKey, Arc<DeviceSlot>)>> = Mutex::new(Vec::new());

/// Threads that preload units at once, at most.
const PRELOAD_THREADS: usize = 8;

/// A device of the process: its backend and ordinal.
type DeviceKey = (BackendKind, usize);

/// One device of a world and the modules loaded on it.
pub struct DeviceSlot {
    device: Arc<dyn Device>,
    modules: ModuleCache,
    /// Set once every unit of the program was loaded (see [`preload`](Self::preload)).
    preloaded: OnceLock<()>,
}

impl DeviceSlot {
    /// Wraps `device` with an empty module cache.
    pub fn new(device: Arc<dyn Device>) -> Self {
        Self {
            device,
            modules: ModuleCache::new(),
            preloaded: OnceLock::new(),
        }
    }

    /// The process's slot of `device` (its backend's device of that ordinal), made on first
    /// use: every world of the process shares its loaded modules.
    pub fn of(device: Arc<dyn Device>) -> Arc<DeviceSlot> {
        let key = (device.info().backend, device.info().ordinal);
        let mut slots = lock(&SLOTS);
        if let Some((_, slot)) = slots.iter().find(|(k, _)| *k == key) {
            return Arc::clone(slot);
        }
        let slot = Arc::new(DeviceSlot::new(device));
        slots.push((key, Arc::clone(&slot)));
        slot
    }

    /// The device.
    pub fn device(&self) -> &dyn Device {
        &*self.device
    }

    /// What the device is.
    pub fn info(&self) -> &DeviceInfo {
        self.device.info()
    }

    /// Loads every kernel unit of the program ([`KERNEL_UNITS`]) on this device, once per
    /// process; the ranks on the device wait for the first to do it. A launch then never
    /// loads a module: on CUDA loading one waits for every kernel running on the device,
    /// so a rank whose first launch of a unit came while a peer's kernel waited for that
    /// rank would wait for the peer forever. A unit this device cannot load (no code object
    /// for it, more shared memory than it has) is left for its launch to report.
    pub fn preload(&self) {
        self.preloaded.get_or_init(|| {
            let start = Instant::now();
            // Several units at once: loading is mostly the driver compiling PTX (on CUDA),
            // which runs on the calling thread.
            let next = AtomicUsize::new(0);
            let loaded = AtomicUsize::new(0);
            let threads = std::thread::available_parallelism()
                .map_or(1, |n| n.get())
                .clamp(1, PRELOAD_THREADS)
                .min(KERNEL_UNITS.len().max(1));
            std::thread::scope(|s| {
                for _ in 0..threads {
                    s.spawn(|| {
                        while let Some(unit) =
                            KERNEL_UNITS.get(next.fetch_add(1, Ordering::Relaxed))
                        {
                            match self.module(unit) {
                                Ok(_) => {
                                    loaded.fetch_add(1, Ordering::Relaxed);
                                }
                                Err(err) => tracing::debug!(unit = unit.id, %err, "not preloaded"),
                            }
                        }
                    });
                }
            });
            tracing::debug!(
                loaded = loaded.load(Ordering::Relaxed),
                units = KERNEL_UNITS.len(),
                threads,
                device = self.info().ordinal,
                took = ?start.elapsed(),
                "kernel units preloaded"
            );
        });
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
