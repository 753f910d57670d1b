//! One CUDA device: its primary context and the [`Device`] operations on it.

use std::ffi::c_void;
use std::sync::Arc;

use cudarc::driver::sys;
use iris_device::abi::KernelUnit;

use super::context::PrimaryContext;
use super::driver::check;
use super::info::{device_handle, query};
use super::memory;
use super::module::CudaModule;
use super::stream::{CudaEvent, CudaStream};
use crate::backend::{
    downcast, BackendKind, Device, DeviceInfo, Event, LaunchDims, MemoryKind, Module, Stream,
};
use crate::error::{Error, Result};

/// A CUDA device, driven through its primary context, made current on the calling thread
/// before every call.
pub struct CudaDevice {
    ctx: Arc<PrimaryContext>,
    info: DeviceInfo,
    capability: (u32, u32),
}

impl CudaDevice {
    /// Opens device `ordinal`: retains its primary context and reads its description.
    pub(super) fn open(ordinal: usize) -> Result<CudaDevice> {
        let handle = device_handle(ordinal)?;
        let (info, capability) = query(ordinal, handle)?;
        let ctx = Arc::new(PrimaryContext::retain(handle)?);
        Ok(CudaDevice {
            ctx,
            info,
            capability,
        })
    }

    /// The compute capability, (major, minor).
    pub fn compute_capability(&self) -> (u32, u32) {
        self.capability
    }

    /// Makes the device's primary context current on the calling thread, for code that
    /// calls the driver itself next to this backend.
    pub fn make_current(&self) -> Result<()> {
        self.ctx.make_current()
    }

    pub(super) fn context(&self) -> &PrimaryContext {
        &self.ctx
    }

    /// The stream as this backend's, created on this device.
    fn own_stream<'a>(&self, stream: &'a dyn Stream) -> Result<&'a CudaStream> {
        let stream: &CudaStream = downcast(stream.as_any(), BackendKind::Cuda, "stream")?;
        if stream.context().id() != self.ctx.id() {
            return Err(foreign("stream", self.info.ordinal));
        }
        Ok(stream)
    }
}

fn foreign(what: &'static str, ordinal: usize) -> Error {
    Error::Driver {
        backend: BackendKind::Cuda,
        call: what,
        message: format!("a {what} of another device was passed to CUDA device {ordinal}"),
    }
}

impl Device for CudaDevice {
    fn info(&self) -> &DeviceInfo {
        &self.info
    }

    fn alloc(&self, bytes: usize, _kind: MemoryKind) -> Result<u64> {
        // Plain device memory serves both kinds: peers reach it through peer access, other
        // processes through IPC handles.
        memory::alloc(&self.ctx, self.info.ordinal, bytes)
    }

    unsafe fn free(&self, addr: u64) -> Result<()> {
        // SAFETY: per the trait's contract.
        unsafe { memory::free(&self.ctx, addr) }
    }

    unsafe fn memcpy_htod(&self, stream: &dyn Stream, dst: u64, src: &[u8]) -> Result<()> {
        let stream = self.own_stream(stream)?;
        // SAFETY: per the trait's contract.
        unsafe { memory::htod(stream, dst, src) }
    }

    unsafe fn memcpy_dtoh(&self, stream: &dyn Stream, dst: &mut [u8], src: u64) -> Result<()> {
        let stream = self.own_stream(stream)?;
        // SAFETY: per the trait's contract.
        unsafe { memory::dtoh(stream, dst, src) }
    }

    unsafe fn memcpy_dtod(
        &self,
        stream: &dyn Stream,
        dst: u64,
        src: u64,
        bytes: usize,
    ) -> Result<()> {
        let stream = self.own_stream(stream)?;
        // SAFETY: per the trait's contract.
        unsafe { memory::dtod(stream, dst, src, bytes) }
    }

    unsafe fn memset(&self, stream: &dyn Stream, dst: u64, value: u8, bytes: usize) -> Result<()> {
        let stream = self.own_stream(stream)?;
        // SAFETY: per the trait's contract.
        unsafe { memory::set(stream, dst, value, bytes) }
    }

    fn create_stream(&self) -> Result<Box<dyn Stream>> {
        Ok(Box::new(CudaStream::new(self.ctx.clone())?))
    }

    fn create_event(&self) -> Result<Box<dyn Event>> {
        Ok(Box::new(CudaEvent::new(self.ctx.clone())?))
    }

    fn load_module(&self, unit: &'static KernelUnit) -> Result<Box<dyn Module>> {
        Ok(Box::new(CudaModule::load(
            self.ctx.clone(),
            unit,
            self.capability,
        )?))
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
        let module: &CudaModule = downcast(module.as_any(), BackendKind::Cuda, "module")?;
        if module.context().id() != self.ctx.id() {
            return Err(foreign("module", self.info.ordinal));
        }
        let function = module.function(kernel)?;
        let params = if args.is_empty() {
            std::ptr::null_mut()
        } else {
            args.as_mut_ptr()
        };
        self.ctx.make_current()?;
        let [gx, gy, gz] = dims.grid;
        let [bx, by, bz] = dims.block;
        // SAFETY: a live function and stream of this context; the caller vouches for the
        // dimensions and the argument slots, which the driver copies during the call.
        check("cuLaunchKernel", unsafe {
            sys::cuLaunchKernel(
                function,
                gx,
                gy,
                gz,
                bx,
                by,
                bz,
                dims.dynamic_shared_bytes,
                stream.raw(),
                params,
                std::ptr::null_mut(),
            )
        })
    }
}
