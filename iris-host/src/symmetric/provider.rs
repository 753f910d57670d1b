//! The symmetric-memory provider trait, and the providers a rank can choose from.

use std::fmt;

use super::SymmetricAddressMap;
use iris_driver::Result;

/// What one rank asks of a collective symmetric allocation. Every rank of the world must
/// ask for the same thing, in the same order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AllocationRequest {
    /// Bytes of each rank's copy.
    pub bytes: usize,
    /// Alignment of each copy (a power of two).
    pub align: usize,
    /// The element type's name, for the symmetry check and messages.
    pub type_name: &'static str,
}

/// The providers of symmetric memory every [`Iris`](crate::Iris) context has, chosen per
/// allocation with [`Iris::symmetric_with`](crate::Iris::symmetric_with) (or for the
/// whole world with [`World::provider`](crate::World::provider)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ProviderKind {
    /// One heap per rank, exported once, sub-allocated at the same offset on every rank
    /// (ROCm Iris's model). Allocation is one small collective; the heap's size is fixed
    /// when the world starts ([`World::heap_bytes`](crate::World::heap_bytes)).
    #[default]
    Heap,
    /// Each allocation exported, exchanged and mapped on its own (PyTorch symmetric
    /// memory's default backend): no size limit beyond the device's memory, one
    /// exchange of descriptors per allocation.
    Ipc,
    /// Memory another system allocated and already exchanged (a PyTorch symmetric
    /// tensor's `buffer_ptrs`), adopted with
    /// [`Iris::adopt_external`](crate::Iris::adopt_external); it allocates nothing.
    External,
    /// A SHMEM library's symmetric heap: NVSHMEM on `cuda`, rocSHMEM on `hip`, loaded at
    /// run time ([`ShmemProvider`](crate::ShmemProvider)). The engine owns the bootstrap
    /// and the network, so this is the provider for worlds beyond one node; peers it
    /// cannot address directly are outside each allocation's reachable mask. One rank
    /// per process; allocation and free are collective.
    Shmem,
}

impl ProviderKind {
    /// Every provider.
    pub const ALL: [ProviderKind; 4] = [
        ProviderKind::Heap,
        ProviderKind::Ipc,
        ProviderKind::External,
        ProviderKind::Shmem,
    ];

    /// Its name in messages: `heap`, `ipc`, `external`, `shmem`.
    pub fn name(self) -> &'static str {
        match self {
            ProviderKind::Heap => "heap",
            ProviderKind::Ipc => "ipc",
            ProviderKind::External => "external",
            ProviderKind::Shmem => "shmem",
        }
    }
}

impl fmt::Display for ProviderKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

/// A source of symmetric memory: allocations every rank holds a copy of, with a table
/// of every rank's copy.
///
/// `allocate` is collective: every rank of the world calls it with the same request, in
/// the same order, and gets a map of the same allocation. A provider only hands out maps
/// for memory it allocated (or adopted) itself: [`map_of`](SymmetricProvider::map_of)
/// any other address is an [`Error::NotSymmetric`](crate::Error::NotSymmetric), never a
/// collective call on demand (a table derived on demand would need every rank to take
/// part, and would hang the ranks that did not ask).
pub trait SymmetricProvider: Send + Sync {
    /// A short name for messages (`heap`, `ipc`, `external`).
    fn name(&self) -> &'static str;

    /// Allocates one symmetric allocation (collective) and returns this rank's map of it.
    fn allocate(&self, request: &AllocationRequest) -> Result<SymmetricAddressMap>;

    /// The map of the live allocation of this provider that contains device address
    /// `addr` (local: no other rank takes part). An error for any address it did not
    /// allocate.
    fn map_of(&self, addr: u64) -> Result<SymmetricAddressMap>;

    /// Releases this rank's copy of an allocation made by this provider, and its table
    /// (local: the other ranks release theirs on their own). A map this provider did not
    /// hand out is an error.
    fn free(&self, map: &SymmetricAddressMap) -> Result<()>;
}
