//! Modules: code objects loaded lazily, once per (kernel unit, device), and cached.

mod cache;
mod device_slot;

pub use cache::{ModuleCache, ModuleRef};
pub use device_slot::DeviceSlot;
