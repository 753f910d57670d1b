//! `GpuDevice`: the [`Device`] operations of a GPU, written once over a [`GpuApi`].

use std::ffi::c_void;
use std::os::fd::{BorrowedFd, OwnedFd};

use iris_device::abi::KernelUnit;

use super::api::GpuApi;
use super::module::GpuModule;
use super::stream::{GpuEvent, GpuStream};
use super::wait::COPY_TIMEOUT;
use crate::error::{Error, Result};
use crate::{
    downcast, Device, DeviceInfo, Event, LaunchDims, MemoryKind, Module, Stream, TileShape,
};

/// One GPU: its context (made current on the calling thread before every call), its
/// description, and the vendor's state.
pub struct GpuDevice<A: GpuApi> {
    api: A,
    ctx: A::Context,
    info: DeviceInfo,
}

impl<A: GpuApi> GpuDevice<A> {
    /// Opens device `ordinal`.
    pub(crate) fn open(ordinal: usize) -> Result<Self> {
        let (api, ctx, info) = A::open(ordinal)?;
        Ok(Self { api, ctx, info })
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
        A::make_current(&self.ctx)?;
        // SAFETY: the device is current.
        match unsafe { A::mem_alloc(bytes, kind) } {
            Ok(0) => Err(oom("the runtime returned a null pointer".into())),
            Ok(addr) => Ok(addr),
            Err(reason) => Err(oom(reason)),
        }
    }

    unsafe fn free(&self, addr: u64) -> Result<()> {
        A::make_current(&self.ctx)?;
        // SAFETY: per the trait's contract, `addr` came from `alloc` on this device.
        unsafe { A::mem_free(addr) }
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
        Ok(Box::new(GpuStream::<A>::new(self.ctx.clone())?))
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
