//! The CPU device: host memory, stream threads, memfd-loaded code objects.

use core::ffi::c_void;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use iris_device::abi::{KernelSpec, KernelUnit, ParamKind};

use super::event::CpuEvent;
use super::grid::Grid;
use super::memory::HostAllocations;
use super::module::CpuModule;
use super::stream::CpuStream;
use super::HOST_TRIPLE;
use crate::error::{Error, Result};
use crate::{
    downcast, BackendKind, Device, DeviceInfo, Event, HostWord, LaunchDims, MemoryKind, Module,
    Stream,
};

/// The host as a device.
pub struct CpuDevice {
    info: DeviceInfo,
    memory: Arc<HostAllocations>,
    parallelism: usize,
}

impl CpuDevice {
    pub(crate) fn new() -> Self {
        let parallelism = std::thread::available_parallelism().map_or(1, |n| n.get());
        let info = DeviceInfo {
            backend: BackendKind::Cpu,
            ordinal: 0,
            uuid: [0; 16],
            name: cpu_model_name(),
            target: HOST_TRIPLE.to_string(),
            total_memory: physical_memory(),
            multiprocessors: u32::try_from(parallelism).unwrap_or(u32::MAX),
            max_threads_per_block: 1024,
            max_block_dims: [1024, 1024, 64],
            max_grid_dims: [i32::MAX as u32, 65535, 65535],
            work_queues: u32::MAX,
        };
        Self {
            info,
            memory: Arc::new(HostAllocations::default()),
            parallelism,
        }
    }

    fn stream<'a>(&self, stream: &'a dyn Stream) -> Result<&'a CpuStream> {
        downcast::<CpuStream>(stream.as_any(), BackendKind::Cpu, "stream")
    }
}

impl Device for CpuDevice {
    fn info(&self) -> &DeviceInfo {
        &self.info
    }

    fn alloc(&self, bytes: usize, _kind: MemoryKind) -> Result<u64> {
        self.memory.alloc(bytes)
    }

    unsafe fn free(&self, addr: u64) -> Result<()> {
        // SAFETY: forwarded from the caller.
        unsafe { self.memory.free(addr) }
    }

    unsafe fn free_after(&self, addr: u64, stream: &dyn Stream) -> Result<()> {
        self.memory.check(addr, 1)?;
        let memory = Arc::clone(&self.memory);
        self.stream(stream)?.submit(Box::new(move || {
            // SAFETY: the stream's earlier work, the last to use it, has finished (the
            // caller's promise covers later work).
            unsafe { memory.free(addr) }.map_err(|e| e.to_string())
        }))
    }

    unsafe fn write_fresh(&self, dst: u64, src: &[u8]) -> Result<()> {
        self.memory.check(dst, src.len())?;
        // SAFETY: the range is inside a live allocation (checked) that no work uses.
        unsafe { std::ptr::copy(src.as_ptr(), dst as *mut u8, src.len()) };
        Ok(())
    }

    unsafe fn fill_fresh(&self, dst: u64, value: u8, bytes: usize) -> Result<()> {
        self.memory.check(dst, bytes)?;
        // SAFETY: the range is inside a live allocation (checked) that no work uses.
        unsafe { std::ptr::write_bytes(dst as *mut u8, value, bytes) };
        Ok(())
    }

    fn alloc_host_word(&self) -> Result<HostWord> {
        let addr = Box::into_raw(Box::new(AtomicU64::new(0))) as u64;
        Ok(HostWord {
            host: addr,
            device: addr,
        })
    }

    unsafe fn free_host_word(&self, word: HostWord) -> Result<()> {
        // SAFETY: made by `alloc_host_word` from a box (the caller's promise), unused now.
        drop(unsafe { Box::from_raw(word.host as *mut AtomicU64) });
        Ok(())
    }

    fn alloc_exportable(&self, bytes: usize, _kind: MemoryKind) -> Result<u64> {
        self.memory.alloc_exportable(bytes)
    }

    fn export_fd(&self, addr: u64) -> Result<OwnedFd> {
        self.memory.export(addr)
    }

    fn import_fd(&self, fd: BorrowedFd<'_>, bytes: usize, _kind: MemoryKind) -> Result<u64> {
        self.memory.import(fd, bytes)
    }

