//! `Iris`: the context of one rank.

use std::any::Any;
use std::fmt;
use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::time::Duration;

use iris_device::abi::KernelUnit;
use iris_driver::{BackendKind, Device, DeviceInfo, Error, LaunchDims, Result};

use crate::event::Event;
use crate::launch::{validate, KernelArgs, LaunchConfig};
use crate::memory::Buffer;
use crate::pod::{as_bytes, byte_len, Pod};
use crate::rank::{RankCore, RankPlace};
use crate::symmetric::{
    AllocationRequest, ExternalProvider, HeapProvider, IpcProvider, ProviderKind, RankHeap,
    ShmemProvider, SymmetricBuffer, SymmetricProvider,
};
use crate::transport::{Contribution, Gather};

/// What the world hands a new context.
pub(crate) struct RankSetup {
    /// The rank's place in the world.
    pub place: RankPlace,
    /// Every rank's heap as mapped in this process.
    pub heaps: Arc<[RankHeap]>,
    /// The provider `symmetric` and its siblings allocate from.
    pub provider: ProviderKind,
    /// Where to write this rank's trace, if tracing.
    pub trace: Option<std::path::PathBuf>,
    /// The world's shared state, released once every context is gone.
    pub world: Arc<dyn Any + Send + Sync>,
}

/// The context of one rank: its device and stream, its symmetric memory providers, the
/// collectives of its world, and kernel launches. The same API serves ranks as threads
/// and ranks as processes.
///
/// Work (launches, device-side copies) is queued on the rank's stream; host copies wait
/// for it; [`synchronize`](Iris::synchronize) waits for all of it.
///
/// Symmetric memory comes from three providers ([`ProviderKind`]): the rank's heap
/// (the default, [`symmetric`](Iris::symmetric) and its siblings), per-allocation IPC
/// ([`symmetric_with`](Iris::symmetric_with)), and memory another system set up
/// ([`adopt_external`](Iris::adopt_external)). Whatever the provider, a
/// [`SymmetricBuffer`] passes the same way to a kernel's `Symmetric<T>` parameter.
///
/// Kernels built with peer checks (`#[iris::kernel(peer_checks)]`, `IRIS_PEER_CHECKS=1`)
/// record a peer index outside the world in the context's error word;
/// [`synchronize`](Iris::synchronize) reports it as [`Error::PeerOutOfRange`].
pub struct Iris {
    core: Arc<RankCore>,
    heap_bytes: usize,
    provider: ProviderKind,
    heap: HeapProvider,
    ipc: IpcProvider,
    external: ExternalProvider,
    shmem: ShmemProvider,
    /// The rank's tracer, when the world traces.
    tracer: Option<crate::trace::Tracer>,
    /// Kept until the context is gone: the world's heaps outlive every context.
    _world: Arc<dyn Any + Send + Sync>,
}

/// How a new symmetric allocation is filled.
enum Fill<'a, T> {
    Zeros,
    Data(&'a [T]),
}

impl Iris {
    /// The context of a rank of a world.
    pub(crate) fn new(setup: RankSetup) -> Result<Self> {
        let rank = setup.place.rank;
        if crate::config::preload_from_env() {
            setup.place.device.preload();
        }
        let heap_bytes = setup.heaps.get(rank).map_or(0, |h| h.bytes);
        let core = Arc::new(RankCore::new(setup.place)?);
        let heap = HeapProvider::new(Arc::clone(&core), setup.heaps)?;
        let id = core.id();
        // No rank runs its first kernel before every rank's stream exists and was used
        // once: a stream's first submission does not start while another stream's kernel
        // runs (`Device::create_stream`), so a rank still making its stream would wait for
        // a peer's kernel that waits for it.
        core.host_barrier("context creation")?;
        let tracer = match &setup.trace {
            Some(dir) => Some(crate::trace::Tracer::start(&core, dir)?),
            None => None,
        };
        tracing::debug!(
            rank,
            id,
            device = core.device_info().ordinal,
            "context created"
        );
        Ok(Self {
            ipc: IpcProvider::new(Arc::clone(&core)),
            external: ExternalProvider::new(Arc::clone(&core)),
            shmem: ShmemProvider::new(Arc::clone(&core)),
            heap,
            core,
            heap_bytes,
            provider: setup.provider,
            tracer,
            _world: setup.world,
        })
    }

