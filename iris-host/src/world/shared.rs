//! What the ranks of one world share: the backend, every rank's heap and reachability,
//! the rendezvous, the timeout.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::Rendezvous;
use crate::backend::Backend;
use crate::symmetric::{PeerMask, RankHeap};

/// The state every rank of a world holds a reference to. Dropped after every rank has
/// finished; frees the heaps then.
pub(crate) struct WorldShared {
    pub size: usize,
    pub timeout: Duration,
    pub rendezvous: Arc<Rendezvous>,
    /// Kept open for as long as any rank runs.
    _backend: Arc<dyn Backend>,
    pub heaps: Arc<[RankHeap]>,
    /// Per rank: the ranks whose memory its device can reach.
    pub reachable: Vec<PeerMask>,
    /// Set when work that never finished may still touch device memory: such memory is
    /// leaked rather than freed under it.
    leak: AtomicBool,
}

impl WorldShared {
    pub(crate) fn new(
        timeout: Duration,
        backend: Arc<dyn Backend>,
        heaps: Arc<[RankHeap]>,
        reachable: Vec<PeerMask>,
    ) -> Self {
        let size = heaps.len();
        Self {
            size,
            timeout,
            rendezvous: Arc::new(Rendezvous::new(size, timeout)),
            _backend: backend,
            heaps,
            reachable,
            leak: AtomicBool::new(false),
        }
    }

    /// Memory may still be in use by work that did not finish: never free it.
    pub(crate) fn mark_leak(&self) {
        self.leak.store(true, Ordering::SeqCst);
    }

    /// Whether memory must be leaked.
    pub(crate) fn leaks(&self) -> bool {
        self.leak.load(Ordering::SeqCst)
    }
}

impl Drop for WorldShared {
    fn drop(&mut self) {
        if self.leaks() {
            tracing::warn!("leaking the symmetric heaps: device work did not finish");
            return;
        }
        for heap in self.heaps.iter() {
            // SAFETY: every rank has finished and synchronized its stream.
            if let Err(err) = unsafe { heap.device.device().free(heap.base) } {
                tracing::warn!(%err, "freeing a symmetric heap");
            }
        }
    }
}
