//! One HIP device and the [`Device`] operations on it.

use std::ffi::c_void;
use std::os::fd::{BorrowedFd, OwnedFd};

use cubecl_hip_sys as hip;
use iris_device::abi::KernelUnit;

use super::info::query;
use super::memory;
use super::module::HipModule;
use super::runtime::{check, set_device};
use super::shared::SharedMemory;
use super::stream::{HipEvent, HipStream};
use crate::error::{Error, Result};
use crate::{
    downcast, BackendKind, Device, DeviceInfo, Event, LaunchDims, MemoryKind, Module, Stream,
};

/// A HIP device, selected (`hipSetDevice`) on the calling thread before every call.
pub struct HipDevice {
    ordinal: i32,
    info: DeviceInfo,
    gcn_arch_name: String,
    shared: SharedMemory,
}

impl HipDevice {
    /// Opens device `ordinal` and reads its description.
    pub(super) fn open(ordinal: usize) -> Result<HipDevice> {
        let ordinal = i32::try_from(ordinal).unwrap_or(i32::MAX);
        let (info, gcn_arch_name) = query(ordinal)?;
        Ok(HipDevice {
            ordinal,
            info,
            gcn_arch_name,
            shared: SharedMemory::new(),
        })
    }

    /// The full `gcnArchName`, features included (`gfx942:sramecc+:xnack-`).
    pub fn gcn_arch_name(&self) -> &str {
        &self.gcn_arch_name
    }

    /// Selects this device on the calling thread, for code that calls HIP itself next to
    /// this backend.
    pub fn make_current(&self) -> Result<()> {
        set_device(self.ordinal)
    }

    /// The stream as this backend's, created on this device.
    fn own_stream<'a>(&self, stream: &'a dyn Stream) -> Result<&'a HipStream> {
        let stream: &HipStream = downcast(stream.as_any(), BackendKind::Hip, "stream")?;
        if stream.ordinal() != self.ordinal {
            return Err(foreign("stream", self.info.ordinal));
        }
        Ok(stream)
    }
}

fn foreign(what: &'static str, ordinal: usize) -> Error {
    Error::Driver {
        backend: BackendKind::Hip,
        call: what,
        message: format!("a {what} of another device was passed to HIP device {ordinal}"),
    }
}

impl Device for HipDevice {
    fn info(&self) -> &DeviceInfo {
        &self.info
    }

    fn make_current(&self) -> Result<()> {
        set_device(self.ordinal)
    }

    fn alloc(&self, bytes: usize, kind: MemoryKind) -> Result<u64> {
        memory::alloc(self.ordinal, bytes, kind)
    }

    unsafe fn free(&self, addr: u64) -> Result<()> {
        // SAFETY: per the trait's contract.
        unsafe { memory::free(self.ordinal, addr) }
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
        Ok(Box::new(HipStream::new(self.ordinal)?))
    }

    fn create_event(&self) -> Result<Box<dyn Event>> {
        Ok(Box::new(HipEvent::new(self.ordinal)?))
    }

    fn load_module(&self, unit: &'static KernelUnit) -> Result<Box<dyn Module>> {
        Ok(Box::new(HipModule::load(
            self.ordinal,
            unit,
            &self.gcn_arch_name,
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
        let module: &HipModule = downcast(module.as_any(), BackendKind::Hip, "module")?;
        if module.ordinal() != self.ordinal {
            return Err(foreign("module", self.info.ordinal));
        }
        let function = module.function(kernel)?;
        let params = if args.is_empty() {
            std::ptr::null_mut()
        } else {
            args.as_mut_ptr()
        };
        set_device(self.ordinal)?;
        let [gx, gy, gz] = dims.grid;
        let [bx, by, bz] = dims.block;
        // SAFETY: a live function and stream of this device; the caller vouches for the
        // dimensions and the argument slots, which the runtime copies during the call.
        check("hipModuleLaunchKernel", unsafe {
            hip::hipModuleLaunchKernel(
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
        let module: &HipModule = downcast(module.as_any(), BackendKind::Hip, "module")?;
        if module.ordinal() != self.ordinal {
            return Err(foreign("module", self.info.ordinal));
        }
        let function = module.function(kernel)?;
        set_device(self.ordinal)?;
        let mut blocks = 0;
        // SAFETY: a live function of this device and a valid out-pointer.
        check(
            "hipModuleOccupancyMaxActiveBlocksPerMultiprocessor",
            unsafe {
                hip::hipModuleOccupancyMaxActiveBlocksPerMultiprocessor(
                    &mut blocks,
                    function,
                    i32::try_from(block_threads).unwrap_or(i32::MAX),
                    dynamic_shared_bytes as usize,
                )
            },
        )?;
        Ok(u32::try_from(blocks).unwrap_or(0))
    }

    /// `hipMemCreate` with a POSIX file-descriptor handle: fine-grained (uncached) memory
    /// for [`MemoryKind::Symmetric`], pinned device memory for [`MemoryKind::Device`]; the
    /// size is rounded up to the runtime's granularity.
    fn alloc_exportable(&self, bytes: usize, kind: MemoryKind) -> Result<u64> {
        self.shared.alloc(self.ordinal, bytes, kind)
    }

    fn export_fd(&self, addr: u64) -> Result<OwnedFd> {
        self.shared.export_fd(self.ordinal, addr)
    }

    fn import_fd(&self, fd: BorrowedFd<'_>, bytes: usize, _kind: MemoryKind) -> Result<u64> {
        // The exporter chose the memory's kind; the import maps it as it is.
        self.shared.import_fd(self.ordinal, fd, bytes)
    }

    unsafe fn free_shared(&self, addr: u64) -> Result<()> {
        // SAFETY: per the trait's contract.
        unsafe { self.shared.free(self.ordinal, addr) }
    }

    fn supports_shared_memory(&self) -> bool {
        self.shared.supported(self.ordinal)
    }
}
