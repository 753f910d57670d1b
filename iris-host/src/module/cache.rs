//! The per-device cache of loaded modules.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use iris_device::abi::KernelUnit;
use once_cell::sync::OnceCell;

use crate::backend::{Device, Module};
use crate::error::Result;
use crate::sync::lock;

/// A unit is identified by its id and its address (two units that share an id by mistake
/// never share a module).
type Key = (&'static str, usize);

/// A unit's module, loaded once.
type Entry = Arc<OnceCell<Arc<dyn Module>>>;

/// Loaded modules of one device, by kernel unit. Loading happens once per unit, on first
/// use; concurrent first users wait for the one load, other units load in parallel.
#[derive(Default)]
pub struct ModuleCache {
    entries: Mutex<HashMap<Key, Entry>>,
}

impl ModuleCache {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// The module of `unit` on `device`, loading it on first use. A failed load is not
    /// cached: the next call tries again.
    pub fn get_or_load(
        &self,
        device: &dyn Device,
        unit: &'static KernelUnit,
    ) -> Result<Arc<dyn Module>> {
        let key = (unit.id, unit as *const KernelUnit as usize);
        let cell = Arc::clone(lock(&self.entries).entry(key).or_default());
        cell.get_or_try_init(|| {
            let info = device.info();
            let _span = tracing::info_span!(
                "load",
                unit = unit.id,
                backend = info.backend.name(),
                device = info.ordinal,
                target = %info.target,
            )
            .entered();
            device.load_module(unit).map(Arc::from)
        })
        .cloned()
    }

    /// How many units are loaded.
    pub fn len(&self) -> usize {
        lock(&self.entries)
            .values()
            .filter(|c| c.get().is_some())
            .count()
    }

    /// Whether no unit is loaded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl std::fmt::Debug for ModuleCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModuleCache")
            .field("loaded", &self.len())
            .finish()
    }
}
