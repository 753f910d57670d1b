//! Symmetric memory: allocations every rank holds a copy of, each with a table of every
//! rank's copy, from a [`SymmetricProvider`]: one heap per rank sub-allocated
//! ([`HeapProvider`]), one exported allocation each ([`IpcProvider`]), or memory another
//! system set up ([`ExternalProvider`]), or a SHMEM library's heap ([`ShmemProvider`]).
//! [`ProviderKind`] names them.

mod address_map;
mod buffer;
mod external_provider;
mod heap_allocator;
mod heap_provider;
mod ipc_provider;
pub(crate) mod peer_table;
mod provider;
mod shmem;

pub use crate::rank::PeerMask;
pub(crate) use address_map::live_map_at;
pub use address_map::SymmetricAddressMap;
pub use buffer::SymmetricBuffer;
pub use external_provider::ExternalProvider;
pub use heap_allocator::{HeapAllocator, HeapError, HEAP_ALIGN};
pub use heap_provider::{HeapProvider, RankHeap};
pub use ipc_provider::IpcProvider;
pub use provider::{AllocationRequest, ProviderKind, SymmetricProvider};
pub use shmem::{LibrarySearch, ShmemBootstrap, ShmemEngine, ShmemProvider};
