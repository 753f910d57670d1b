//! `RankCore`: what the layers under a context need of one rank: its place in the world,
//! its device and stream, its context id, its peer-check error word, its timeout and how
//! it meets the other ranks. Buffers, symmetric buffers, events, launch arguments and the
//! providers hold it (not the [`Iris`](crate::Iris) context above them), so they depend on
//! this layer only.

mod abort;
mod fault_record;
mod peer_mask;

use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use iris_device::abi::KernelSpec;
use iris_driver::{Device, DeviceInfo, Error, HostWord, MemoryKind, Result, Stream};

use crate::module::DeviceSlot;
use crate::transport::Collective;
pub(crate) use abort::WorldAbort;
pub(crate) use fault_record::FaultRecord;
pub use peer_mask::PeerMask;

/// What a peer table's header says besides the world size (see
/// [`iris_device::abi::peer_table`]): the rank that owns the table, its world's abort
/// word, the wait limit of device-side waits and the context's fault record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TableHeader {
    /// The rank whose table it is.
    pub rank: u64,
    /// The device address of the context's abort word.
    pub abort_flag: u64,
    /// How long a device-side signal wait may take, in nanoseconds.
    pub wait_limit_ns: u64,
    /// The device address of the context's fault record.
    pub fault_record: u64,
}

/// The wait limit of device-side waits under a host timeout: 90% of it, so that a
/// device wait gives up (and names what it waited for) before the host's wait does.
pub fn device_wait_limit(timeout: Duration) -> Duration {
    timeout.mul_f64(0.9)
}

/// Every context gets a distinct id, so memory of one is never launched with another.
static NEXT_CONTEXT_ID: AtomicU64 = AtomicU64::new(1);

/// What a rank is made from (the world hands it over).
pub(crate) struct RankPlace {
    /// This rank.
    pub rank: usize,
    /// Ranks in the world.
    pub world_size: usize,
    /// Whether the ranks are processes (one in this process) rather than threads.
    pub processes: bool,
    /// The bound on every host wait.
    pub timeout: Duration,
    /// The device the rank runs on, with its modules.
    pub device: Arc<DeviceSlot>,
    /// Where the ranks meet on the host.
    pub collective: Arc<dyn Collective>,
    /// The ranks whose memory this rank's device can reach.
    pub reachable: PeerMask,
    /// Set when device work did not finish and memory had to be leaked.
    pub leaks: Arc<AtomicBool>,
    /// The world's abort (its word is named in every peer table of the rank).
    pub abort: Arc<WorldAbort>,
    /// Whether the rank gets a sync stream (`World::sync_stream`).
    pub sync_stream: bool,
}

/// One rank's device, stream and identity: what buffers and launches are checked against.
pub struct RankCore {
    id: u64,
    place: RankPlace,
    /// The stream iris made for this rank.
    own: Arc<dyn Stream>,
    /// Where this rank's launches and copies go: its own stream, or one another library
    /// lent it.
    current: RwLock<Arc<dyn Stream>>,
    /// The rank's urgent stream for short kernels other ranks wait on
    /// (`World::sync_stream`), if it has one.
    sync: Option<Arc<dyn Stream>>,
    faults: FaultRecord,
    /// The world's abort word (its device reads it; the world's abort sets it).
    abort_word: HostWord,
    /// The last kernel launched, and how many were launched since the last completed
    /// wait for the stream (named when a wait times out).
    last_launch: AtomicPtr<KernelSpec>,
    launches: AtomicU64,
    /// Set when a wait for the stream timed out: later waits look once and fail at once
    /// rather than wait out the timeout again (drop and teardown then end promptly).
    stuck: AtomicBool,
}

/// The rank's work going to another stream, until dropped ([`RankCore::redirect`]).
pub(crate) struct Redirect<'a> {
    core: &'a RankCore,
    previous: Option<Arc<dyn Stream>>,
}

impl Drop for Redirect<'_> {
    fn drop(&mut self) {
        if let Some(previous) = self.previous.take() {
            *self.core.current.write().unwrap_or_else(|p| p.into_inner()) = previous;
        }
    }
}

