//! What the ranks of one world share: the backend, every rank's heap and reachability,
//! the collective they meet at, the timeout.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::context::RankSetup;
use crate::module::DeviceSlot;
use crate::rank::{RankPlace, WorldAbort};
use crate::symmetric::{PeerMask, ProviderKind, RankHeap};
use crate::transport::Collective;
use iris_driver::Backend;
use iris_driver::{Error, Result};

/// Heap memory this process allocated or mapped, released when the world ends.
pub(crate) struct SharedHeap {
    /// The device it lives on.
    pub device: Arc<DeviceSlot>,
    /// Its address.
    pub addr: u64,
    /// Made by `alloc_exportable` or `import_fd` (released with `free_shared`), rather
    /// than `alloc`.
    pub shared: bool,
}

/// The state every rank of a world (in this process) holds a reference to. Dropped after
/// every rank has finished; releases the heaps then.
pub(crate) struct WorldShared {
    pub size: usize,
    pub timeout: Duration,
    pub collective: Arc<dyn Collective>,
    /// Kept open for as long as any rank runs.
    _backend: Arc<dyn Backend>,
    /// Every rank's heap as mapped in this process.
    pub heaps: Arc<[RankHeap]>,
    /// For each rank this process runs: the ranks whose memory its device can reach.
    pub reachable: BTreeMap<usize, PeerMask>,
    /// The provider `Iris::symmetric` uses.
    pub provider: ProviderKind,
    /// Whether the ranks are processes (one in this process) rather than threads.
    pub processes: bool,
    release: Vec<SharedHeap>,
    /// Set when work that never finished may still touch device memory: such memory is
    /// leaked rather than freed under it.
    leak: Arc<AtomicBool>,
    /// Raised when a rank of this process fails: iris's device waits on every rank of the
    /// process give up.
    pub abort: Arc<WorldAbort>,
    /// Where the ranks write their traces, if tracing (set after the layout).
    pub trace: Option<std::path::PathBuf>,
    /// Whether every rank gets a sync stream (`World::sync_stream`; set after the layout).
    pub sync_stream: bool,
}

/// How a world's ranks are laid out, for [`WorldShared::new`].
pub(crate) struct WorldLayout {
    pub timeout: Duration,
    pub collective: Arc<dyn Collective>,
    pub backend: Arc<dyn Backend>,
    pub heaps: Arc<[RankHeap]>,
    pub reachable: BTreeMap<usize, PeerMask>,
    pub provider: ProviderKind,
    pub processes: bool,
    pub release: Vec<SharedHeap>,
}

impl WorldShared {
    pub(crate) fn new(layout: WorldLayout) -> Self {
        Self {
            trace: None,
            sync_stream: false,
            size: layout.heaps.len(),
            timeout: layout.timeout,
            collective: layout.collective,
            _backend: layout.backend,
            heaps: layout.heaps,
            reachable: layout.reachable,
            provider: layout.provider,
            processes: layout.processes,
            release: layout.release,
            leak: Arc::new(AtomicBool::new(false)),
            abort: Arc::new(WorldAbort::default()),
        }
    }

    /// What the context of rank `rank` is made from.
    pub(crate) fn rank_setup(self: &Arc<Self>, rank: usize) -> Result<RankSetup> {
        let heap = self.heaps.get(rank).ok_or_else(|| {
            Error::InvalidConfig(format!("rank {rank} is outside a world of {}", self.size))
        })?;
        let reachable = self
            .reachable
            .get(&rank)
            .cloned()
            .unwrap_or_else(|| PeerMask::from_fn(self.size, |r| r == rank));
        Ok(RankSetup {
            place: RankPlace {
                rank,
                world_size: self.size,
                processes: self.processes,
                timeout: self.timeout,
                device: Arc::clone(&heap.device),
                collective: Arc::clone(&self.collective),
                reachable,
                leaks: Arc::clone(&self.leak),
                abort: Arc::clone(&self.abort),
                sync_stream: self.sync_stream,
            },
            heaps: Arc::clone(&self.heaps),
            provider: self.provider,
            trace: self.trace.clone(),
            world: Arc::clone(self) as Arc<dyn std::any::Any + Send + Sync>,
        })
    }

    /// Whether memory must be leaked.
    pub(crate) fn leaks(&self) -> bool {
        self.leak.load(Ordering::SeqCst)
    }
}

/// Releases heap memory (on failure paths before a world exists, and when it ends).
pub(crate) fn release_heaps(heaps: &[SharedHeap]) {
    for heap in heaps {
        let device = heap.device.device();
        // SAFETY: every rank has finished and synchronized its stream (or nothing has
        // seen the memory yet).
        let released = unsafe {
            if heap.shared {
                device.free_shared(heap.addr)
            } else {
                device.free(heap.addr)
            }
        };
        if let Err(err) = released {
            tracing::warn!(%err, "releasing a symmetric heap");
        }
    }
}

impl Drop for WorldShared {
    fn drop(&mut self) {
        if self.leaks() {
            tracing::warn!(
                "leaking the symmetric heaps and the abort word: device work did not finish"
            );
            return;
        }
        if let Some(heap) = self.heaps.first() {
            // SAFETY: every rank of this process has finished its work.
            unsafe { self.abort.release(heap.device.device()) };
        }
        release_heaps(&self.release);
    }
}
