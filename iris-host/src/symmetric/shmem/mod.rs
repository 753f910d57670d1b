//! Symmetric memory from a SHMEM library (NVSHMEM, rocSHMEM), loaded at run time: the
//! engine owns the heap, the bootstrap and the network; iris binds the per-peer pointers it
//! hands out to kernels like any other provider's.
//!
//! ```text
//! engine.rs   which library, its entry points and struct layouts
//! library.rs  finding and loading the host library
//! runtime.rs  starting the engine once per process (unique id over iris's rendezvous)
//! provider.rs allocations: nvshmem_malloc, nvshmem_ptr per peer, nvshmem_free
//! ```

mod engine;
mod library;
mod provider;
mod runtime;

pub use engine::ShmemEngine;
pub use library::LibrarySearch;
pub use provider::ShmemProvider;
pub use runtime::ShmemBootstrap;