impl RankCore {
    /// A rank at `place`, with a new stream and fault record on its device.
    pub(crate) fn new(place: RankPlace) -> Result<Self> {
        let device = place.device.device();
        let stream: Arc<dyn Stream> = Arc::from(device.create_stream()?);
        // Made here, before the ranks first meet, like the rank's own stream: a stream's
        // first submission does not start while another stream's kernel runs.
        let sync = match place.sync_stream {
            true => Some(Arc::from(device.create_urgent_stream()?)),
            false => None,
        };
        let abort_word = place.abort.word(device)?;
        let faults = FaultRecord::new(device)?;
        Ok(Self {
            id: NEXT_CONTEXT_ID.fetch_add(1, Ordering::Relaxed),
            place,
            own: Arc::clone(&stream),
            current: RwLock::new(stream),
            sync,
            faults,
            abort_word,
            last_launch: AtomicPtr::new(std::ptr::null_mut()),
            launches: AtomicU64::new(0),
            stuck: AtomicBool::new(false),
        })
    }

    /// The context's unique id.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// This rank.
    pub fn rank(&self) -> usize {
        self.place.rank
    }

    /// Ranks in the world.
    pub fn world_size(&self) -> usize {
        self.place.world_size
    }

    /// The bound on every host wait of this rank.
    pub fn timeout(&self) -> Duration {
        self.place.timeout
    }

    /// Whether the ranks are processes rather than threads of this process.
    pub fn is_process_world(&self) -> bool {
        self.place.processes
    }

    /// What the rank's device is.
    pub fn device_info(&self) -> &DeviceInfo {
        self.place.device.info()
    }

    /// The rank's device and its modules.
    pub(crate) fn device_slot(&self) -> &Arc<DeviceSlot> {
        &self.place.device
    }

    /// The rank's device.
    pub(crate) fn device(&self) -> &dyn Device {
        self.place.device.device()
    }

    /// The stream this rank's work goes to now (its own, or a lent one).
    pub(crate) fn stream(&self) -> Arc<dyn Stream> {
        Arc::clone(&self.current.read().unwrap_or_else(|p| p.into_inner()))
    }

    /// The rank's sync stream, if it has one (`World::sync_stream`).
    pub(crate) fn sync_stream(&self) -> Option<&Arc<dyn Stream>> {
        self.sync.as_ref()
    }

