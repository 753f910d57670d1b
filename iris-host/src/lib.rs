//! The iris runtime: backends (CUDA, HIP, CPU), modules, launch, memory, symmetric memory
//! and ranks.
//!
//! A program runs ranks with [`World::threads`] (ranks as threads of one process) or
//! [`World::from_env`] (this process as one rank of a job started by `iris-run -n N`,
//! torchrun, Open MPI or Slurm); each rank gets an [`Iris`] context with which it
//! allocates [`Buffer`]s and [`SymmetricBuffer`]s (from the heap, per-allocation IPC, or
//! adopted external memory: [`ProviderKind`]) and launches kernels (through the typed
//! `launch` function `#[iris::kernel]` generates, which builds [`KernelArgs`] and calls
//! [`Iris::launch`]). The `iris-run` binary (`src/bin/iris-run/`) starts ranks as
//! processes.
#![warn(missing_docs)]

pub mod config;
mod context;
mod event;
pub mod launch;
pub mod memory;
pub mod module;
mod pod;
pub mod rank;
mod streams;
pub mod symmetric;
pub mod trace;
pub mod transport;
pub mod world;

pub use context::{Iris, TraceSpan};
pub use event::Event;
pub use iris_driver as driver;
pub use iris_driver::{BackendKind, DeviceInfo, Error, Result};
pub use launch::{
    ConstI16, ConstI32, ConstI64, ConstI8, ConstIsize, ConstU16, ConstU32, ConstU64, ConstU8,
    ConstUsize, KernelArgs, LaunchConfig,
};
pub use memory::{AsDevicePtr, Buffer, DevicePtr, Pod, TILE_MAP_WORDS};
pub use rank::RankCore;
pub use streams::{CapturedGraph, StreamRef, SyncFork};
pub use symmetric::{
    ProviderKind, ShmemBootstrap, ShmemEngine, ShmemProvider, SymmetricAddressMap, SymmetricBuffer,
    SymmetricProvider,
};
pub use transport::{rank_env_from_process, RankEnv};
pub use world::World;
