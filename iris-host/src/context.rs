//! `Iris`: the context of one rank.

use std::fmt;
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use iris_device::abi::KernelUnit;

use crate::event::Event;
use crate::launch::{validate, KernelArgs, LaunchConfig};
use crate::memory::Buffer;
use crate::module::DeviceSlot;
use crate::peer_errors::PeerErrors;
use crate::pod::{byte_len, Pod};
use crate::symmetric::{
    AllocationRequest, ExternalProvider, HeapProvider, IpcProvider, PeerMask, ProviderKind,
    ShmemProvider, SymmetricAddressMap, SymmetricBuffer, SymmetricProvider,
};
use crate::transport::{Contribution, Gather};
use crate::world::WorldShared;
use iris_driver::{BackendKind, Device, DeviceInfo, LaunchDims, MemoryKind, Stream};
use iris_driver::{Error, Result};

/// Every context gets a distinct id, so memory of one is never launched with another.
static NEXT_CONTEXT_ID: AtomicU64 = AtomicU64::new(1);

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
    id: u64,
    rank: usize,
    world: Arc<WorldShared>,
    device: Arc<DeviceSlot>,
    stream: Arc<dyn Stream>,
    heap: HeapProvider,
    ipc: IpcProvider,
    external: ExternalProvider,
    shmem: ShmemProvider,
    peer_errors: PeerErrors,
}

/// How a new symmetric allocation is filled.
enum Fill<'a, T> {
    Zeros,
    Data(&'a [T]),
}

impl Iris {
    /// The context of rank `rank` of `world`.
    pub(crate) fn new(rank: usize, world: Arc<WorldShared>) -> Result<Self> {
        let heap = world.heaps.get(rank).ok_or_else(|| {
            Error::InvalidConfig(format!("rank {rank} is outside a world of {}", world.size))
        })?;
        let device = Arc::clone(&heap.device);
        let stream: Arc<dyn Stream> = Arc::from(device.device().create_stream()?);
        let peer_errors = PeerErrors::new(device.device(), &*stream)?;
        let reachable = world
            .reachable
            .get(&rank)
            .cloned()
            .unwrap_or_else(|| PeerMask::from_fn(world.size, |r| r == rank));
        let heap = HeapProvider::new(
            rank,
            Arc::clone(&world.heaps),
            reachable.clone(),
            Arc::clone(&world.collective),
            Arc::clone(&stream),
            peer_errors.addr(),
        )?;
        let ipc = IpcProvider::new(
            rank,
            Arc::clone(&device),
            reachable,
            Arc::clone(&world.collective),
            Arc::clone(&stream),
            peer_errors.addr(),
        );
        let external = ExternalProvider::new(
            rank,
            world.size,
            Arc::clone(&device),
            Arc::clone(&stream),
            world.timeout,
            peer_errors.addr(),
        );
        let shmem = ShmemProvider::new(
            rank,
            world.size,
            if world.processes { 1 } else { world.size },
            Arc::clone(&device),
            Arc::clone(&world.collective),
            Arc::clone(&stream),
            peer_errors.addr(),
        );
        let id = NEXT_CONTEXT_ID.fetch_add(1, Ordering::Relaxed);
        tracing::debug!(rank, id, device = device.info().ordinal, "context created");
        Ok(Self {
            id,
            rank,
            world,
            device,
            stream,
            heap,
            ipc,
            external,
            shmem,
            peer_errors,
        })
    }

    /// This context's unique id.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// This rank.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// How many ranks the world has.
    pub fn world_size(&self) -> usize {
        self.world.size
    }

    /// The device this rank runs on.
    pub fn device_info(&self) -> &DeviceInfo {
        self.device.info()
    }

    /// The backend this rank runs on.
    pub fn backend_kind(&self) -> BackendKind {
        self.device.info().backend
    }

    /// The bound on every wait of this rank.
    pub fn timeout(&self) -> Duration {
        self.world.timeout
    }

    /// Bytes of this rank's symmetric heap.
    pub fn heap_bytes(&self) -> usize {
        self.world.heaps.get(self.rank).map_or(0, |h| h.bytes)
    }

