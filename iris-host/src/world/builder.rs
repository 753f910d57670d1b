//! `World`: run a closure as every rank of a world of threads.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::Duration;

use super::WorldShared;
use crate::backend::{self, Backend, BackendKind, MemoryKind};
use crate::config::timeout_from_env;
use crate::context::Iris;
use crate::error::{Error, Result};
use crate::module::DeviceSlot;
use crate::symmetric::{PeerMask, RankHeap};

/// Bytes of each rank's symmetric heap unless [`World::heap_bytes`] says otherwise.
pub const DEFAULT_HEAP_BYTES: usize = 256 << 20;

/// A world of ranks that run as threads of this process, spread over the devices of one
/// backend (rank `r` on device `r % device_count`; several ranks may share a device).
///
/// ```ignore
/// let sums = World::threads(4).heap_bytes(1 << 20).run(|iris| {
///     let buf = iris.symmetric_zeros::<f32>(1024)?;
///     iris.barrier()?;
///     Ok(iris.rank())
/// })?;
/// ```
#[derive(Clone, Debug)]
pub struct World {
    ranks: usize,
    heap_bytes: usize,
    backend: Option<BackendKind>,
    timeout: Option<Duration>,
}

impl World {
    /// A world of `ranks` ranks, one thread each.
    pub fn threads(ranks: usize) -> Self {
        Self {
            ranks,
            heap_bytes: DEFAULT_HEAP_BYTES,
            backend: None,
            timeout: None,
        }
    }

    /// Bytes of each rank's symmetric heap.
    pub fn heap_bytes(mut self, bytes: usize) -> Self {
        self.heap_bytes = bytes;
        self
    }

    /// The backend to run on (default: `IRIS_BACKEND`, or the first present of cuda,
    /// hip, cpu).
    pub fn backend(mut self, kind: BackendKind) -> Self {
        self.backend = Some(kind);
        self
    }

    /// The bound on every wait (default: `IRIS_TIMEOUT` seconds, or 60 s).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Runs `f` once per rank, each on its own thread with its own [`Iris`], and returns
    /// the ranks' results in rank order.
    ///
    /// If a rank returns an error or panics, ranks blocked in a collective wake with an
    /// error, and `run` returns [`Error::RankFailed`] or [`Error::RankPanicked`] naming
    /// the first rank that failed on its own account.
    pub fn run<R, F>(self, f: F) -> Result<Vec<R>>
    where
        R: Send,
        F: Fn(&Iris) -> Result<R> + Sync,
    {
        if self.ranks == 0 {
            return Err(Error::InvalidConfig(
                "a world needs at least one rank".into(),
            ));
        }
        let timeout = match self.timeout {
            Some(t) => t,
            None => timeout_from_env()?,
        };
        let backend = match self.backend {
            Some(kind) => backend::open(kind)?,
            None => backend::open_default()?,
        };
        let shared = Arc::new(self.setup(timeout, backend)?);
        let results: Vec<Result<R>> = std::thread::scope(|s| {
            let mut handles = Vec::with_capacity(self.ranks);
            for rank in 0..self.ranks {
                let (shared, f) = (&shared, &f);
                let spawned = std::thread::Builder::new()
                    .name(format!("iris-rank-{rank}"))
                    .spawn_scoped(s, move || run_rank(rank, shared, f));
                match spawned {
                    Ok(handle) => handles.push(Ok(handle)),
                    Err(source) => {
                        shared
                            .rendezvous
                            .poison(rank, "could not start its thread".into());
                        shared.rendezvous.depart(rank);
                        handles.push(Err(Error::Io {
                            what: format!("starting the thread of rank {rank}"),
                            source,
                        }));
                    }
                }
            }
            handles
                .into_iter()
                .enumerate()
                .map(|(rank, h)| {
                    h.and_then(|h| {
                        h.join().unwrap_or_else(|_| {
                            Err(Error::RankPanicked {
                                rank,
                                message: "the rank's thread panicked".into(),
                            })
                        })
                    })
                })
                .collect()
        });
        drop(shared);
        collect(results)
    }

    fn setup(&self, timeout: Duration, backend: Arc<dyn Backend>) -> Result<WorldShared> {
        let _span =
            tracing::info_span!("world_setup", ranks = self.ranks, backend = %backend.kind())
                .entered();
        let count = backend.device_count();
        if count == 0 {
            return Err(Error::BackendUnavailable {
                kind: backend.kind(),
                reason: "it found no device".into(),
            });
        }
        let used = count.min(self.ranks);
        let slots: Vec<Arc<DeviceSlot>> = (0..used)
            .map(|d| backend.device(d).map(|dev| Arc::new(DeviceSlot::new(dev))))
            .collect::<Result<_>>()?;
        let mut access = vec![vec![false; used]; used];
        for (a, row) in access.iter_mut().enumerate() {
            for (b, can) in row.iter_mut().enumerate() {
                *can = a == b || backend.can_access_peer(a, b)?;
                if *can && a != b {
                    backend.enable_peer_access(a, b)?;
                }
            }
        }
        let device_of = |rank: usize| rank % used;
        let mut heaps: Vec<RankHeap> = Vec::with_capacity(self.ranks);
        for rank in 0..self.ranks {
            let slot = &slots[device_of(rank)];
            match slot
                .device()
                .alloc(self.heap_bytes.max(1), MemoryKind::Symmetric)
            {
                Ok(base) => heaps.push(RankHeap {
                    device: Arc::clone(slot),
                    base,
                    bytes: self.heap_bytes,
                }),
                Err(err) => {
                    for heap in &heaps {
                        // SAFETY: nothing has seen these heaps yet.
                        let _ = unsafe { heap.device.device().free(heap.base) };
                    }
                    return Err(err);
                }
            }
        }
        let reachable = (0..self.ranks)
            .map(|r| PeerMask::from_fn(self.ranks, |p| access[device_of(r)][device_of(p)]))
            .collect();
        Ok(WorldShared::new(timeout, backend, heaps.into(), reachable))
    }
}

fn run_rank<R, F>(rank: usize, shared: &Arc<WorldShared>, f: &F) -> Result<R>
where
    F: Fn(&Iris) -> Result<R>,
{
    let _span = tracing::info_span!("rank", rank).entered();
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let iris = Iris::new(rank, Arc::clone(shared))?;
        f(&iris)
    }));
    let result = match outcome {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(err)) => {
            if !err.is_secondary() {
                shared.rendezvous.poison(rank, format!("failed: {err}"));
            }
            Err(err)
        }
        Err(panic) => {
            let message = crate::error::panic_message(&*panic);
            shared
                .rendezvous
                .poison(rank, format!("panicked: {message}"));
            Err(Error::RankPanicked { rank, message })
        }
    };
    shared.rendezvous.depart(rank);
    result
}

/// The ranks' values, or the error of the first rank that failed on its own account.
fn collect<R>(results: Vec<Result<R>>) -> Result<Vec<R>> {
    if results.iter().all(Result::is_ok) {
        return Ok(results.into_iter().filter_map(Result::ok).collect());
    }
    let mut errors: Vec<(usize, Error)> = results
        .into_iter()
        .enumerate()
        .filter_map(|(rank, r)| r.err().map(|e| (rank, e)))
        .collect();
    let pick = errors
        .iter()
        .position(|(_, e)| !e.is_secondary())
        .unwrap_or(0);
    let (rank, err) = errors.swap_remove(pick);
    Err(match err {
        Error::RankPanicked { .. } | Error::RankFailed { .. } => err,
        other => Error::RankFailed {
            rank,
            source: Box::new(other),
        },
    })
}
