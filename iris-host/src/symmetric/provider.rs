//! The symmetric-memory provider trait.

use super::SymmetricAddressMap;
use crate::error::Result;

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

/// A source of symmetric memory: allocations every rank holds a copy of, with a table
/// of every rank's copy.
///
/// `allocate` is collective: every rank of the world calls it with the same request, in
/// the same order, and gets a map of the same allocation. A provider only hands out maps
/// for memory it allocated itself (a table derived on demand would need every rank to
/// take part, and would hang the ranks that did not ask).
pub trait SymmetricProvider: Send + Sync {
    /// A short name for messages (`heap`, `ipc`, `external`).
    fn name(&self) -> &'static str;

    /// Allocates one symmetric allocation (collective) and returns this rank's map of it.
    fn allocate(&self, request: &AllocationRequest) -> Result<SymmetricAddressMap>;

    /// Releases this rank's copy of an allocation made by this provider (local: the other
    /// ranks release theirs on their own).
    fn free(&self, map: &SymmetricAddressMap) -> Result<()>;
}