    unsafe fn free_shared(&self, addr: u64) -> Result<()> {
        // SAFETY: forwarded from the caller.
        unsafe { self.memory.free_shared(addr) }
    }

    fn supports_shared_memory(&self) -> bool {
        true
    }

    unsafe fn memcpy_htod(&self, stream: &dyn Stream, dst: u64, src: &[u8]) -> Result<()> {
        self.memory.check(dst, src.len())?;
        self.stream(stream)?.synchronize(std::time::Duration::MAX)?;
        // SAFETY: the range is inside a live allocation (checked) and the stream is idle.
        unsafe { std::ptr::copy(src.as_ptr(), dst as *mut u8, src.len()) };
        Ok(())
    }

    unsafe fn memcpy_dtoh(&self, stream: &dyn Stream, dst: &mut [u8], src: u64) -> Result<()> {
        self.memory.check(src, dst.len())?;
        self.stream(stream)?.synchronize(std::time::Duration::MAX)?;
        // SAFETY: as in `memcpy_htod`.
        unsafe { std::ptr::copy(src as *const u8, dst.as_mut_ptr(), dst.len()) };
        Ok(())
    }

    unsafe fn memcpy_dtod(
        &self,
        stream: &dyn Stream,
        dst: u64,
        src: u64,
        bytes: usize,
    ) -> Result<()> {
        self.memory.check(dst, bytes)?;
        self.memory.check(src, bytes)?;
        self.stream(stream)?.submit(Box::new(move || {
            // SAFETY: both ranges are in live allocations, which the caller keeps live
            // until the copy completes.
            unsafe { std::ptr::copy(src as *const u8, dst as *mut u8, bytes) };
            Ok(())
        }))
    }

    unsafe fn memset(&self, stream: &dyn Stream, dst: u64, value: u8, bytes: usize) -> Result<()> {
        self.memory.check(dst, bytes)?;
        self.stream(stream)?.submit(Box::new(move || {
            // SAFETY: as in `memcpy_dtod`.
            unsafe { std::ptr::write_bytes(dst as *mut u8, value, bytes) };
            Ok(())
        }))
    }

    fn create_stream(&self) -> Result<Box<dyn Stream>> {
        Ok(Box::new(CpuStream::new()?))
    }

    fn create_event(&self) -> Result<Box<dyn Event>> {
        Ok(Box::new(CpuEvent::default()))
    }

    fn load_module(&self, unit: &'static KernelUnit) -> Result<Box<dyn Module>> {
        Ok(Box::new(CpuModule::load(unit)?))
    }

    unsafe fn launch(
        &self,
        stream: &dyn Stream,
        module: &dyn Module,
        kernel: usize,
        dims: LaunchDims,
        args: &mut [*mut c_void],
    ) -> Result<()> {
        let stream = self.stream(stream)?;
        let module = downcast::<CpuModule>(module.as_any(), BackendKind::Cpu, "module")?;
        let unit = module.unit();
        let (Some(spec), Some(&entry)) = (unit.kernels.get(kernel), module.entries.get(kernel))
        else {
            return Err(Error::NoSuchKernel {
                unit: unit.id,
                index: kernel,
                count: unit.kernels.len(),
            });
        };
        if args.len() != spec.launch_slot_count() {
            return Err(Error::InvalidArguments {
                kernel: spec.name.to_string(),
                reason: format!(
                    "{} argument slots passed, the kernel takes {}",
                    args.len(),
                    spec.launch_slot_count()
                ),
            });
        }
        // SAFETY: the caller passes one valid slot per parameter slot of the spec.
        let slots = unsafe { SlotCopy::new(launch_slot_kinds(spec), args) };
        let library = Arc::clone(&module.library);
        let shared_bytes = spec.shared_bytes as usize + dims.dynamic_shared_bytes as usize;
        let concurrent_block = spec.concurrent_threads;
        let parallelism = self.parallelism;
        let name = spec.name;
        let _span = tracing::trace_span!("cpu_launch", kernel = spec.name).entered();
        stream.submit(Box::new(move || {
            let _library = library;
            let mut pointers = slots.pointers();
            let grid = Grid {
                entry,
                grid: dims.grid,
                block: dims.block,
                shared_bytes,
                concurrent_block,
                args: &mut pointers,
            };
            grid.run(parallelism)
                .map_err(|e| format!("kernel `{name}`: {e}"))
        }))
    }

