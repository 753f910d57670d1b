//! The iris runtime: backends (CUDA, HIP, CPU), modules, launch, memory, symmetric memory
//! and ranks.
//!
//! A program runs ranks with [`World::threads`]; each rank gets an [`Iris`] context with
//! which it allocates [`Buffer`]s and [`SymmetricBuffer`]s and launches kernels (through
//! the typed `launch` function `#[iris::kernel]` generates, which builds [`KernelArgs`]
//! and calls [`Iris::launch`]).
#![warn(missing_docs)]

pub mod backend;
pub mod config;
mod context;
pub mod error;
mod event;
pub mod launch;
pub mod memory;
pub mod module;
pub mod symmetric;
mod sync;
pub mod world;

pub use backend::{BackendKind, DeviceInfo};
pub use context::Iris;
pub use error::{Error, Result};
pub use event::Event;
pub use launch::{KernelArgs, LaunchConfig};
pub use memory::{AsDevicePtr, Buffer, DevicePtr, Pod};
pub use symmetric::{SymmetricAddressMap, SymmetricBuffer, SymmetricProvider};
pub use world::World;
