//! `GpuApi`: what the generic GPU device needs of a vendor's runtime, one function per
//! driver call that CUDA and HIP share in shape.

use std::ffi::CStr;
use std::os::fd::{BorrowedFd, OwnedFd};

use iris_device::abi::{CodeObject, KernelUnit};

use crate::error::Result;
use crate::{BackendKind, DeviceInfo, LaunchDims, MemoryKind, TileShape};

/// The answer of a stream or event query.
#[derive(Debug)]
pub enum Query {
    /// Everything queued before has finished.
    Done,
    /// Work is still running.
    NotReady,
    /// The query failed (an asynchronous error of earlier work, or a bad handle).
    Failed(crate::Error),
}

/// One vendor's runtime, as the generic device drives it. An implementation is the
/// vendor's per-device state (which code objects it loads, its shared-memory support);
/// the handle functions are associated functions, called with the device made current.
///
/// # Safety
///
/// Every `unsafe fn` takes handles this API created and not yet destroyed, with the
/// caller having made their device current ([`GpuApi::make_current`]) first, and the
/// memory ranges it names valid until the work completes.
#[allow(clippy::missing_safety_doc)] // the contract above covers every function
pub trait GpuApi: super::Sealed + Sized + Send + Sync + 'static {
    /// The backend this is.
    const KIND: BackendKind;
    /// What makes calls target one device (CUDA: its retained primary context; HIP: its
    /// ordinal), held by everything made on the device.
    type Context: Clone + Send + Sync;
    /// A stream handle.
    type Stream: Copy;
    /// An event handle.
    type Event: Copy;
    /// A module handle.
    type Module: Copy;
    /// A kernel function handle.
    type Function: Copy;
    /// A captured graph's handle.
    type Graph: Copy;
    /// An instantiated (launchable) graph's handle.
    type GraphExec: Copy;

    /// A stream handle from the runtime's raw handle (another library's stream).
    fn stream_from_raw(raw: *mut std::ffi::c_void) -> Self::Stream;

    /// Opens device `ordinal`: its context, its description and the vendor's state.
    fn open(ordinal: usize) -> Result<(Self, Self::Context, DeviceInfo)>;

    /// Makes calls of the calling thread target the context's device.
    fn make_current(ctx: &Self::Context) -> Result<()>;

    /// An identifier of the context's device within the process, for ownership checks.
    fn context_id(ctx: &Self::Context) -> u64;

    /// The ordinal of the context's device, for messages.
    fn ordinal(ctx: &Self::Context) -> usize;

    /// A new non-blocking stream.
    unsafe fn stream_create() -> Result<Self::Stream>;
    /// A new non-blocking stream of the device's greatest priority: the block scheduler
    /// starts its kernels' blocks before the waiting blocks of streams of lower priority.
    unsafe fn stream_create_urgent() -> Result<Self::Stream>;
    /// Destroys a stream (its pending work still completes).
    unsafe fn stream_destroy(stream: Self::Stream) -> Result<()>;
    /// Whether the stream's queued work has finished.
    unsafe fn stream_query(stream: Self::Stream) -> Query;
    /// Whether the stream is capturing a graph.
    unsafe fn stream_is_capturing(stream: Self::Stream) -> Result<bool>;
    /// Starts capturing the stream's work into a graph (thread-local mode: calls of other
    /// threads do not disturb it).
    unsafe fn stream_begin_capture(stream: Self::Stream) -> Result<()>;
    /// Ends the capture and returns the graph.
    unsafe fn stream_end_capture(stream: Self::Stream) -> Result<Self::Graph>;
    /// Instantiates a graph for launching.
    unsafe fn graph_instantiate(graph: Self::Graph) -> Result<Self::GraphExec>;
    /// Launches an instantiated graph on a stream.
    unsafe fn graph_launch(exec: Self::GraphExec, stream: Self::Stream) -> Result<()>;
    /// Destroys a graph.
    unsafe fn graph_destroy(graph: Self::Graph) -> Result<()>;
    /// Destroys an instantiated graph.
    unsafe fn graph_exec_destroy(exec: Self::GraphExec) -> Result<()>;

    /// A new event with timing.
    unsafe fn event_create() -> Result<Self::Event>;
    /// Destroys an event.
    unsafe fn event_destroy(event: Self::Event) -> Result<()>;
    /// Records the event at the current end of the stream.
    unsafe fn event_record(event: Self::Event, stream: Self::Stream) -> Result<()>;
    /// Makes `stream`'s later work wait until `event`'s recorded work has finished,
    /// without the host waiting.
    unsafe fn stream_wait_event(stream: Self::Stream, event: Self::Event) -> Result<()>;
    /// Whether the work before the event has finished.
    unsafe fn event_query(event: Self::Event) -> Query;
    /// Milliseconds from `start` to `end`, both recorded and complete.
    unsafe fn event_elapsed_ms(start: Self::Event, end: Self::Event) -> Result<f32>;

    /// Allocates `bytes` (> 0) of `kind`; the error is the runtime's description.
    unsafe fn mem_alloc(bytes: usize, kind: MemoryKind) -> std::result::Result<u64, String>;
    /// Frees an allocation of [`mem_alloc`](GpuApi::mem_alloc).
    unsafe fn mem_free(addr: u64) -> Result<()>;
    /// A memory pool of the context's device for stream-ordered allocations: its memory
    /// stays in the pool when freed (no release threshold), and an allocation never
    /// makes its stream wait for another stream's free (no internal dependencies), so
    /// allocating never waits for a kernel. The handle as an integer.
    unsafe fn pool_create(ordinal: usize) -> Result<u64>;
    /// Allocates `bytes` (> 0) from `pool`, ordered on `stream`; the error is the
    /// runtime's description.
    unsafe fn pool_alloc(
        pool: u64,
        bytes: usize,
        stream: Self::Stream,
    ) -> std::result::Result<u64, String>;
    /// Returns an allocation of [`pool_alloc`](GpuApi::pool_alloc) to its pool once the
    /// work queued on `stream` so far has finished; does not wait.
    unsafe fn free_async(addr: u64, stream: Self::Stream) -> Result<()>;
    /// `bytes` of page-locked host memory mapped into every device's address space:
    /// (host address, device address).
    unsafe fn host_alloc_mapped(bytes: usize) -> Result<(u64, u64)>;
    /// Frees memory of [`host_alloc_mapped`](GpuApi::host_alloc_mapped).
    unsafe fn host_free(host: u64) -> Result<()>;
    /// Queues a copy of `bytes` from host `src` to device `dst`.
    unsafe fn memcpy_htod_async(
        dst: u64,
        src: *const u8,
        bytes: usize,
        stream: Self::Stream,
    ) -> Result<()>;
    /// Queues a copy of `bytes` from device `src` to host `dst`.
    unsafe fn memcpy_dtoh_async(
        dst: *mut u8,
        src: u64,
        bytes: usize,
        stream: Self::Stream,
    ) -> Result<()>;
    /// Queues a device-to-device copy.
    unsafe fn memcpy_dtod_async(
        dst: u64,
        src: u64,
        bytes: usize,
        stream: Self::Stream,
    ) -> Result<()>;
    /// Queues a byte fill.
    unsafe fn memset_async(dst: u64, value: u8, bytes: usize, stream: Self::Stream) -> Result<()>;

    /// Loads the code object of `unit` this device runs (which one, and how, is the
    /// vendor's: PTX by compute capability, HSACO by processor); returns the module, the
    /// object and memory the module reads while loaded.
    fn load_code_object(
        &self,
        ctx: &Self::Context,
        unit: &'static KernelUnit,
    ) -> Result<(Self::Module, &'static CodeObject, Vec<u64>)>;
    /// The function named `name` in a module; the error is the runtime's description.
    unsafe fn module_function(
        module: Self::Module,
        name: &CStr,
    ) -> std::result::Result<Self::Function, String>;
    /// Readies a function for launching now rather than at its first launch (CUDA's lazy
    /// loading); nothing by default.
    unsafe fn prepare_function(function: Self::Function) -> std::result::Result<(), String> {
        let _ = function;
        Ok(())
    }
    /// Lets `function` launch with up to `bytes` of dynamic shared memory (beyond the
    /// runtime's default limit); nothing by default.
    unsafe fn allow_dynamic_shared(
        function: Self::Function,
        bytes: u32,
    ) -> std::result::Result<(), String> {
        let _ = (function, bytes);
        Ok(())
    }
    /// Asks `function` to run with `percent` of the largest shared-memory size as shared
    /// memory, the rest as L1 (see `IRIS_SHARED_CARVEOUT`); nothing by default (AMD keeps
    /// the LDS apart from the caches).
    unsafe fn prefer_shared_carveout(
        function: Self::Function,
        percent: u32,
    ) -> std::result::Result<(), String> {
        let _ = (function, percent);
        Ok(())
    }
    /// Unloads a module.
    unsafe fn module_unload(module: Self::Module) -> Result<()>;

    /// Launches `function` on `stream` with the argument slots `params`.
    unsafe fn launch(
        function: Self::Function,
        dims: LaunchDims,
        stream: Self::Stream,
        params: *mut *mut core::ffi::c_void,
    ) -> Result<()>;
    /// Blocks of `function` resident per multiprocessor at this block size.
    unsafe fn max_active_blocks(
        function: Self::Function,
        block_threads: u32,
        dynamic_shared_bytes: u32,
    ) -> Result<u32>;

    /// The copy engine's description of a matrix (see
    /// [`Device::tile_map`](crate::Device::tile_map)); `None` by default.
    fn tile_map(info: &DeviceInfo, shape: &TileShape) -> Result<Option<[u64; 16]>> {
        let _ = (info, shape);
        Ok(None)
    }

    /// Allocates memory other processes can map (see
    /// [`Device::alloc_exportable`](crate::Device::alloc_exportable)).
    fn alloc_exportable(
        &self,
        ctx: &Self::Context,
        info: &DeviceInfo,
        bytes: usize,
        kind: MemoryKind,
    ) -> Result<u64>;
    /// A descriptor for an exportable allocation.
    fn export_fd(&self, ctx: &Self::Context, addr: u64) -> Result<OwnedFd>;
    /// Maps memory another process exported.
    fn import_fd(
        &self,
        ctx: &Self::Context,
        fd: BorrowedFd<'_>,
        bytes: usize,
        kind: MemoryKind,
    ) -> Result<u64>;
    /// Unmaps and releases exportable or imported memory.
    unsafe fn free_shared(&self, ctx: &Self::Context, addr: u64) -> Result<()>;
    /// Whether the shared-memory functions work on this device.
    fn supports_shared_memory(&self, ctx: &Self::Context) -> bool;
}