    /// Unbounded: the CPU's blocks are threads the operating system time-slices, so a
    /// waiting block never keeps another from running.
    fn max_active_blocks_per_multiprocessor(
        &self,
        module: &dyn Module,
        kernel: usize,
        _block_threads: u32,
        _dynamic_shared_bytes: u32,
    ) -> Result<u32> {
        let unit = module.unit();
        if kernel >= unit.kernels.len() {
            return Err(Error::NoSuchKernel {
                unit: unit.id,
                index: kernel,
                count: unit.kernels.len(),
            });
        }
        Ok(u32::MAX)
    }
}

/// The kinds of the slots a launch of `spec` passes: its parameters', then the trace's
/// hidden `u64`s when it records trace events.
fn launch_slot_kinds(spec: &KernelSpec) -> impl Iterator<Item = ParamKind> + '_ {
    let hidden = if spec.trace_events {
        iris_device::abi::trace::HIDDEN_SLOTS
    } else {
        0
    };
    spec.params
        .iter()
        .map(|p| p.kind)
        .chain(std::iter::repeat_n(
            ParamKind::Value { size: 8, align: 8 },
            hidden,
        ))
}

/// The contents of a launch's argument slots, copied so the launch can run after the
/// caller's slots are gone.
struct SlotCopy {
    /// 16-byte-aligned storage.
    data: Vec<u128>,
    /// Byte offset of each slot in `data`.
    offsets: Vec<usize>,
}

impl SlotCopy {
    /// # Safety
    /// `args` has one valid pointer per slot of `params`, each to as many bytes as the
    /// slot's size.
    unsafe fn new(params: impl Iterator<Item = ParamKind>, args: &[*mut c_void]) -> Self {
        let mut sizes = Vec::with_capacity(args.len());
        for kind in params {
            match kind {
                ParamKind::Value { size, .. } => sizes.push(size as usize),
                ParamKind::Pointer => sizes.push(8),
                ParamKind::Symmetric => sizes.extend([8, 8, 8]),
            }
        }
        let mut offsets = Vec::with_capacity(sizes.len());
        let mut total = 0usize;
        for &size in &sizes {
            offsets.push(total);
            total += size.div_ceil(16).max(1) * 16;
        }
        let mut data = vec![0u128; total / 16];
        let base = data.as_mut_ptr().cast::<u8>();
        for ((&size, &offset), &src) in sizes.iter().zip(&offsets).zip(args) {
            // SAFETY: `src` holds `size` bytes (caller); `offset + size` is within `data`.
            unsafe { std::ptr::copy_nonoverlapping(src.cast::<u8>(), base.add(offset), size) };
        }
        Self { data, offsets }
    }

    fn pointers(mut self) -> SlotPointers {
        let base = self.data.as_mut_ptr().cast::<u8>();
        let pointers = self
            .offsets
            .iter()
            // SAFETY: every offset is inside `data`.
            .map(|&o| unsafe { base.add(o) }.cast::<c_void>())
            .collect();
        SlotPointers {
            _data: self.data,
            pointers,
        }
    }
}

/// Slot pointers and the storage they point into.
struct SlotPointers {
    _data: Vec<u128>,
    pointers: Vec<*mut c_void>,
}

impl std::ops::Deref for SlotPointers {
    type Target = [*mut c_void];
    fn deref(&self) -> &[*mut c_void] {
        &self.pointers
    }
}

impl std::ops::DerefMut for SlotPointers {
    fn deref_mut(&mut self) -> &mut [*mut c_void] {
        &mut self.pointers
    }
}

fn cpu_model_name() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, name)| name.trim().to_string())
        })
        .unwrap_or_else(|| format!("host CPU ({})", HOST_TRIPLE))
}

fn physical_memory() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let (pages, page) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    if pages > 0 && page > 0 {
        pages as u64 * page as u64
    } else {
        0
    }
}
