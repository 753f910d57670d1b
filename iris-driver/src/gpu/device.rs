//! `GpuDevice`: the [`Device`] operations of a GPU, written once over a [`GpuApi`].

use std::collections::HashSet;
use std::ffi::c_void;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::sync::{Arc, Mutex};

use iris_device::abi::KernelUnit;

use super::api::GpuApi;
use super::module::GpuModule;
use super::stream::{GpuEvent, GpuStream};
use super::wait::COPY_TIMEOUT;
use crate::error::{Error, Result};
use crate::sync::lock;
use crate::{
    downcast, Device, DeviceInfo, Event, HostWord, LaunchDims, MemoryKind, Module, Stream,
    TileShape,
};

/// Bytes of the scratch word a new stream's first submission writes.
const SCRATCH_BYTES: usize = 8;

/// One GPU: its context (made current on the calling thread before every call), its
/// description, the vendor's state, and what allocates without waiting for kernels.
///
/// Ordinary device memory ([`MemoryKind::Device`]) comes from a pool of the device's own
/// (`cuMemAllocFromPoolAsync`, `hipMallocFromPoolAsync`), allocated on a stream no kernel
/// runs on (the staging stream), and goes back to it with a stream-ordered free
/// (`cuMemFreeAsync`): neither waits for a kernel, where `cuMemFree` waits for the whole
/// device (a rank freeing a buffer would wait for a peer's kernel that waits for this
/// rank). Fresh memory is written on the staging stream too.
pub struct GpuDevice<A: GpuApi> {
    api: A,
    ctx: A::Context,
    info: DeviceInfo,
    staging: Mutex<Option<Arc<Staging<A>>>>,
    /// The live allocations of the pool.
    pooled: Mutex<HashSet<u64>>,
}

/// The pool and the staging stream of a device (made on first use).
struct Staging<A: GpuApi> {
    pool: u64,
    stream: GpuStream<A>,
    /// One user of the staging stream at a time (its waits cover only its own work).
    turn: Mutex<()>,
    /// A word of the pool that a new stream's first copy writes (see
    /// [`GpuDevice::first_submission`]).
    scratch: u64,
}

impl<A: GpuApi> GpuDevice<A> {
    /// Opens device `ordinal`.
    pub(crate) fn open(ordinal: usize) -> Result<Self> {
        let (api, ctx, info) = A::open(ordinal)?;
        Ok(Self {
            api,
            ctx,
            info,
            staging: Mutex::new(None),
            pooled: Mutex::new(HashSet::new()),
        })
    }

    /// The pool and the staging stream, made on first use.
    fn staging(&self) -> Result<Arc<Staging<A>>> {
        let mut slot = lock(&self.staging);
        if let Some(staging) = &*slot {
            return Ok(Arc::clone(staging));
        }
        A::make_current(&self.ctx)?;
        // SAFETY: the device is current.
        let pool = unsafe { A::pool_create(self.info.ordinal) }?;
        let stream = GpuStream::<A>::new(self.ctx.clone(), false)?;
        // SAFETY: the pool and stream of this device, which is current.
        let scratch =
            unsafe { A::pool_alloc(pool, SCRATCH_BYTES, stream.raw()) }.map_err(|reason| {
                Error::Driver {
                    backend: A::KIND,
                    call: "pool allocation",
                    message: reason,
                }
            })?;
        // The staging stream's first submission, with it its first wait.
        Self::first_submission(&stream, scratch)?;
        let staging = Arc::new(Staging {
            pool,
            stream,
            turn: Mutex::new(()),
            scratch,
        });
        *slot = Some(Arc::clone(&staging));
        Ok(staging)
    }

    /// A new stream (`urgent`: of the device's greatest priority), used once
    /// ([`first_submission`](Self::first_submission)).
    fn used_stream(&self, urgent: bool) -> Result<Box<dyn Stream>> {
        let stream = GpuStream::<A>::new(self.ctx.clone(), urgent)?;
        let staging = self.staging()?;
        Self::first_submission(&stream, staging.scratch)?;
        Ok(Box::new(stream))
    }

