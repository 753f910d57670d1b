//! The per-device cache of loaded modules.

use std::collections::HashMap;
use std::ops::Deref;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use iris_device::abi::KernelUnit;
use once_cell::sync::OnceCell;

use iris_driver::sync::lock;
use iris_driver::Result;
use iris_driver::{Device, Module};

/// A unit is identified by its address (two units that share an id by mistake never share
/// a module; a unit is a `static`, so its address never changes).
type Key = usize;

/// A unit's module, loaded once.
type Entry = Arc<OnceCell<Arc<dyn Module>>>;

/// Units whose modules a launch finds without taking a lock.
const HOT_SLOTS: usize = 32;

/// A loaded module published for lock-free lookup: `module` is set before `unit` is
/// stored, and neither changes afterwards.
#[derive(Default)]
struct HotSlot {
    unit: AtomicUsize,
    module: OnceLock<Arc<dyn Module>>,
}

/// Loaded modules of one device, by kernel unit. Loading happens once per unit, on first
/// use; concurrent first users wait for the one load, other units load in parallel.
///
/// The first 32 units loaded are also published in a small table that a launch
/// reads without locking or allocating; later units are found through a locked map.
#[derive(Default)]
pub struct ModuleCache {
    hot: [HotSlot; HOT_SLOTS],
    entries: Mutex<HashMap<Key, Entry>>,
}

/// A module found in a [`ModuleCache`]: borrowed from its lock-free table, or shared.
pub enum ModuleRef<'a> {
    /// Borrowed from the cache, which keeps it loaded as long as it lives.
    Cached(&'a (dyn Module + 'static)),
    /// Shared with the cache.
    Shared(Arc<dyn Module>),
}

impl Deref for ModuleRef<'_> {
    type Target = dyn Module;

    fn deref(&self) -> &Self::Target {
        match self {
            ModuleRef::Cached(module) => *module,
            ModuleRef::Shared(module) => &**module,
        }
    }
}

fn key(unit: &'static KernelUnit) -> Key {
    unit as *const KernelUnit as usize
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
        if let Some(module) = self.hot(key(unit)) {
            return Ok(Arc::clone(module));
        }
        self.load(device, unit)
    }

    /// The module of `unit` on `device`, as [`get_or_load`](ModuleCache::get_or_load),
    /// borrowed without locking or counting references once the unit is loaded (the
    /// launch path).
    #[inline]
    pub fn get_or_load_ref(
        &self,
        device: &dyn Device,
        unit: &'static KernelUnit,
    ) -> Result<ModuleRef<'_>> {
        match self.hot(key(unit)) {
            Some(module) => Ok(ModuleRef::Cached(&**module)),
            None => self.load(device, unit).map(ModuleRef::Shared),
        }
    }

    /// The published module of the unit at `key`, if any.
    #[inline]
    fn hot(&self, key: Key) -> Option<&Arc<dyn Module>> {
        for slot in &self.hot {
            match slot.unit.load(Ordering::Acquire) {
                0 => return None,
                unit if unit == key => return slot.module.get(),
                _ => {}
            }
        }
        None
    }

    fn load(&self, device: &dyn Device, unit: &'static KernelUnit) -> Result<Arc<dyn Module>> {
        let cell = Arc::clone(lock(&self.entries).entry(key(unit)).or_default());
        let module = cell
            .get_or_try_init(|| {
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
            })?
            .clone();
        self.publish(key(unit), &module);
        Ok(module)
    }

    /// Publishes a loaded module in the first free hot slot, unless it is there already
    /// or the table is full. Slots fill in order, under the map's lock.
    fn publish(&self, key: Key, module: &Arc<dyn Module>) {
        let _guard = lock(&self.entries);
        for slot in &self.hot {
            match slot.unit.load(Ordering::Acquire) {
                0 => {
                    // Only publishers write slots, one at a time, and a slot whose unit is
                    // still 0 has never been given a module, so this `set` succeeds.
                    if slot.module.set(Arc::clone(module)).is_ok() {
                        slot.unit.store(key, Ordering::Release);
                    }
                    return;
                }
                unit if unit == key => return,
                _ => {}
            }
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use iris_driver::{self, BackendKind};

    static EMPTY: KernelUnit = KernelUnit {
        id: "cache_tests::empty",
        kernels: &[],
        left_out: &[],
        code_objects: &[],
    };

    #[test]
    fn a_failed_load_is_neither_cached_nor_published() {
        let Ok(device) = iris_driver::open(BackendKind::Cpu).and_then(|b| b.device(0)) else {
            return;
        };
        let cache = ModuleCache::new();
        assert!(cache.get_or_load_ref(&*device, &EMPTY).is_err());
        assert!(cache.get_or_load(&*device, &EMPTY).is_err());
        assert!(cache.is_empty());
        assert!(cache.hot(key(&EMPTY)).is_none());
    }
}
