//! iris: GPU kernels in Rust over symmetric memory.
//!
//! Kernels are Rust functions marked [`kernel`] (or modules marked [`kernels`]); the macro
//! compiles them for AMD GPUs, NVIDIA GPUs and the CPU at build time and generates a typed
//! launcher. At run time a [`World`] runs one rank per thread (or process), each with its own
//! [`Iris`] context; symmetric allocations ([`Iris::symmetric_zeros`] and friends) exist on
//! every rank, and kernels reach a peer's copy with [`store`], [`load`], the atomics, ...
//!
//! ```
//! use iris::prelude::*;
//! use iris::{LaunchConfig, World};
//!
//! /// Each rank writes its rank number into slot `me` of every peer's `out`.
//! #[iris::kernel]
//! pub fn announce(out: Symmetric<u32>, me: u32, world: u32) {
//!     if thread_idx_x() == 0 {
//!         for peer in 0..world {
//!             iris::store(out.add(me as usize), me, peer);
//!         }
//!     }
//! }
//!
//! # fn main() -> iris::Result<()> {
//! let gathered = World::threads(4).heap_bytes(1 << 20).run(|iris| {
//!     let out = iris.symmetric_zeros::<u32>(iris.world_size())?;
//!     let (me, world) = (iris.rank() as u32, iris.world_size() as u32);
//!     announce::launch(iris, LaunchConfig::linear(1, 32), &out, me, world)?;
//!     iris.barrier()?; // every rank's stores have landed
//!     out.to_vec()
//! })?;
//! assert!(gathered.iter().all(|v| *v == [0, 1, 2, 3]));
//! # Ok(())
//! # }
//! ```
//!
//! The device API lives in [`prelude`]; the host runtime in [`Iris`], [`World`],
//! [`Buffer`], [`SymmetricBuffer`]; the collectives in [`ccl`]; what the macro emits in
//! [`abi`]; the device layer under the runtime, for measuring devices and interoperating
//! with other libraries, in [`driver`].

// The kernel macros name this crate `::iris`, inside it too (the collectives are kernels).
extern crate self as iris;

pub use iris_device::abi;
pub use iris_device::prelude;
pub use iris_device::prelude::*;
pub use iris_macros::{device, kernel, kernels};

// The runtime's public surface, named one by one: contexts and worlds, memory, symmetric
// memory and its providers, launching, errors.
pub use iris_host::{
    rank_env_from_process, AsDevicePtr, BackendKind, Buffer, CapturedGraph, ConstI16, ConstI32,
    ConstI64, ConstI8, ConstIsize, ConstU16, ConstU32, ConstU64, ConstU8, ConstUsize, DeviceInfo,
    DevicePtr, Error, Event, Iris, KernelArgs, LaunchConfig, Pod, ProviderKind, RankCore, RankEnv,
    Result, ShmemBootstrap, ShmemEngine, StreamRef, SymmetricAddressMap, SymmetricBuffer,
    SymmetricProvider, TraceSpan, World, TILE_MAP_WORDS,
};

pub mod ccl;

/// Tracing a world to one timeline (`IRIS_TRACE=<dir>` or [`World::trace`]), and reading
/// the traces back.
pub mod trace {
    pub use iris_host::trace::{merge, op_totals, summary, OpTotal};
}

/// The device layer under the runtime: opening a backend and driving a device directly
/// (memory, streams, events, launches of loaded modules), for measuring a device or
/// working beside another library. Kernels and ranks never need it.
pub mod driver {
    pub use iris_host::driver::{
        open, open_default, Backend, BackendKind, Device, DeviceInfo, Event, Graph, LaunchDims,
        MemoryKind, Module, Stream,
    };
}

/// The README and the user guide (`docs/guide/`), compiled as doc tests: `cargo test --doc`
/// builds every Rust block of them and runs those not marked `no_run`, so the documents
/// cannot drift from the code. Nothing here is part of the crate's API.
#[cfg(doctest)]
pub mod guide {
    #[doc = include_str!("../README.md")]
    pub struct Readme;
    #[doc = include_str!("../docs/guide/01-getting-started.md")]
    pub struct GettingStarted;
    #[doc = include_str!("../docs/guide/02-kernel-language.md")]
    pub struct KernelLanguage;
    #[doc = include_str!("../docs/guide/03-memory-ranks-providers.md")]
    pub struct MemoryRanksProviders;
    #[doc = include_str!("../docs/guide/04-writing-a-collective.md")]
    pub struct WritingACollective;
    #[doc = include_str!("../docs/guide/05-collectives.md")]
    pub struct Collectives;
    #[doc = include_str!("../docs/guide/06-matrix-units.md")]
    pub struct MatrixUnits;
    #[doc = include_str!("../docs/guide/07-streams-graphs-pytorch.md")]
    pub struct StreamsGraphsPytorch;
    #[doc = include_str!("../docs/guide/08-nodes-and-shmem.md")]
    pub struct NodesAndShmem;
    #[doc = include_str!("../docs/guide/09-errors-and-debugging.md")]
    pub struct ErrorsAndDebugging;
    #[doc = include_str!("../docs/guide/10-targets-and-building.md")]
    pub struct TargetsAndBuilding;
    #[doc = include_str!("../docs/guide/README.md")]
    pub struct Contents;
}