    /// Makes `stream`'s first submission (a copy of 8 bytes to `scratch`) and waits for it.
    ///
    /// Measured on CUDA 13 (H200): the first submission to a new stream, made while a
    /// kernel of another stream of the context runs, does not start until that kernel
    /// ends. A rank whose first launch comes while a peer's kernel waits for that launch
    /// then deadlocks until the wait gives up (`tests/ccl.rs`'s barriers failed 6 of 8 runs
    /// this way; with every rank's stream used once when it was made, 8 of 8 passed). So
    /// every stream iris makes is used once as it is made, before the world it serves
    /// starts running kernels.
    fn first_submission(stream: &GpuStream<A>, scratch: u64) -> Result<()> {
        let zeros = [0u8; SCRATCH_BYTES];
        A::make_current(stream.context())?;
        // SAFETY: `scratch` is a live pool allocation of `SCRATCH_BYTES` bytes that only
        // these copies write (same bytes) and nothing reads; the wait below keeps `zeros`
        // borrowed until the copy is done.
        unsafe { A::memcpy_htod_async(scratch, zeros.as_ptr(), zeros.len(), stream.raw()) }?;
        stream.wait(COPY_TIMEOUT)
    }

    /// `bytes` from the pool, ready for any stream.
    fn pool_alloc(&self, bytes: usize) -> std::result::Result<u64, String> {
        let staging = self.staging().map_err(|e| e.to_string())?;
        let _turn = lock(&staging.turn);
        A::make_current(&self.ctx).map_err(|e| e.to_string())?;
        // SAFETY: the pool and stream of this device, which is current.
        let addr = unsafe { A::pool_alloc(staging.pool, bytes, staging.stream.raw()) }?;
        // The staging stream holds only allocations and copies: this waits for no kernel.
        staging
            .stream
            .wait(COPY_TIMEOUT)
            .map_err(|e| e.to_string())?;
        lock(&self.pooled).insert(addr);
        Ok(addr)
    }

    /// Whether `addr` is a live allocation of the pool (and forgets it if `take`).
    fn is_pooled(&self, addr: u64, take: bool) -> bool {
        let mut pooled = lock(&self.pooled);
        if take {
            pooled.remove(&addr)
        } else {
            pooled.contains(&addr)
        }
    }

    /// The vendor's state of this device.
    pub(crate) fn api(&self) -> &A {
        &self.api
    }

    /// The device's context.
    pub(crate) fn context(&self) -> &A::Context {
        &self.ctx
    }

    /// The stream as this device's.
    fn own_stream<'a>(&self, stream: &'a dyn Stream) -> Result<&'a GpuStream<A>> {
        let stream: &GpuStream<A> = downcast(stream.as_any(), A::KIND, "stream")?;
        if A::context_id(stream.context()) != A::context_id(&self.ctx) {
            return Err(self.foreign("stream"));
        }
        Ok(stream)
    }

    /// The module as one loaded on this device.
    fn own_module<'a>(&self, module: &'a dyn Module) -> Result<&'a GpuModule<A>> {
        let module: &GpuModule<A> = downcast(module.as_any(), A::KIND, "module")?;
        if A::context_id(module.context()) != A::context_id(&self.ctx) {
            return Err(self.foreign("module"));
        }
        Ok(module)
    }

    fn foreign(&self, what: &'static str) -> Error {
        Error::Driver {
            backend: A::KIND,
            call: what,
            message: format!(
                "a {what} of another device was passed to {} device {}",
                A::KIND,
                self.info.ordinal
            ),
        }
    }

    /// Queues `copy` on the stream after making the device current; with `wait`, returns
    /// once the stream is done (so a host buffer the copy uses may be released).
    fn on_stream(
        &self,
        stream: &dyn Stream,
        wait: bool,
        copy: impl FnOnce(A::Stream) -> Result<()>,
    ) -> Result<()> {
        let stream = self.own_stream(stream)?;
        A::make_current(&self.ctx)?;
        copy(stream.raw())?;
        if wait {
            stream.wait(COPY_TIMEOUT)
        } else {
            Ok(())
        }
    }
}

impl<A: GpuApi> Device for GpuDevice<A> {
    fn info(&self) -> &DeviceInfo {
        &self.info
    }

    fn make_current(&self) -> Result<()> {
        A::make_current(&self.ctx)
    }