    /// What buffers, symmetric buffers, events and launch arguments of this context hold:
    /// its device, stream and identity.
    pub fn core(&self) -> &RankCore {
        &self.core
    }

    /// This context's unique id.
    pub fn id(&self) -> u64 {
        self.core.id()
    }

    /// This rank.
    pub fn rank(&self) -> usize {
        self.core.rank()
    }

    /// How many ranks the world has.
    pub fn world_size(&self) -> usize {
        self.core.world_size()
    }

    /// The device this rank runs on.
    pub fn device_info(&self) -> &DeviceInfo {
        self.core.device_info()
    }

    /// The backend this rank runs on.
    pub fn backend_kind(&self) -> BackendKind {
        self.core.device_info().backend
    }

    /// The bound on every wait of this rank.
    pub fn timeout(&self) -> Duration {
        self.core.timeout()
    }

    /// Bytes of this rank's symmetric heap.
    pub fn heap_bytes(&self) -> usize {
        self.heap_bytes
    }

    /// The ranks whose memory this rank's device can reach.
    pub fn reachable_peers(&self) -> Vec<usize> {
        self.core.reachable().ranks()
    }

    /// Whether the ranks of the world are processes (one in this process) rather than
    /// threads of this process.
    pub fn is_process_world(&self) -> bool {
        self.core.is_process_world()
    }

    /// The device this rank runs on, for working with memory other systems manage
    /// (exportable memory, descriptors) through the backend's own interface.
    pub fn device(&self) -> &dyn Device {
        self.core.device()
    }

    // ----- device memory -------------------------------------------------------------