    /// Sends this rank's launches and copies to `stream` until the result is dropped,
    /// adding no order between the streams (the caller orders them with events).
    pub(crate) fn redirect(&self, stream: Arc<dyn Stream>) -> Redirect<'_> {
        let mut current = self.current.write().unwrap_or_else(|p| p.into_inner());
        let previous = std::mem::replace(&mut *current, stream);
        Redirect {
            core: self,
            previous: Some(previous),
        }
    }

    /// The stream iris made for this rank (providers order their own copies on it).
    pub(crate) fn own_stream(&self) -> &Arc<dyn Stream> {
        &self.own
    }

    /// Sends this rank's work to `stream` from now on (`None`: back to its own), ordered
    /// after the work queued on the old stream by an event, without the host waiting.
    ///
    /// A stream that captures a graph records only what is queued on it: switching onto
    /// one from a stream that does not capture adds no order (the graph's replays are
    /// ordered by the stream they are launched on; wait for earlier work before the
    /// capture begins, as `torch.cuda.graph` does). Leaving a capturing stream for one
    /// that does not capture is refused: it would pull that stream into the capture.
    pub(crate) fn set_stream(&self, stream: Option<Arc<dyn Stream>>) -> Result<()> {
        let next = stream.unwrap_or_else(|| Arc::clone(&self.own));
        let mut current = self.current.write().unwrap_or_else(|p| p.into_inner());
        let old = Arc::clone(&current);
        let rank = self.rank();
        let next_captures = next.is_capturing().map_err(|e| e.on_rank(rank))?;
        let old_captures = old.is_capturing().map_err(|e| e.on_rank(rank))?;
        match (old_captures, next_captures) {
            (false, true) => {}
            (true, false) => {
                return Err(Error::Unsupported {
                    backend: self.device_info().backend,
                    what: "switching from a stream that captures a graph to one that does not: end the capture first",
                })
            }
            _ => {
                let event = self.device().create_event().map_err(|e| e.on_rank(rank))?;
                old.record(&*event).map_err(|e| e.on_rank(rank))?;
                next.wait_event(&*event).map_err(|e| e.on_rank(rank))?;
            }
        }
        *current = next;
        Ok(())
    }

    /// [`Error::Unsupported`] when the current stream captures a graph: `what` (a wait or a
    /// host copy) would need the captured work to have run.
    pub(crate) fn refuse_while_capturing(&self, what: &'static str) -> Result<()> {
        if self.stream().is_capturing()? {
            return Err(Error::Unsupported {
                backend: self.device_info().backend,
                what,
            });
        }
        Ok(())
    }

    /// Where the ranks meet.
    pub(crate) fn collective(&self) -> &Arc<dyn Collective> {
        &self.place.collective
    }

    /// The ranks whose memory this rank's device can reach.
    pub(crate) fn reachable(&self) -> &PeerMask {
        &self.place.reachable
    }

    /// What every peer table of this context says in its header.
    pub(crate) fn table_header(&self) -> TableHeader {
        TableHeader {
            rank: self.rank() as u64,
            abort_flag: self.abort_word.device,
            wait_limit_ns: device_wait_limit(self.timeout()).as_nanos() as u64,
            fault_record: self.faults.addr(),
        }
    }

    /// Notes a launch of `spec`: named if a wait for the stream times out, and, for a
    /// kernel that may record a fault (peer checks, signal waits), the next synchronize
    /// reads the fault record. No lock: two atomic stores and an add.
    pub(crate) fn note_launch(&self, spec: &'static KernelSpec) {
        self.last_launch.store(
            spec as *const KernelSpec as *mut KernelSpec,
            Ordering::Relaxed,
        );
        self.launches.fetch_add(1, Ordering::Relaxed);
        if spec.peer_checks || spec.signal_waits {
            self.faults.mark_pending(spec);
        }
    }

    /// "kernel `k` (the last of n launched since ...)" for a wait that timed out.
    fn still_running(&self) -> String {
        let n = self.launches.load(Ordering::Relaxed);
        let last = self.last_launch.load(Ordering::Relaxed);
        // SAFETY: a pointer to a `'static` kernel spec, or null.
        match (unsafe { last.as_ref() }, n) {
            (_, 0) | (None, _) => String::new(),
            (Some(k), 1) => format!(": kernel `{}` is still running", k.name),
            (Some(k), n) => format!(
                ": kernel `{}` (the last of {n} launched since the stream was last idle) or one before it is still running",
                k.name
            ),
        }
    }

    /// Records that device memory is leaked (work that uses it did not finish).
    pub(crate) fn mark_leak(&self) {
        self.place.leaks.store(true, Ordering::SeqCst);
    }

    /// Waits until all work queued by this rank has finished, then reports a peer index
    /// out of range recorded by a kernel built with peer checks.
    pub(crate) fn synchronize(&self) -> Result<()> {
        self.wait_stream()?;
        self.faults.take(
            self.device(),
            &*self.stream(),
            self.rank(),
            &self.place.abort,
        )
    }

    /// Waits for this rank's queued work, leaving a recorded peer error for the next
    /// [`synchronize`](RankCore::synchronize).
    pub(crate) fn wait_stream(&self) -> Result<()> {
        self.refuse_while_capturing(
            "waiting for queued work while the stream captures a graph (synchronize, reading or writing buffers from the host, freeing memory): capture launches and collectives only, and do these before or after",
        )?;
        let timeout = if self.stuck.load(Ordering::Relaxed) {
            Duration::ZERO
        } else {
            self.place.timeout
        };
        match self.stream().synchronize(timeout) {
            Ok(()) => {
                self.launches.store(0, Ordering::Relaxed);
                self.stuck.store(false, Ordering::Relaxed);
                Ok(())
            }
            Err(Error::Timeout {
                rank,
                what,
                waited,
                missing,
            }) => {
                self.stuck.store(true, Ordering::Relaxed);
                Err(Error::Timeout {
                    rank,
                    what: format!("{what}{}", self.still_running()),
                    waited,
                    missing,
                }
                .on_rank(self.rank()))
            }
            Err(err) => Err(err.on_rank(self.rank())),
        }
    }

    /// Waits for every rank to arrive (no device work is waited for).
    pub(crate) fn host_barrier(&self, what: &str) -> Result<()> {
        self.place.collective.barrier(self.rank(), what)
    }

    /// `Ok` when memory owned by context `owner` may be used by this rank, else
    /// [`Error::ForeignBuffer`] about `what`.
    pub(crate) fn check_owner(&self, what: &'static str, owner: u64) -> Result<()> {
        if owner == self.id {
            Ok(())
        } else {
            Err(Error::ForeignBuffer {
                what,
                owner,
                launcher: self.id,
                rank: self.rank(),
            })
        }
    }

    /// `bytes` of device memory for this rank's own use.
    pub(crate) fn device_alloc(&self, bytes: usize) -> Result<u64> {
        let _span = tracing::debug_span!("alloc", rank = self.rank(), bytes).entered();
        self.device().alloc(bytes, MemoryKind::Device)
    }

    /// Copies `src` into `dst`, memory just allocated that no work uses yet, waiting for
    /// no kernel (not even this rank's).
    pub(crate) fn upload_fresh(&self, dst: u64, src: &[u8]) -> Result<()> {
        // SAFETY: the caller's promise: `dst` is fresh memory of this context of at least
        // `src.len()` bytes.
        unsafe { self.device().write_fresh(dst, src) }
    }

    /// Sets `bytes` at `dst`, memory just allocated that no work uses yet, to `value`,
    /// waiting for no kernel.
    pub(crate) fn fill_fresh(&self, dst: u64, value: u8, bytes: usize) -> Result<()> {
        // SAFETY: the caller's promise, as for `upload_fresh`.
        unsafe { self.device().fill_fresh(dst, value, bytes) }
    }

    /// Copies `src` to `dst` after this rank's queued work.
    pub(crate) fn upload(&self, dst: u64, src: &[u8]) -> Result<()> {
        if src.is_empty() {
            return Ok(());
        }
        self.synchronize()?;
        // SAFETY: `dst` is the start of a live allocation of this context of at least
        // `src.len()` bytes (callers check lengths).
        unsafe { self.device().memcpy_htod(&*self.stream(), dst, src) }
    }

    /// Copies device `src` into `dst` after this rank's queued work.
    pub(crate) fn download(&self, src: u64, dst: &mut [u8]) -> Result<()> {
        if dst.is_empty() {
            return Ok(());
        }
        self.synchronize()?;
        // SAFETY: as in `upload`.
        unsafe { self.device().memcpy_dtoh(&*self.stream(), dst, src) }
    }

    /// Queues setting `bytes` at `dst` to `value`.
    pub(crate) fn fill_bytes(&self, dst: u64, value: u8, bytes: usize) -> Result<()> {
        if bytes == 0 {
            return Ok(());
        }
        // SAFETY: as in `upload`; the allocation is released only after a synchronize.
        unsafe { self.device().memset(&*self.stream(), dst, value, bytes) }
    }

    /// Queues a device-to-device copy.
    pub(crate) fn copy_on_device(&self, dst: u64, src: u64, bytes: usize) -> Result<()> {
        if bytes == 0 {
            return Ok(());
        }
        // SAFETY: as in `fill_bytes`.
        unsafe { self.device().memcpy_dtod(&*self.stream(), dst, src, bytes) }
    }

    /// Frees an allocation of [`device_alloc`](RankCore::device_alloc) once the work
    /// queued on this rank's stream so far has finished, without waiting for it (a
    /// stream-ordered free: no host wait, no wait for any other rank's kernel). While the
    /// stream captures a graph the graph may still use it: it is leaked, and that is said.
    pub(crate) fn release(&self, addr: u64) {
        let stream = self.stream();
        if !matches!(stream.is_capturing(), Ok(false)) {
            tracing::warn!(
                rank = self.rank(),
                "leaking a buffer dropped while its stream captures a graph (the graph may use it): drop buffers after the capture ends"
            );
            self.mark_leak();
            return;
        }
        // SAFETY: the buffer is gone; work queued on other streams that used it was
        // ordered before this stream by the stream switch's event.
        if let Err(err) = unsafe { self.device().free_after(addr, &*stream) } {
            tracing::warn!(rank = self.rank(), %err, "freeing a buffer");
        }
    }
}

impl Drop for RankCore {
    fn drop(&mut self) {
        if let Err(err) = self.wait_stream() {
            tracing::warn!(rank = self.rank(), %err, "a rank's work did not finish: leaking its fault record");
            self.mark_leak();
            return;
        }
        if let Err(err) = self.faults.take(
            self.device(),
            &*self.stream(),
            self.rank(),
            &self.place.abort,
        ) {
            tracing::warn!(rank = self.rank(), %err, "unreported when the context ended");
        }
        // SAFETY: the rank's work has finished; the tables naming the record are only
        // read by kernels of this context. (A stream-ordered free: it waits for nothing.)
        if let Err(err) = unsafe { self.faults.free(self.device()) } {
            tracing::warn!(rank = self.rank(), %err, "freeing the fault record");
        }
    }
}

impl std::fmt::Debug for RankCore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RankCore")
            .field("id", &self.id)
            .field("rank", &self.rank())
            .field("world_size", &self.world_size())
            .field("device", self.device_info())
            .finish_non_exhaustive()
    }
}