    fn alloc(&self, bytes: usize, kind: MemoryKind) -> Result<u64> {
        let oom = |reason: String| Error::OutOfMemory {
            backend: A::KIND,
            ordinal: self.info.ordinal,
            bytes,
            reason,
        };
        if bytes == 0 {
            return Err(oom("a zero-byte allocation was asked for".into()));
        }
        let allocated = match kind {
            MemoryKind::Device => self.pool_alloc(bytes),
            MemoryKind::Symmetric => {
                A::make_current(&self.ctx)?;
                // SAFETY: the device is current.
                unsafe { A::mem_alloc(bytes, kind) }
            }
        };
        match allocated {
            Ok(0) => Err(oom("the runtime returned a null pointer".into())),
            Ok(addr) => Ok(addr),
            Err(reason) => Err(oom(reason)),
        }
    }

    unsafe fn free(&self, addr: u64) -> Result<()> {
        if self.is_pooled(addr, true) {
            let staging = self.staging()?;
            let _turn = lock(&staging.turn);
            A::make_current(&self.ctx)?;
            // SAFETY: a pool allocation nothing uses any more (the trait's contract).
            return unsafe { A::free_async(addr, staging.stream.raw()) };
        }
        A::make_current(&self.ctx)?;
        // SAFETY: per the trait's contract, `addr` came from `alloc` on this device.
        unsafe { A::mem_free(addr) }
    }

    unsafe fn free_after(&self, addr: u64, stream: &dyn Stream) -> Result<()> {
        let stream = self.own_stream(stream)?;
        if !self.is_pooled(addr, true) {
            return Err(Error::InvalidAddress {
                addr,
                bytes: 0,
                reason: "not an allocation of ordinary device memory (`alloc` with MemoryKind::Device) on this device".into(),
            });
        }
        A::make_current(&self.ctx)?;
        // SAFETY: a pool allocation whose last users are ordered before the stream's end
        // (the trait's contract).
        unsafe { A::free_async(addr, stream.raw()) }
    }

    unsafe fn write_fresh(&self, dst: u64, src: &[u8]) -> Result<()> {
        if src.is_empty() {
            return Ok(());
        }
        let staging = self.staging()?;
        let _turn = lock(&staging.turn);
        A::make_current(&self.ctx)?;
        // SAFETY: the range is fresh memory (the caller's promise); the wait below keeps
        // `src` borrowed until the copy is done.
        unsafe { A::memcpy_htod_async(dst, src.as_ptr(), src.len(), staging.stream.raw()) }?;
        staging.stream.wait(COPY_TIMEOUT)
    }

    unsafe fn fill_fresh(&self, dst: u64, value: u8, bytes: usize) -> Result<()> {
        if bytes == 0 {
            return Ok(());
        }
        let staging = self.staging()?;
        let _turn = lock(&staging.turn);
        A::make_current(&self.ctx)?;
        // SAFETY: the range is fresh memory (the caller's promise).
        unsafe { A::memset_async(dst, value, bytes, staging.stream.raw()) }?;
        staging.stream.wait(COPY_TIMEOUT)
    }

    fn alloc_host_word(&self) -> Result<HostWord> {
        A::make_current(&self.ctx)?;
        // SAFETY: the device is current.
        let (host, device) = unsafe { A::host_alloc_mapped(8) }?;
        // SAFETY: 8 bytes of host memory just allocated, page aligned.
        unsafe { std::ptr::write_volatile(host as *mut u64, 0) };
        Ok(HostWord { host, device })
    }

    unsafe fn free_host_word(&self, word: HostWord) -> Result<()> {
        A::make_current(&self.ctx)?;
        // SAFETY: made by `alloc_host_word` (the caller's promise).
        unsafe { A::host_free(word.host) }
    }

    unsafe fn memcpy_htod(&self, stream: &dyn Stream, dst: u64, src: &[u8]) -> Result<()> {
        if src.is_empty() {
            return Ok(());
        }
        self.on_stream(stream, true, |s| {
            // SAFETY: per the trait's contract; the wait keeps `src` borrowed until done.
            unsafe { A::memcpy_htod_async(dst, src.as_ptr(), src.len(), s) }
        })
    }

    unsafe fn memcpy_dtoh(&self, stream: &dyn Stream, dst: &mut [u8], src: u64) -> Result<()> {
        if dst.is_empty() {
            return Ok(());
        }
        let (ptr, len) = (dst.as_mut_ptr(), dst.len());
        self.on_stream(stream, true, |s| {
            // SAFETY: per the trait's contract; the wait keeps `dst` borrowed until done.
            unsafe { A::memcpy_dtoh_async(ptr, src, len, s) }
        })
    }

