//! One CUDA device: its primary context and the [`Device`] operations on it.

use std::ffi::c_void;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::sync::Arc;

use cudarc::driver::sys;
use iris_device::abi::KernelUnit;

use super::context::PrimaryContext;
use super::driver::check;
use super::info::{device_handle, query};
use super::memory;
use super::module::CudaModule;
use super::shared::{SharedApi, SharedMemory, IPC_HANDLE_BYTES};
use super::stream::{CudaEvent, CudaStream};
use crate::error::{Error, Result};
use crate::{
    downcast, BackendKind, Device, DeviceInfo, Event, LaunchDims, MemoryKind, Module, Stream,
};

/// A CUDA device, driven through its primary context, made current on the calling thread
/// before every call.
pub struct CudaDevice {
    ctx: Arc<PrimaryContext>,
    info: DeviceInfo,
    capability: (u32, u32),
    shared: SharedMemory,
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
            shared: SharedMemory::new(),
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

    /// The API [`alloc_exportable`](Device::alloc_exportable) uses on this device: the
    /// virtual-memory API where the device supports POSIX file-descriptor handles, else the
    /// legacy IPC API. Errors with [`Error::Unsupported`] when neither is usable.
    pub fn shared_api(&self) -> Result<SharedApi> {
        self.shared.default_api(&self.ctx)
    }

    /// Allocates `bytes` (> 0) of memory other processes can map, with `api` (see
    /// [`Device::alloc_exportable`], which picks the API itself). A [`SharedApi::Vmm`]
    /// allocation is rounded up to the driver's granularity (2 MiB on current GPUs); a
    /// [`SharedApi::Ipc`] one is a plain `cuMemAlloc` allocation whose handle
    /// [`ipc_handle`](CudaDevice::ipc_handle) gives. Either is exported with
    /// [`Device::export_fd`] and released with [`Device::free_shared`].
    pub fn alloc_exportable_with(&self, bytes: usize, api: SharedApi) -> Result<u64> {
        self.shared.alloc(&self.ctx, self.info.ordinal, bytes, api)
    }

    /// The 64-byte legacy IPC handle (`cuIpcGetMemHandle`) of the `cuMemAlloc` allocation
    /// that starts at `addr` (one of [`SharedApi::Ipc`], or of [`Device::alloc`]), to send
    /// as bytes to another process, which opens it with
    /// [`open_ipc_handle`](CudaDevice::open_ipc_handle).
    pub fn ipc_handle(&self, addr: u64) -> Result<[u8; IPC_HANDLE_BYTES]> {
        self.shared.ipc_handle(&self.ctx, addr)
    }

    /// Maps the allocation another process exported as the legacy IPC handle `handle`
    /// (`cuIpcOpenMemHandle`) on this device and returns its device address, released
    /// with [`Device::free_shared`]. A process cannot open its own handles.
    pub fn open_ipc_handle(&self, handle: &[u8; IPC_HANDLE_BYTES]) -> Result<u64> {
        self.shared.open_ipc_handle(&self.ctx, handle)
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

    fn make_current(&self) -> Result<()> {
        self.ctx.make_current()
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

    fn max_active_blocks_per_multiprocessor(
        &self,
        module: &dyn Module,
        kernel: usize,
        block_threads: u32,
        dynamic_shared_bytes: u32,
    ) -> Result<u32> {
        let module: &CudaModule = downcast(module.as_any(), BackendKind::Cuda, "module")?;
        if module.context().id() != self.ctx.id() {
            return Err(foreign("module", self.info.ordinal));
        }
        let function = module.function(kernel)?;
        self.ctx.make_current()?;
        let mut blocks = 0;
        // SAFETY: a live function of this context and a valid out-pointer.
        check("cuOccupancyMaxActiveBlocksPerMultiprocessor", unsafe {
            sys::cuOccupancyMaxActiveBlocksPerMultiprocessor(
                &mut blocks,
                function,
                i32::try_from(block_threads).unwrap_or(i32::MAX),
                dynamic_shared_bytes as usize,
            )
        })?;
        Ok(u32::try_from(blocks).unwrap_or(0))
    }

    /// Uses [`shared_api`](CudaDevice::shared_api); when `cuMemCreate` fails for a reason
    /// other than memory (a driver or container without file-descriptor export), falls
    /// back to the legacy IPC API if the driver has it.
    fn alloc_exportable(&self, bytes: usize, _kind: MemoryKind) -> Result<u64> {
        // CUDA memory is coherent for peers either way: the kind changes nothing here.
        match self.shared_api()? {
            SharedApi::Vmm => match self.alloc_exportable_with(bytes, SharedApi::Vmm) {
                Err(Error::Driver {
                    call: "cuMemCreate",
                    message,
                    ..
                }) if self.shared.ipc_available(&self.ctx) => {
                    tracing::debug!(%message, "cuMemCreate failed; using the legacy IPC API");
                    self.alloc_exportable_with(bytes, SharedApi::Ipc)
                }
                other => other,
            },
            SharedApi::Ipc => self.alloc_exportable_with(bytes, SharedApi::Ipc),
        }
    }

    fn export_fd(&self, addr: u64) -> Result<OwnedFd> {
        self.shared.export_fd(&self.ctx, addr)
    }

    fn import_fd(&self, fd: BorrowedFd<'_>, bytes: usize, _kind: MemoryKind) -> Result<u64> {
        self.shared.import_fd(&self.ctx, fd, bytes)
    }

    unsafe fn free_shared(&self, addr: u64) -> Result<()> {
        // SAFETY: per the trait's contract.
        unsafe { self.shared.free(&self.ctx, addr) }
    }

    fn supports_shared_memory(&self) -> bool {
        self.shared.supported(&self.ctx)
    }
}