    /// `len` zeroed elements of device memory.
    pub fn zeros<T: Pod>(&self, len: usize) -> Result<Buffer<'_, T>> {
        Buffer::zeros(&self.core, len)
    }

    /// Device memory holding a copy of `data`.
    pub fn from_slice<T: Pod>(&self, data: &[T]) -> Result<Buffer<'_, T>> {
        Buffer::from_slice(&self.core, data)
    }

    /// A tile map of `matrix`, a row-major `rows` x `cols` matrix, for the kernels'
    /// `copy_tile`: boxes of `box_rows` rows of 128 bytes (64 `bf16`), landing in shared
    /// memory in the 128-byte swizzle. A device buffer of [`TILE_MAP_WORDS`](crate::TILE_MAP_WORDS)
    /// words that kernels take as a `*const u64`: the copy engine's description where the
    /// device has one (Hopper), then the matrix's address and shape, from which kernels
    /// elsewhere copy the boxes themselves. It holds `matrix`'s address: keep `matrix`
    /// alive while kernels use the map. Errors with [`Error::InvalidConfig`] when the
    /// shape does not fit the buffer or the copy engine (rows of a multiple of 16 bytes,
    /// at least a box row long; 1 to 256 box rows).
    pub fn tile_map<T: Pod>(
        &self,
        matrix: &Buffer<'_, T>,
        rows: usize,
        cols: usize,
        box_rows: usize,
    ) -> Result<Buffer<'_, u64>> {
        let words = crate::memory::tile_map_words(
            self.device(),
            matrix.addr(),
            matrix.len(),
            std::mem::size_of::<T>(),
            (rows, cols, box_rows),
        )?;
        self.from_slice(&words)
    }

    /// `len` copies of `value` in device memory.
    pub fn full<T: Pod>(&self, len: usize, value: T) -> Result<Buffer<'_, T>> {
        Buffer::full(&self.core, len, value)
    }

    // ----- symmetric memory ----------------------------------------------------------

    /// A zeroed symmetric allocation of `len` elements from the world's default provider
    /// (collective: every rank calls it in the same order with the same `len` and `T`).
    ///
    /// When it returns on any rank, every rank's copy has been initialised.
    pub fn symmetric<T: Pod>(&self, len: usize) -> Result<SymmetricBuffer<'_, T>> {
        self.symmetric_filled(self.provider, len, Fill::Zeros)
    }

    /// Same as [`symmetric`](Iris::symmetric): the memory is zeroed.
    pub fn symmetric_zeros<T: Pod>(&self, len: usize) -> Result<SymmetricBuffer<'_, T>> {
        self.symmetric_filled(self.provider, len, Fill::Zeros)
    }

    /// A zeroed symmetric allocation of `len` elements from provider `provider`
    /// (collective, like [`symmetric`](Iris::symmetric)). [`ProviderKind::External`]
    /// allocates nothing: it is an error here (see [`adopt_external`](Iris::adopt_external)).
    pub fn symmetric_with<T: Pod>(
        &self,
        provider: ProviderKind,
        len: usize,
    ) -> Result<SymmetricBuffer<'_, T>> {
        self.symmetric_filled(provider, len, Fill::Zeros)
    }

    /// A symmetric allocation from provider `provider` whose local copy holds `data`
    /// (collective, like [`symmetric_from_slice`](Iris::symmetric_from_slice)).
    pub fn symmetric_from_slice_with<T: Pod>(
        &self,
        provider: ProviderKind,
        data: &[T],
    ) -> Result<SymmetricBuffer<'_, T>> {
        self.symmetric_filled(provider, data.len(), Fill::Data(data))
    }

    /// Adopts `len` elements of symmetric memory another system allocated and exchanged
    /// (for example a PyTorch symmetric tensor: its data pointer and its `buffer_ptrs`):
    /// this rank's copy is at `local`, rank `r`'s at `peers[r]` as mapped in this process
    /// (0 for a peer that could not be mapped: it is unreachable, and a launch with the
    /// buffer is refused). Local: nothing is exchanged. The table is validated
    /// (`peers.len()` is the world size, `peers[rank] == local`, else
    /// [`Error::InvalidAddressMap`]) and uploaded; freeing the buffer releases the table
    /// only.
    ///
    /// # Safety
    /// Every non-null address is the start of `len` elements of device memory valid in
    /// this process, each rank's copy of one allocation, and stays valid (with the
    /// other ranks' copies) until the buffer is freed and the kernels using it finish.
    pub unsafe fn adopt_external<T: Pod>(
        &self,
        local: u64,
        peers: &[u64],
        len: usize,
    ) -> Result<SymmetricBuffer<'_, T>> {
        let bytes = byte_len::<T>(len)?;
        let map = self
            .external
            .adopt(local, peers, bytes)
            .map_err(|e| e.on_rank(self.rank()))?;
        Ok(SymmetricBuffer::new(
            &self.core,
            &self.external,
            map,
            len,
            ProviderKind::External,
        ))
    }

    /// A symmetric allocation of `len` copies of `value` (collective).
    pub fn symmetric_full<T: Pod>(&self, len: usize, value: T) -> Result<SymmetricBuffer<'_, T>> {
        self.symmetric_from_slice(&vec![value; len])
    }

    /// A symmetric allocation whose local copy holds `data` (collective: every rank
    /// passes a slice of the same length; the contents may differ per rank).
    pub fn symmetric_from_slice<T: Pod>(&self, data: &[T]) -> Result<SymmetricBuffer<'_, T>> {
        self.symmetric_filled(self.provider, data.len(), Fill::Data(data))
    }

    fn symmetric_filled<T: Pod>(
        &self,
        provider: ProviderKind,
        len: usize,
        fill: Fill<'_, T>,
    ) -> Result<SymmetricBuffer<'_, T>> {
        let request = AllocationRequest {
            bytes: byte_len::<T>(len)?,
            align: std::mem::align_of::<T>().max(16),
            type_name: std::any::type_name::<T>(),
        };
        let source = self.provider(provider);
        let map = source
            .allocate(&request)
            .map_err(|e| e.on_rank(self.rank()))?;
        let buffer = SymmetricBuffer::new(&self.core, source, map, len, provider);
        // The local copy is new: written on none of this rank's streams, so that a rank
        // whose kernel waits for a peer allocates without waiting for that kernel.
        let (base, bytes) = (buffer.map().base(), buffer.map().bytes());
        match fill {
            Fill::Zeros => self.core.fill_fresh(base, 0, bytes)?,
            Fill::Data(data) => self.core.upload_fresh(base, as_bytes(data))?,
        }
        self.core.host_barrier("symmetric initialization")?;
        Ok(buffer)
    }

    /// The provider [`symmetric`](Iris::symmetric) allocates from (the world's default).
    pub fn symmetric_provider(&self) -> &dyn SymmetricProvider {
        self.provider(self.provider)
    }

    /// The provider `kind` of this rank (to ask for the map of an address with
    /// [`SymmetricProvider::map_of`], or to free a map).
    pub fn provider(&self, kind: ProviderKind) -> &dyn SymmetricProvider {
        match kind {
            ProviderKind::Heap => &self.heap,
            ProviderKind::Ipc => &self.ipc,
            ProviderKind::External => &self.external,
            ProviderKind::Shmem => &self.shmem,
        }
    }

    /// The default provider of this world.
    pub fn default_provider(&self) -> ProviderKind {
        self.provider
    }

    // ----- synchronization -----------------------------------------------------------

    /// Waits until all work queued by this rank has finished.
    ///
    /// After a launch of a kernel built with peer checks, also reads (and resets) the
    /// context's error word: a peer index outside the world used since the last report
    /// is [`Error::PeerOutOfRange`]. Without such a launch there is nothing more to do.
    pub fn synchronize(&self) -> Result<()> {
        self.core.synchronize()
    }

    /// Waits for this rank's queued work, then for every rank to arrive: afterwards all
    /// work queued by any rank before the barrier has finished.
    pub fn barrier(&self) -> Result<()> {
        self.synchronize()?;
        self.host_barrier()
    }

    /// Waits for every rank to arrive, without waiting for device work.
    pub fn host_barrier(&self) -> Result<()> {
        let _span = tracing::debug_span!("barrier", rank = self.rank()).entered();
        self.core.host_barrier("barrier")
    }

    /// Every rank's `value`, by rank (collective). Values travel as bytes, so that ranks
    /// may be processes: any [`Pod`] type, a `Vec` of one, or a `String`.
    pub fn all_gather<T: Gather>(&self, value: T) -> Result<Vec<T>> {
        crate::transport::all_gather(&**self.core.collective(), self.rank(), "all_gather", &value)
    }

    /// Every rank's `bytes` and file descriptors, by rank (collective): descriptors pass
    /// between processes with `SCM_RIGHTS` (each rank receives its own copies; ranks as
    /// threads share them). For exchanging what another system needs, for example
    /// exported memory to adopt with [`adopt_external`](Iris::adopt_external).
    pub fn all_gather_fds(&self, bytes: &[u8], fds: Vec<OwnedFd>) -> Result<Vec<Contribution>> {
        self.core
            .collective()
            .exchange(self.rank(), "all_gather_fds", bytes.to_vec(), fds)
    }

    // ----- events --------------------------------------------------------------------

    /// A new event, not yet recorded.
    pub fn event(&self) -> Result<Event<'_>> {
        Event::new(&self.core)
    }

    /// Records `event` at the current end of this rank's stream.
    pub fn record(&self, event: &Event<'_>) -> Result<()> {
        event.record()
    }

    /// A new event recorded at the current end of this rank's stream.
    pub fn record_event(&self) -> Result<Event<'_>> {
        let event = self.event()?;
        event.record()?;
        Ok(event)
    }

    // ----- kernels -------------------------------------------------------------------

    /// Loads `unit` on this rank's device now (it is otherwise loaded on first launch).
    pub fn load(&self, unit: &'static KernelUnit) -> Result<()> {
        self.core.device_slot().module(unit).map(drop)
    }

    /// How many blocks of kernel `kernel` of `unit`, `block_threads` threads each, can
    /// be resident on one multiprocessor of this rank's device at once: the driver's
    /// occupancy calculator for the code object this device runs (loads the unit if it is
    /// not loaded yet). `u32::MAX` on the CPU backend, whose blocks are threads.
    ///
    /// Kernels that wait for other blocks (a device-side barrier) are only correct when
    /// all the blocks they wait for are resident at once: this many per multiprocessor,
    /// shared by every rank on the device (see `iris::ccl::Ccl::launch_config_for`).
    pub fn max_active_blocks_per_multiprocessor(
        &self,
        unit: &'static KernelUnit,
        kernel: usize,
        block_threads: u32,
    ) -> Result<u32> {
        let info = self.core.device_info();
        if block_threads == 0 || block_threads > info.max_threads_per_block {
            return Err(Error::InvalidConfig(format!(
                "{block_threads} threads per block: the device takes 1 to {}",
                info.max_threads_per_block
            )));
        }
        let module = self.core.device_slot().module_ref(unit)?;
        self.core
            .device()
            .max_active_blocks_per_multiprocessor(&*module, kernel, block_threads, 0)
            .map_err(|e| e.on_rank(self.rank()))
    }

    /// Empty arguments for kernel `kernel` of `unit`, bound to this context (what the
    /// typed launchers `#[iris::kernel]` generates start from).
    pub fn args(&self, unit: &'static KernelUnit, kernel: usize) -> KernelArgs<'_> {
        KernelArgs::new(&self.core, unit, kernel)
    }

    /// Launches the kernel `args` were built for on this rank's stream, after checking
    /// them against the kernel's parameters and `config` against the kernel's and the
    /// device's limits. Asynchronous: [`synchronize`](Iris::synchronize) waits for it.
    pub fn launch(&self, config: LaunchConfig, mut args: KernelArgs<'_>) -> Result<()> {
        // The hot path: no span, no lock, no allocation (for up to 32 slots) once the
        // unit is loaded; a trace-level event when enabled.
        let (unit, kernel) = (args.unit(), args.kernel());
        tracing::trace!(
            unit = unit.id,
            kernel,
            rank = self.rank(),
            grid = ?config.grid,
            block = ?config.block,
            "launch"
        );
        let spec = validate(&args, &config, self.core.device_info(), self.id())?;
        let module = self.core.device_slot().module_ref(unit)?;
        self.core.note_launch(spec);
        let mut slots = args.slot_pointers();
        let dims = LaunchDims {
            grid: config.grid,
            block: config.block,
            dynamic_shared_bytes: 0,
        };
        let traced = match &self.tracer {
            Some(t) => Some(t.before_launch(&self.core)?),
            None => None,
        };
        // A kernel that records trace events takes the rank's event buffer (0: not
        // traced) and the launch's serial after its parameters' slots.
        let mut hidden = [0u64; iris_device::abi::trace::HIDDEN_SLOTS];
        if spec.trace_events {
            if let (Some(t), Some(before)) = (&self.tracer, &traced) {
                hidden = t.hidden_args(before.serial());
            }
            for word in &mut hidden {
                slots.push((word as *mut u64).cast());
            }
        }
        // SAFETY: the arguments match the kernel's parameters and belong to this context
        // (validated above); the memory they point to is owned by buffers that outlive the
        // launch or is released only after this stream is synchronized.
        unsafe {
            self.core
                .device()
                .launch(&*self.core.stream(), &*module, kernel, dims, &mut slots)
        }
        .map_err(|e| e.on_rank(self.rank()))?;
        if let (Some(t), Some(before)) = (&self.tracer, traced) {
            let name = unit.kernels.get(kernel).map_or("?", |k| k.name);
            t.after_launch(&self.core, before, unit.id, name, config)?;
        }
        Ok(())
    }

    /// Whether this rank traces its work (see [`crate::trace`]).
    pub fn is_tracing(&self) -> bool {
        self.tracer.is_some()
    }

    /// Marks a call (a collective, say) in the trace, from now until the returned guard is
    /// dropped: its name, the `bytes` it moves, and, on the device, its kernels from the
    /// first one's start to the last one's end. Nothing when the world does not trace.
    pub fn trace_span(&self, name: &str, bytes: u64) -> TraceSpan<'_> {
        TraceSpan {
            open: self.tracer.as_ref().map(|t| {
                (
                    t,
                    name.to_string(),
                    bytes,
                    crate::trace::now_ns(),
                    t.launches(),
                )
            }),
        }
    }
}

/// A traced call, open until dropped ([`Iris::trace_span`]).
pub struct TraceSpan<'a> {
    open: Option<(&'a crate::trace::Tracer, String, u64, u64, usize)>,
}

impl Drop for TraceSpan<'_> {
    fn drop(&mut self) {
        if let Some((tracer, name, bytes, start, first)) = self.open.take() {
            tracer.span(&name, bytes, start, first);
        }
    }
}

impl Drop for Iris {
    fn drop(&mut self) {
        if let Some(tracer) = self.tracer.take() {
            if let Err(err) = tracer.finish(&self.core) {
                tracing::warn!(rank = self.rank(), %err, "the rank's trace was not written");
            }
        }
        // The SHMEM engine ends with the world, once this rank's work is done.
        if self.core.wait_stream().is_ok() {
            self.shmem.finish();
        } else {
            self.shmem.abandon();
        }
    }
}

impl fmt::Debug for Iris {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Iris")
            .field("id", &self.id())
            .field("rank", &self.rank())
            .field("world_size", &self.world_size())
            .field("device", self.device_info())
            .finish_non_exhaustive()
    }
}
