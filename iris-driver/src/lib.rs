//! The device layer of iris: what the runtime drives, and the only crate that calls GPU
//! runtimes.
//!
//! - [`device`]: the [`Backend`], [`Device`], [`Stream`], [`Event`] and [`Module`] traits
//!   everything above is written against, and what a device is ([`DeviceInfo`]);
//! - [`cuda`], [`hip`], [`cpu`]: their implementations. CUDA's driver API and HIP's
//!   runtime are loaded when the backend is opened (`cudarc`'s and `cubecl-hip-sys`'s
//!   bindings are the raw layer; each vendor's `driver`/`runtime` file turns their results
//!   into [`Error`]s), so one binary runs on NVIDIA, AMD and the CPU;
//! - [`open`], [`open_default`]: a backend by kind or from `IRIS_BACKEND`;
//! - [`error`]: the runtime's one error type, defined here at the bottom so that every
//!   layer above returns it; [`kind`]: [`BackendKind`], a leaf;
//! - [`sync`]: poison-tolerant locks and bounded waits, for the layers above too.
//!
//! Every call into a GPU runtime and every `unsafe` device call lives in this crate;
//! `iris-host` (contexts, memory, symmetric memory, ranks) depends on it, never the other
//! way.
#![warn(missing_docs)]

pub mod cpu;
pub mod cuda;
pub mod device;
pub mod error;
pub mod gpu;
pub mod hip;
pub mod kind;
mod open;
mod runtime_loader;
pub mod shmem;
pub mod sync;
mod work_queues;

pub use device::{
    downcast, select_code_object, Backend, Device, DeviceInfo, Event, Graph, HostWord, LaunchDims,
    MemoryKind, Module, Stream, TileShape,
};
pub use error::{Error, Result};
pub use kind::BackendKind;
pub use open::{open, open_default};
