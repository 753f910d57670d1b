//! Symmetric memory from a SHMEM library (NVSHMEM, rocSHMEM), loaded at run time: the
//! engine owns the heap, the bootstrap and the network; iris binds the per-peer pointers it
//! hands out to kernels like any other provider's.
//!
//! ```text
//! runtime.rs  starting the engine once per process (unique id over iris's rendezvous)
//! provider.rs allocations: nvshmem_malloc, nvshmem_ptr per peer, nvshmem_free
//! ```
//!
//! The engines' host libraries (finding, loading and calling them) are the driver's:
//! `iris_driver::shmem`.

mod provider;
mod runtime;

pub use iris_driver::shmem::{LibrarySearch, ShmemEngine};
pub use provider::ShmemProvider;
pub use runtime::ShmemBootstrap;
