//! `SymmetricBuffer`: one rank's handle on a symmetric allocation.

use std::fmt;
use std::marker::PhantomData;

use super::{ProviderKind, SymmetricAddressMap, SymmetricProvider};
use crate::memory::DevicePtr;
use crate::pod::{as_bytes, as_bytes_mut, zeroed_vec, Pod};
use crate::rank::RankCore;
use iris_driver::{Error, Result};

/// `len` elements of `T` that every rank of the world holds a copy of, with the table of
/// every rank's copy already in device memory. A kernel's `Symmetric<T>` parameter takes
/// it (local pointer, local base, table); launching copies nothing.
///
/// It keeps its memory and its mappings of the peers' copies alive until it is freed.
/// Dropping it (or [`free`](SymmetricBuffer::free)) returns this rank's copy to its
/// provider once the rank's queued work has finished (for adopted external memory, only
/// the table is released). Release symmetric buffers in the same order on every rank,
/// after the peers are done with them (a [`barrier`](crate::Iris::barrier)).
pub struct SymmetricBuffer<'ctx, T: Pod> {
    core: &'ctx RankCore,
    source: &'ctx dyn SymmetricProvider,
    map: SymmetricAddressMap,
    len: usize,
    provider: ProviderKind,
    live: bool,
    _elem: PhantomData<T>,
}

impl<'ctx, T: Pod> SymmetricBuffer<'ctx, T> {
    pub(crate) fn new(
        core: &'ctx RankCore,
        source: &'ctx dyn SymmetricProvider,
        map: SymmetricAddressMap,
        len: usize,
        provider: ProviderKind,
    ) -> Self {
        Self {
            core,
            source,
            map,
            len,
            provider,
            live: true,
            _elem: PhantomData,
        }
    }

    /// Number of elements of each copy.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Bytes of each copy that hold elements.
    pub fn bytes(&self) -> usize {
        self.len * std::mem::size_of::<T>()
    }

    /// The allocation's address map.
    pub fn map(&self) -> &SymmetricAddressMap {
        &self.map
    }

    /// A device pointer to this rank's copy.
    pub fn local_ptr(&self) -> DevicePtr<T> {
        DevicePtr::owned(self.map.base(), self.core.id())
    }

    /// Device address of rank `rank`'s copy.
    pub fn peer_addr(&self, rank: usize) -> Option<u64> {
        self.map.peer_base(rank)
    }

    /// The provider the memory came from.
    pub fn provider(&self) -> ProviderKind {
        self.provider
    }

    /// The id of the context that owns it.
    pub fn context_id(&self) -> u64 {
        self.core.id()
    }

    /// Overwrites this rank's copy with `data` (after the rank's queued work).
    pub fn copy_from_slice(&self, data: &[T]) -> Result<()> {
        self.check_len("SymmetricBuffer::copy_from_slice", data.len())?;
        self.core.upload(self.map.base(), as_bytes(data))
    }

    /// Copies this rank's copy into `out` (after the rank's queued work).
    pub fn copy_to_slice(&self, out: &mut [T]) -> Result<()> {
        self.check_len("SymmetricBuffer::copy_to_slice", out.len())?;
        self.core.download(self.map.base(), as_bytes_mut(out))
    }

    /// The contents of this rank's copy (after the rank's queued work).
    pub fn to_vec(&self) -> Result<Vec<T>> {
        let mut out = zeroed_vec::<T>(self.len);
        self.copy_to_slice(&mut out)?;
        Ok(out)
    }

    /// Returns this rank's copy to the provider, reporting failures that drop would only
    /// log.
    pub fn free(mut self) -> Result<()> {
        self.live = false;
        self.release()
    }

    /// Checks that a kernel launched from `core` may use it: same context, every peer's
    /// copy reachable.
    pub(crate) fn check_launchable(&self, core: &RankCore) -> Result<()> {
        core.check_owner("symmetric buffer", self.core.id())?;
        if let Some(&peer) = self.map.reachable().missing().first() {
            return Err(Error::UnreachablePeer {
                rank: core.rank(),
                peer,
            });
        }
        Ok(())
    }

    /// Gives the allocation back to its provider once this rank's queued work finished;
    /// leaks it (and says so) if that work does not finish.
    fn release(&self) -> Result<()> {
        if let Err(err) = self.core.wait_stream() {
            self.core.mark_leak();
            return Err(err);
        }
        self.source
            .free(&self.map)
            .map_err(|e| e.on_rank(self.core.rank()))
    }

    fn check_len(&self, what: &'static str, got: usize) -> Result<()> {
        if got == self.len {
            Ok(())
        } else {
            Err(Error::LengthMismatch {
                what,
                expected: self.len,
                got,
            })
        }
    }
}

// No `AsDevicePtr` for `SymmetricBuffer`: a kernel's raw-pointer parameter takes local
// buffers only, so passing a symmetric buffer where a local one is expected (or the reverse)
// does not compile. Pass `buffer.local_ptr()` to use this rank's copy as a plain pointer.

impl<T: Pod> Drop for SymmetricBuffer<'_, T> {
    fn drop(&mut self) {
        if self.live {
            if let Err(err) = self.release() {
                tracing::warn!(rank = self.core.rank(), %err, "freeing a symmetric buffer");
            }
        }
    }
}

impl<T: Pod> fmt::Debug for SymmetricBuffer<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SymmetricBuffer")
            .field("elem", &std::any::type_name::<T>())
            .field("len", &self.len)
            .field("provider", &self.provider)
            .field("map", &self.map)
            .field("context", &self.core.id())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::symmetric::PeerMask;
    use crate::World;
    use iris_driver::BackendKind;

    #[test]
    fn a_peer_the_rank_cannot_reach_is_a_launch_error() {
        World::threads(2)
            .backend(BackendKind::Cpu)
            .heap_bytes(1 << 16)
            .run(|iris| {
                let real = iris.symmetric::<f32>(8)?;
                let map = SymmetricAddressMap::new(
                    iris.rank(),
                    2,
                    real.map().base(),
                    real.map().bytes(),
                    real.map().peer_bases().to_vec(),
                    real.map().table(),
                    PeerMask::from_fn(2, |r| r == iris.rank()),
                )?;
                let partial = SymmetricBuffer::<f32>::new(
                    iris.core(),
                    iris.symmetric_provider(),
                    map,
                    8,
                    ProviderKind::Heap,
                );
                let err = partial.check_launchable(iris.core()).unwrap_err();
                assert!(
                    matches!(err, Error::UnreachablePeer { rank, peer } if rank == iris.rank() && peer == 1 - rank),
                    "{err}"
                );
                let mut args = iris.args(&EMPTY_UNIT, 0);
                assert!(args.symmetric(&partial).is_err());
                // the partial view shares the real allocation: only one may free it
                std::mem::forget(partial);
                real.check_launchable(iris.core())
            })
            .unwrap();
    }

    static EMPTY_UNIT: iris_device::abi::KernelUnit = iris_device::abi::KernelUnit {
        id: "empty",
        kernels: &[],
        left_out: &[],
        code_objects: &[],
    };
}
