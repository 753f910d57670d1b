//! The GPU device written once: streams, events, modules, memory, launches and waits over
//! a per-vendor function table ([`GpuApi`]), which [`cuda`](crate::cuda) (the driver API)
//! and [`hip`](crate::hip) (the HIP runtime) implement. What differs between the vendors
//! stays in their folders: opening a device and describing it, which code object a device
//! loads and how, and memory shared between processes.

mod api;
mod device;
mod module;
mod shared_carveout;
mod stream;
mod wait;

pub use api::{GpuApi, Query};

/// Keeps [`GpuApi`] implemented by this crate's vendors only.
pub trait Sealed {}
pub use device::GpuDevice;
pub use module::GpuModule;
pub use stream::{GpuEvent, GpuGraph, GpuStream};