    /// The ranks whose memory this rank's device can reach.
    pub fn reachable_peers(&self) -> Vec<usize> {
        self.world
            .reachable
            .get(&self.rank)
            .map(|m| m.ranks())
            .unwrap_or_default()
    }

    /// Whether the ranks of the world are processes (one in this process) rather than
    /// threads of this process.
    pub fn is_process_world(&self) -> bool {
        self.world.processes
    }

    /// The device this rank runs on, for working with memory other systems manage
    /// (exportable memory, descriptors) through the backend's own interface.
    pub fn device(&self) -> &dyn Device {
        self.device.device()
    }

    // ----- device memory -------------------------------------------------------------

    /// `len` zeroed elements of device memory.
    pub fn zeros<T: Pod>(&self, len: usize) -> Result<Buffer<'_, T>> {
        Buffer::zeros(self, len)
    }

    /// Device memory holding a copy of `data`.
    pub fn from_slice<T: Pod>(&self, data: &[T]) -> Result<Buffer<'_, T>> {
        Buffer::from_slice(self, data)
    }

    /// `len` copies of `value` in device memory.
    pub fn full<T: Pod>(&self, len: usize, value: T) -> Result<Buffer<'_, T>> {
        Buffer::full(self, len, value)
    }

    // ----- symmetric memory ----------------------------------------------------------

    /// A zeroed symmetric allocation of `len` elements from the world's default provider
    /// (collective: every rank calls it in the same order with the same `len` and `T`).
    ///
    /// When it returns on any rank, every rank's copy has been initialised.
    pub fn symmetric<T: Pod>(&self, len: usize) -> Result<SymmetricBuffer<'_, T>> {
        self.symmetric_filled(self.world.provider, len, Fill::Zeros)
    }

    /// Same as [`symmetric`](Iris::symmetric): the memory is zeroed.
    pub fn symmetric_zeros<T: Pod>(&self, len: usize) -> Result<SymmetricBuffer<'_, T>> {
        self.symmetric_filled(self.world.provider, len, Fill::Zeros)
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
            .map_err(|e| e.on_rank(self.rank))?;
        Ok(SymmetricBuffer::new(self, map, len, ProviderKind::External))
    }

    /// A symmetric allocation of `len` copies of `value` (collective).
    pub fn symmetric_full<T: Pod>(&self, len: usize, value: T) -> Result<SymmetricBuffer<'_, T>> {
        self.symmetric_from_slice(&vec![value; len])
    }

    /// A symmetric allocation whose local copy holds `data` (collective: every rank
    /// passes a slice of the same length; the contents may differ per rank).
    pub fn symmetric_from_slice<T: Pod>(&self, data: &[T]) -> Result<SymmetricBuffer<'_, T>> {
        self.symmetric_filled(self.world.provider, data.len(), Fill::Data(data))
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
        let map = self
            .provider(provider)
            .allocate(&request)
            .map_err(|e| e.on_rank(self.rank))?;
        let buffer = SymmetricBuffer::new(self, map, len, provider);
        match fill {
            Fill::Zeros => self.fill_bytes(buffer.map().base(), 0, buffer.map().bytes())?,
            Fill::Data(data) => buffer.copy_from_slice(data)?,
        }
        self.synchronize()?;
        self.world
            .collective
            .barrier(self.rank, "symmetric initialization")?;
        Ok(buffer)
    }

    /// The provider [`symmetric`](Iris::symmetric) allocates from (the world's default).
    pub fn symmetric_provider(&self) -> &dyn SymmetricProvider {
        self.provider(self.world.provider)
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
        self.world.provider
    }

    // ----- synchronization -----------------------------------------------------------

    /// Waits until all work queued by this rank has finished.
    ///
    /// After a launch of a kernel built with peer checks, also reads (and resets) the
    /// context's error word: a peer index outside the world used since the last report
    /// is [`Error::PeerOutOfRange`]. Without such a launch there is nothing more to do.
    pub fn synchronize(&self) -> Result<()> {
        self.wait_stream()?;
        self.peer_errors
            .take(self.device.device(), &*self.stream, self.rank)
    }

    /// Waits for this rank's queued work, leaving a recorded peer error for the next
    /// [`synchronize`](Iris::synchronize).
    fn wait_stream(&self) -> Result<()> {
        self.stream
            .synchronize(self.world.timeout)
            .map_err(|e| e.on_rank(self.rank))
    }

    /// Waits for this rank's queued work, then for every rank to arrive: afterwards all
    /// work queued by any rank before the barrier has finished.
    pub fn barrier(&self) -> Result<()> {
        self.synchronize()?;
        self.host_barrier()
    }

    /// Waits for every rank to arrive, without waiting for device work.
    pub fn host_barrier(&self) -> Result<()> {
        let _span = tracing::debug_span!("barrier", rank = self.rank).entered();
        self.world.collective.barrier(self.rank, "barrier")
    }

    /// Every rank's `value`, by rank (collective). Values travel as bytes, so that ranks
    /// may be processes: any [`Pod`] type, a `Vec` of one, or a `String`.
    pub fn all_gather<T: Gather>(&self, value: T) -> Result<Vec<T>> {
        crate::transport::all_gather(&*self.world.collective, self.rank, "all_gather", &value)
    }

    /// Every rank's `bytes` and file descriptors, by rank (collective): descriptors pass
    /// between processes with `SCM_RIGHTS` (each rank receives its own copies; ranks as
    /// threads share them). For exchanging what another system needs, for example
    /// exported memory to adopt with [`adopt_external`](Iris::adopt_external).
    pub fn all_gather_fds(&self, bytes: &[u8], fds: Vec<OwnedFd>) -> Result<Vec<Contribution>> {
        self.world
            .collective
            .exchange(self.rank, "all_gather_fds", bytes.to_vec(), fds)
    }

    // ----- events --------------------------------------------------------------------

    /// A new event, not yet recorded.
    pub fn event(&self) -> Result<Event<'_>> {
        Ok(Event::new(self, self.device.device().create_event()?))
    }

    /// Records `event` at the current end of this rank's stream.
    pub fn record(&self, event: &Event<'_>) -> Result<()> {
        self.stream.record(event.inner())
    }

    /// A new event recorded at the current end of this rank's stream.
    pub fn record_event(&self) -> Result<Event<'_>> {
        let event = self.event()?;
        self.record(&event)?;
        Ok(event)
    }

    // ----- kernels -------------------------------------------------------------------

    /// Loads `unit` on this rank's device now (it is otherwise loaded on first launch).
    pub fn load(&self, unit: &'static KernelUnit) -> Result<()> {
        self.device.module(unit).map(drop)
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
        let info = self.device.info();
        if block_threads == 0 || block_threads > info.max_threads_per_block {
            return Err(Error::InvalidConfig(format!(
                "{block_threads} threads per block: the device takes 1 to {}",
                info.max_threads_per_block
            )));
        }
        let module = self.device.module_ref(unit)?;
        self.device
            .device()
            .max_active_blocks_per_multiprocessor(&*module, kernel, block_threads, 0)
            .map_err(|e| e.on_rank(self.rank))
    }

    /// Launches kernel `kernel` of `unit` on this rank's stream, after checking `args`
    /// against the kernel's parameters and `config` against the kernel's and the device's
    /// limits. Asynchronous: [`synchronize`](Iris::synchronize) waits for it.
    pub fn launch(
        &self,
        unit: &'static KernelUnit,
        kernel: usize,
        config: LaunchConfig,
        mut args: KernelArgs,
    ) -> Result<()> {
        // The hot path: no span, no lock, no allocation (for up to 32 slots) once the
        // unit is loaded; a trace-level event when enabled.
        tracing::trace!(
            unit = unit.id,
            kernel,
            rank = self.rank,
            grid = ?config.grid,
            block = ?config.block,
            "launch"
        );
        validate(unit, kernel, &config, &args, self.device.info(), self.id)?;
        let module = self.device.module_ref(unit)?;
        if unit.kernels.get(kernel).is_some_and(|k| k.peer_checks) {
            self.peer_errors.mark_pending();
        }
        let mut slots = args.slot_pointers();
        let dims = LaunchDims {
            grid: config.grid,
            block: config.block,
            dynamic_shared_bytes: 0,
        };
        // SAFETY: the arguments match the kernel's parameters and belong to this context
        // (validated above); the memory they point to is owned by buffers that outlive the
        // launch or is released only after this stream is synchronized.
        unsafe {
            self.device
                .device()
                .launch(&*self.stream, &*module, kernel, dims, &mut slots)
        }
        .map_err(|e| e.on_rank(self.rank))
    }

    // ----- helpers for buffers -------------------------------------------------------

    pub(crate) fn device_alloc(&self, bytes: usize) -> Result<u64> {
        let _span = tracing::debug_span!("alloc", rank = self.rank, bytes).entered();
        self.device.device().alloc(bytes, MemoryKind::Device)
    }

    pub(crate) fn upload(&self, dst: u64, src: &[u8]) -> Result<()> {
        if src.is_empty() {
            return Ok(());
        }
        self.synchronize()?;
        // SAFETY: `dst` is the start of a live allocation of this context of at least
        // `src.len()` bytes (callers check lengths).
        unsafe { self.device.device().memcpy_htod(&*self.stream, dst, src) }
    }

    pub(crate) fn download(&self, src: u64, dst: &mut [u8]) -> Result<()> {
        if dst.is_empty() {
            return Ok(());
        }
        self.synchronize()?;
        // SAFETY: as in `upload`.
        unsafe { self.device.device().memcpy_dtoh(&*self.stream, dst, src) }
    }

    pub(crate) fn fill_bytes(&self, dst: u64, value: u8, bytes: usize) -> Result<()> {
        if bytes == 0 {
            return Ok(());
        }
        // SAFETY: as in `upload`; the allocation is released only after a synchronize.
        unsafe {
            self.device
                .device()
                .memset(&*self.stream, dst, value, bytes)
        }
    }

    pub(crate) fn copy_on_device(&self, dst: u64, src: u64, bytes: usize) -> Result<()> {
        if bytes == 0 {
            return Ok(());
        }
        // SAFETY: as in `fill_bytes`.
        unsafe {
            self.device
                .device()
                .memcpy_dtod(&*self.stream, dst, src, bytes)
        }
    }

    /// Frees a buffer's allocation once this rank's queued work has finished; leaks it if
    /// that work does not finish.
    pub(crate) fn release(&self, addr: u64) {
        if let Err(err) = self.wait_stream() {
            tracing::warn!(rank = self.rank, %err, "leaking a buffer: queued work did not finish");
            self.world.mark_leak();
            return;
        }
        // SAFETY: the buffer is gone and no queued work remains.
        if let Err(err) = unsafe { self.device.device().free(addr) } {
            tracing::warn!(rank = self.rank, %err, "freeing a buffer");
        }
    }

    pub(crate) fn free_symmetric(
        &self,
        provider: ProviderKind,
        map: &SymmetricAddressMap,
    ) -> Result<()> {
        if let Err(err) = self.wait_stream() {
            self.world.mark_leak();
            return Err(err);
        }
        self.provider(provider)
            .free(map)
            .map_err(|e| e.on_rank(self.rank))
    }
}

impl Drop for Iris {
    fn drop(&mut self) {
        if let Err(err) = self.wait_stream() {
            tracing::warn!(rank = self.rank, %err, "a rank's work did not finish");
            self.world.mark_leak();
            self.shmem.abandon();
            return;
        }
        if let Err(err) = self
            .peer_errors
            .take(self.device.device(), &*self.stream, self.rank)
        {
            tracing::warn!(rank = self.rank, %err, "unreported when the context ended");
        }
        // SAFETY: the rank's work has finished; the tables naming the word are only read
        // by kernels of this context.
        if let Err(err) = unsafe { self.peer_errors.free(self.device.device()) } {
            tracing::warn!(rank = self.rank, %err, "freeing the error word");
        }
        self.shmem.finish();
    }
}

impl fmt::Debug for Iris {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Iris")
            .field("id", &self.id)
            .field("rank", &self.rank)
            .field("world_size", &self.world.size)
            .field("device", self.device.info())
            .finish_non_exhaustive()
    }
}
