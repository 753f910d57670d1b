//! Streams another library owns, and graphs captured from a rank's stream.
//!
//! A rank's work (launches, copies, collectives) goes to the stream iris made for it,
//! unless [`Iris::use_stream`] lends it another library's (PyTorch's current stream, a
//! `CUstream` of your own): then iris's work is ordered with that library's, with no host
//! synchronisation between them. [`Iris::capture`] records the work a closure queues into
//! a graph ([`CapturedGraph`]) that replays it with one launch; the collectives of
//! [`iris::ccl`](../iris/ccl/index.html) count their barrier epochs on the device, so a
//! replayed collective synchronises the ranks again each time.
//!
//! While a stream captures, nothing may wait for its work or read what it will write:
//! [`Iris::synchronize`], host reads and writes of buffers and freeing memory are refused
//! with [`Error::Unsupported`](iris_driver::Error::Unsupported). Run a collective once before capturing it (its first call
//! loads its kernels, collectively, which waits). The CPU backend has neither lent
//! streams nor graphs (it keeps its own order): both are [`Error::Unsupported`] there.

use std::ffi::c_void;
use std::sync::Arc;

use iris_driver::{Event, Graph, Result};

use crate::context::Iris;

/// Another library's stream (a `CUstream` or `hipStream_t` of the rank's device), for
/// [`Iris::use_stream`].
#[derive(Clone, Copy, Debug)]
pub struct StreamRef {
    raw: *mut c_void,
}

impl StreamRef {
    /// The stream whose runtime handle is `raw` (`torch.cuda.current_stream().cuda_stream`,
    /// a `CUstream`; null is the legacy default stream).
    ///
    /// # Safety
    /// `raw` is a live stream of the device of the context it is given to, and it stays
    /// alive while that context uses it and until the work queued on it has finished.
    pub unsafe fn from_raw(raw: *mut c_void) -> Self {
        Self { raw }
    }

    /// The runtime handle.
    pub fn as_raw(&self) -> *mut c_void {
        self.raw
    }
}

/// Work captured from a rank's stream by [`Iris::capture`], replayed with
/// [`launch`](CapturedGraph::launch).
pub struct CapturedGraph<'ctx> {
    iris: &'ctx Iris,
    graph: Box<dyn Graph>,
}

impl CapturedGraph<'_> {
    /// Queues the captured work on the rank's current stream (asynchronous, like a
    /// launch). Every rank replays its own graph, the same number of times.
    pub fn launch(&self) -> Result<()> {
        self.graph
            .launch(&*self.iris.core().stream())
            .map_err(|e| e.on_rank(self.iris.rank()))
    }
}

/// Work [`Iris::fork_sync_stream`] queued on a rank's sync stream, which the rank's current
/// stream does not wait for until [`join`](SyncFork::join) (or the drop of this value).
#[must_use = "join it: until then the current stream's later work does not wait for the forked work"]
pub struct SyncFork<'ctx> {
    iris: &'ctx Iris,
    /// Recorded on the sync stream after the forked work; `None` once joined.
    end: Option<Box<dyn Event>>,
}

impl SyncFork<'_> {
    /// Orders the work queued on the rank's current stream from now on after the forked
    /// work (the host does not wait).
    pub fn join(mut self) -> Result<()> {
        self.join_now()
    }

    fn join_now(&mut self) -> Result<()> {
        match self.end.take() {
            Some(end) => self
                .iris
                .core()
                .stream()
                .wait_event(&*end)
                .map_err(|e| e.on_rank(self.iris.rank())),
            None => Ok(()),
        }
    }
}

impl Drop for SyncFork<'_> {
    /// Joins, so that no later work of the rank overtakes the forked work.
    fn drop(&mut self) {
        if let Err(err) = self.join_now() {
            tracing::warn!(rank = self.iris.rank(), "joining a sync stream: {err}");
        }
    }
}

impl Iris {
    /// Runs `work`, which queues launches and copies, with this rank's work going to its
    /// sync stream ([`World::sync_stream`](crate::World::sync_stream)), ordered after
    /// the work queued so far on its current stream; the current stream's later work does
    /// not wait for it until the returned [`SyncFork`] is joined. So short kernels other
    /// ranks wait for (a split barrier) run beside the current stream's next kernels, and
    /// their blocks start before those of kernels queued on streams of lower priority.
    /// `Ok(None)`, without calling `work`, when the rank has no sync stream.
    ///
    /// Between the fork and the join, queue on the current stream only work that waits
    /// for no other rank: the forked work may be waiting for the other ranks.
    pub fn fork_sync_stream(
        &self,
        work: impl FnOnce() -> Result<()>,
    ) -> Result<Option<SyncFork<'_>>> {
        let core = self.core();
        let Some(sync) = core.sync_stream() else {
            return Ok(None);
        };
        let rank = self.rank();
        let device = core.device();
        let start = device.create_event().map_err(|e| e.on_rank(rank))?;
        let end = device.create_event().map_err(|e| e.on_rank(rank))?;
        core.stream().record(&*start).map_err(|e| e.on_rank(rank))?;
        sync.wait_event(&*start).map_err(|e| e.on_rank(rank))?;
        let queued = {
            let _redirect = core.redirect(Arc::clone(sync));
            work()
        };
        sync.record(&*end).map_err(|e| e.on_rank(rank))?;
        let fork = SyncFork {
            iris: self,
            end: Some(end),
        };
        // When `work` failed part-way, what it queued is joined at once (the drop).
        queued.map(|()| Some(fork))
    }

    /// Whether this rank has a sync stream ([`World::sync_stream`](crate::World::sync_stream)).
    pub fn has_sync_stream(&self) -> bool {
        self.core().sync_stream().is_some()
    }

    /// Sends this rank's work to `stream` from now on, ordered after the work queued so far
    /// by an event (the host does not wait). When `stream` captures a graph, the graph
    /// holds only what is queued on it: let earlier work finish before the capture begins
    /// (`torch.cuda.graph` synchronizes the device first). Leaving a capturing stream for
    /// one that does not capture is [`Error::Unsupported`](iris_driver::Error::Unsupported).
    /// Not on the CPU backend.
    pub fn use_stream(&self, stream: StreamRef) -> Result<()> {
        // SAFETY: `StreamRef::from_raw`'s contract: a live stream of this device that
        // outlives its use.
        let lent = unsafe { self.core().device().wrap_stream(stream.raw) }?;
        self.core().set_stream(Some(Arc::from(lent)))
    }

    /// Sends this rank's work back to iris's own stream, ordered after the work queued on
    /// the lent one by an event.
    pub fn use_own_stream(&self) -> Result<()> {
        self.core().set_stream(None)
    }

    /// Runs `record` with this rank's stream capturing: the launches and collectives it
    /// queues are recorded, not run, into the graph returned. Waiting for the stream or
    /// touching buffers from the host inside `record` is an error (see the `streams`
    /// module's docs); when `record` fails the capture is ended and its error returned. Not
    /// on the CPU backend.
    pub fn capture(&self, record: impl FnOnce(&Iris) -> Result<()>) -> Result<CapturedGraph<'_>> {
        let stream = self.core().stream();
        stream.begin_capture().map_err(|e| e.on_rank(self.rank()))?;
        let recorded = record(self);
        let graph = stream.end_capture();
        match (recorded, graph) {
            (Ok(()), Ok(graph)) => Ok(CapturedGraph { iris: self, graph }),
            (Err(err), _) => Err(err),
            (Ok(()), Err(err)) => Err(err.on_rank(self.rank())),
        }
    }
}