    unsafe fn memcpy_dtod(
        &self,
        stream: &dyn Stream,
        dst: u64,
        src: u64,
        bytes: usize,
    ) -> Result<()> {
        if bytes == 0 {
            return Ok(());
        }
        self.on_stream(stream, false, |s| {
            // SAFETY: per the trait's contract.
            unsafe { A::memcpy_dtod_async(dst, src, bytes, s) }
        })
    }

    unsafe fn memset(&self, stream: &dyn Stream, dst: u64, value: u8, bytes: usize) -> Result<()> {
        if bytes == 0 {
            return Ok(());
        }
        self.on_stream(stream, false, |s| {
            // SAFETY: per the trait's contract.
            unsafe { A::memset_async(dst, value, bytes, s) }
        })
    }

    fn create_stream(&self) -> Result<Box<dyn Stream>> {
        self.used_stream(false)
    }

    fn create_urgent_stream(&self) -> Result<Box<dyn Stream>> {
        self.used_stream(true)
    }

    unsafe fn wrap_stream(&self, raw: *mut std::ffi::c_void) -> Result<Box<dyn Stream>> {
        // SAFETY: the caller's promise (a live stream of this device that outlives it).
        Ok(Box::new(unsafe {
            GpuStream::<A>::borrowed(self.ctx.clone(), raw)
        }))
    }

    fn create_event(&self) -> Result<Box<dyn Event>> {
        Ok(Box::new(GpuEvent::<A>::new(self.ctx.clone())?))
    }

    fn load_module(&self, unit: &'static KernelUnit) -> Result<Box<dyn Module>> {
        Ok(Box::new(GpuModule::load(&self.api, &self.ctx, unit)?))
    }

    unsafe fn launch(
        &self,
        stream: &dyn Stream,
        module: &dyn Module,
        kernel: usize,
        dims: LaunchDims,
        args: &mut [*mut c_void],
    ) -> Result<()> {
        let stream = self.own_stream(stream)?;
        let module = self.own_module(module)?;
        let function = module.function(kernel)?;
        let mut dims = dims;
        dims.dynamic_shared_bytes += module.dynamic_shared_bytes(kernel);
        let params = if args.is_empty() {
            std::ptr::null_mut()
        } else {
            args.as_mut_ptr()
        };
        A::make_current(&self.ctx)?;
        // SAFETY: a live function and stream of this device; the caller vouches for the
        // dimensions and the argument slots, which the runtime copies during the call.
        unsafe { A::launch(function, dims, stream.raw(), params) }
    }

    fn max_active_blocks_per_multiprocessor(
        &self,
        module: &dyn Module,
        kernel: usize,
        block_threads: u32,
        dynamic_shared_bytes: u32,
    ) -> Result<u32> {
        let module = self.own_module(module)?;
        let function = module.function(kernel)?;
        let dynamic_shared_bytes = dynamic_shared_bytes + module.dynamic_shared_bytes(kernel);
        A::make_current(&self.ctx)?;
        // SAFETY: a live function of this device.
        unsafe { A::max_active_blocks(function, block_threads, dynamic_shared_bytes) }
    }

    fn tile_map(&self, shape: &TileShape) -> Result<Option<[u64; 16]>> {
        A::make_current(&self.ctx)?;
        A::tile_map(&self.info, shape)
    }

    fn alloc_exportable(&self, bytes: usize, kind: MemoryKind) -> Result<u64> {
        self.api
            .alloc_exportable(&self.ctx, &self.info, bytes, kind)
    }

    fn export_fd(&self, addr: u64) -> Result<OwnedFd> {
        self.api.export_fd(&self.ctx, addr)
    }

    fn import_fd(&self, fd: BorrowedFd<'_>, bytes: usize, kind: MemoryKind) -> Result<u64> {
        self.api.import_fd(&self.ctx, fd, bytes, kind)
    }

    unsafe fn free_shared(&self, addr: u64) -> Result<()> {
        // SAFETY: per the trait's contract.
        unsafe { self.api.free_shared(&self.ctx, addr) }
    }

    fn supports_shared_memory(&self) -> bool {
        self.api.supports_shared_memory(&self.ctx)
    }
}
