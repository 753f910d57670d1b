//! Symmetric memory: allocations every rank holds a copy of, each with a table of every
//! rank's copy, from a [`SymmetricProvider`] (first: one heap per rank, sub-allocated).

mod address_map;
mod buffer;
mod heap_allocator;
mod heap_provider;
mod peer_mask;
mod provider;

pub use address_map::SymmetricAddressMap;
pub use buffer::SymmetricBuffer;
pub use heap_allocator::{HeapAllocator, HeapError, HEAP_ALIGN};
pub use heap_provider::{HeapProvider, RankHeap};
pub use peer_mask::PeerMask;
pub use provider::{AllocationRequest, SymmetricProvider};
