//! Backends: the device runtimes the host drives (CUDA, HIP, the CPU).
//!
//! A [`Backend`] enumerates [`Device`]s. A device allocates memory (addresses are `u64`
//! device addresses), copies, creates [`Stream`]s and [`Event`]s, loads [`Module`]s from a
//! [`KernelUnit`] and launches their kernels. Everything above this layer (modules cache,
//! launch validation, buffers, symmetric memory, ranks) is written against these traits
//! only.
//!
//! Contract for implementations:
//! - every method may be called from any thread, concurrently (several ranks share a
//!   device); a GPU backend makes its context current on the calling thread as needed;
//! - device addresses are `u64`; `0` is never a valid allocation;
//! - launches and `memcpy_dtod`/`memset` are asynchronous on a stream; `memcpy_htod` and
//!   `memcpy_dtoh` are ordered after prior work on the stream and return once the copy is
//!   complete (the host slice may be reused or read at once);
//! - zero-byte copies and sets are accepted and do nothing;
//! - a failed call returns an [`Error`] ([`Error::Driver`]
//!   for runtime failures), never panics;
//! - every wait takes a timeout and returns [`Error::Timeout`]
//!   when it expires.
//!
//! Memory shared between processes (ranks as processes) goes through four methods with
//! default implementations that return [`Error::Unsupported`], so a backend without it
//! still compiles and runs ranks as threads: [`Device::alloc_exportable`],
//! [`Device::export_fd`], [`Device::import_fd`] and [`Device::free_shared`]. The CPU
//! backend implements them with a memfd mapped `MAP_SHARED`; a GPU backend implements
//! them with its virtual-memory API (CUDA: `cuMemCreate` with POSIX file-descriptor
//! handles, `cuMemExportToShareableHandle`, `cuMemImportFromShareableHandle`,
//! `cuMemAddressReserve` + `cuMemMap` + `cuMemSetAccess`; HIP: `hipMemCreate` with
//! fine-grained memory for [`MemoryKind::Symmetric`], and the same sequence).

use core::ffi::c_void;
use std::any::Any;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::sync::Arc;
use std::time::Duration;

use iris_device::abi::{CodeObject, KernelUnit, TargetKind};

use crate::error::{Error, Result};
use crate::kind::BackendKind;

/// What a device is and what it can run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceInfo {
    /// The backend that drives it.
    pub backend: BackendKind,
    /// Its ordinal within the backend (as this process sees the devices: under
    /// `CUDA_VISIBLE_DEVICES` or `HIP_VISIBLE_DEVICES` another process may give the same
    /// device another ordinal, or another device the same one).
    pub ordinal: usize,
    /// The physical device's identity, the same in every process whatever devices it
    /// sees (the driver's UUID); all zeros for the CPU. Ranks on one device are ranks
    /// with the same backend and `uuid`.
    pub uuid: [u8; 16],
    /// Its marketing name (`NVIDIA H200`, `AMD Instinct MI300X`, the CPU's model name).
    pub name: String,
    /// The code-object target it runs: `sm_90`, `gfx942`, the host triple.
    pub target: String,
    /// Bytes of device memory.
    pub total_memory: u64,
    /// Multiprocessors (SMs, CUs; CPU cores).
    pub multiprocessors: u32,
    /// The most threads one block may have.
    pub max_threads_per_block: u32,
    /// The largest block extent per dimension.
    pub max_block_dims: [u32; 3],
    /// The largest grid extent per dimension.
    pub max_grid_dims: [u32; 3],
    /// Hardware queues that run this process's streams on the device concurrently
    /// (CUDA: `CUDA_DEVICE_MAX_CONNECTIONS`, which iris sets to 32 when it is unset before
    /// the driver starts; HIP: `GPU_MAX_HW_QUEUES`, likewise 16). Streams beyond it share
    /// queues, and a kernel queued behind another stream's running kernel does not start
    /// until that one ends: kernels that wait for each other (ranks sharing a device) need
    /// a queue each. `u32::MAX` on the CPU, whose streams are threads.
    pub work_queues: u32,
}

/// A row-major matrix in device memory read in boxes by the copy engine: what
/// [`Device::tile_map`] describes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TileShape {
    /// The device address of element (0, 0), 16-byte aligned.
    pub base: u64,
    /// Rows of the matrix.
    pub rows: u64,
    /// Elements per row (rows are this far apart), whose bytes are a multiple of 16.
    pub cols: u64,
    /// Bytes per element: 1, 2, 4 or 8.
    pub elem_bytes: u32,
    /// Rows per box, 1 to 256.
    pub box_rows: u32,
    /// Elements per box row: 128 bytes of them (the 128-byte swizzle's row).
    pub box_cols: u32,
}

/// A `u64` in host memory that a device's kernels read while the host may write it (the
/// world's abort flag): page-locked memory mapped into the device's address space on a
/// GPU, ordinary memory on the CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HostWord {
    /// Its host address (an `AtomicU64` there).
    pub host: u64,
    /// Its address in the device's address space.
    pub device: u64,
}

/// What an allocation will be used for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MemoryKind {
    /// Ordinary device memory, used by this device's kernels.
    Device,
    /// Memory peers read and write, with system-scope atomics: a symmetric heap. On AMD
    /// this must be fine-grained memory.
    Symmetric,
}

/// The shape of one launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaunchDims {
    /// Blocks per grid, x y z (each at least 1).
    pub grid: [u32; 3],
    /// Threads per block, x y z (each at least 1).
    pub block: [u32; 3],
    /// Bytes of dynamic shared memory per block, beyond the kernel's static
    /// `shared_bytes` (which GPU code objects declare themselves and the CPU backend reads
    /// from the [`KernelSpec`](iris_device::abi::KernelSpec)).
    pub dynamic_shared_bytes: u32,
}

/// A device runtime: the devices it found, and peer access between them.
pub trait Backend: Send + Sync {
    /// Which runtime this is.
    fn kind(&self) -> BackendKind;

    /// How many devices it found (at least 1: a backend without devices is unavailable).
    fn device_count(&self) -> usize;

    /// Device `ordinal` (`0..device_count()`). Returns the same device on every call.
    fn device(&self, ordinal: usize) -> Result<Arc<dyn Device>>;

    /// Whether device `from`'s kernels can read and write memory allocated on device `to`.
    /// Always true for `from == to`.
    fn can_access_peer(&self, from: usize, to: usize) -> Result<bool>;

    /// Lets device `from`'s kernels access memory allocated on device `to`. Idempotent:
    /// enabling an already-enabled pair (or `from == to`) succeeds.
    fn enable_peer_access(&self, from: usize, to: usize) -> Result<()>;
}

/// One device: memory, streams, events, modules, launches.
pub trait Device: Send + Sync {
    /// What it is.
    fn info(&self) -> &DeviceInfo;

    /// Makes the device current on the calling thread, for libraries that work on the
    /// runtime's current device (NVSHMEM, rocSHMEM). Nothing to do by default.
    fn make_current(&self) -> Result<()> {
        Ok(())
    }

    /// Allocates `bytes` (> 0) of device memory, 256-byte aligned. The contents are
    /// unspecified.
    fn alloc(&self, bytes: usize, kind: MemoryKind) -> Result<u64>;

    /// Frees an allocation made by [`alloc`](Device::alloc).
    ///
    /// # Safety
    /// `addr` came from `alloc` on this device and is not used afterwards, by any stream
    /// of any device.
    unsafe fn free(&self, addr: u64) -> Result<()>;

    /// Frees an allocation of [`alloc`](Device::alloc) of [`MemoryKind::Device`] once
    /// the work queued on `stream` so far has finished, without waiting for it (and
    /// without waiting for any other stream's work, as a plain free may).
    ///
    /// # Safety
    /// `addr` came from `alloc` on this device; no work queued later, on any stream, uses
    /// it; work queued earlier on other streams that uses it is ordered before `stream`'s
    /// current end (by events or synchronization).
    unsafe fn free_after(&self, addr: u64, stream: &dyn Stream) -> Result<()>;

    /// Copies `src` into device memory at `dst` that no queued work uses (memory just
    /// allocated), on none of the caller's streams: it waits for no kernel, and returns
    /// once the copy is complete.
    ///
    /// # Safety
    /// `dst..dst + src.len()` lies inside one live allocation of this device that no
    /// queued or running work reads or writes.
    unsafe fn write_fresh(&self, dst: u64, src: &[u8]) -> Result<()>;

    /// Sets `bytes` bytes at `dst` to `value` as [`write_fresh`](Device::write_fresh)
    /// writes: memory no queued work uses, on none of the caller's streams, returning once
    /// done.
    ///
    /// # Safety
    /// As for [`write_fresh`](Device::write_fresh).
    unsafe fn fill_fresh(&self, dst: u64, value: u8, bytes: usize) -> Result<()>;

    /// A new [`HostWord`] holding 0. Released with
    /// [`free_host_word`](Device::free_host_word).
    fn alloc_host_word(&self) -> Result<HostWord>;

    /// Releases a word of [`alloc_host_word`](Device::alloc_host_word).
    ///
    /// # Safety
    /// No queued or running kernel reads it, and its host address is not used afterwards.
    unsafe fn free_host_word(&self, word: HostWord) -> Result<()>;

    /// Copies `src` to device address `dst` after the prior work of `stream`, and returns
    /// once the copy is complete.
    ///
    /// # Safety
    /// `dst..dst + src.len()` lies inside one live allocation reachable from this device.
    unsafe fn memcpy_htod(&self, stream: &dyn Stream, dst: u64, src: &[u8]) -> Result<()>;

    /// Copies device address `src` into `dst` after the prior work of `stream`, and
    /// returns once the copy is complete.
    ///
    /// # Safety
    /// `src..src + dst.len()` lies inside one live allocation reachable from this device.
    unsafe fn memcpy_dtoh(&self, stream: &dyn Stream, dst: &mut [u8], src: u64) -> Result<()>;

    /// Copies `bytes` from device address `src` to device address `dst`, ordered on
    /// `stream` (may return before it completes).
    ///
    /// # Safety
    /// Both ranges lie inside live allocations reachable from this device and stay live
    /// until the copy completes.
    unsafe fn memcpy_dtod(
        &self,
        stream: &dyn Stream,
        dst: u64,
        src: u64,
        bytes: usize,
    ) -> Result<()>;

    /// Sets `bytes` bytes at `dst` to `value`, ordered on `stream` (may return before it
    /// completes).
    ///
    /// # Safety
    /// The range lies inside a live allocation reachable from this device and stays live
    /// until the set completes.
    unsafe fn memset(&self, stream: &dyn Stream, dst: u64, value: u8, bytes: usize) -> Result<()>;

    /// A new stream: an ordered queue of work on this device. On GPUs it has been used
    /// once (a small copy, waited for) before it is returned: the first submission to a
    /// stream does not start while another stream's kernel runs, so make streams before
    /// kernels that wait for other ranks are running.
    fn create_stream(&self) -> Result<Box<dyn Stream>>;

    /// A new stream like [`create_stream`](Device::create_stream)'s, of the device's
    /// greatest priority: when kernels of several streams have blocks waiting to start,
    /// the block scheduler starts this stream's first (CUDA and HIP stream priorities;
    /// running blocks are not interrupted). For short kernels that must not queue behind
    /// a large kernel of another stream. The default (the CPU backend, which runs every
    /// stream's work as its own thread) is a plain stream.
    fn create_urgent_stream(&self) -> Result<Box<dyn Stream>> {
        self.create_stream()
    }

    /// A new event, for ordering and timing (see [`Stream::record`]).
    fn create_event(&self) -> Result<Box<dyn Event>>;

    /// Loads the code object of `unit` that this device runs (see [`select_code_object`]),
    /// resolving every kernel of the unit. Errors with
    /// [`Error::NoCodeObject`] when the unit has none.
    fn load_module(&self, unit: &'static KernelUnit) -> Result<Box<dyn Module>>;

    /// Launches kernel `kernel` of `module` on `stream`, asynchronously.
    ///
    /// `args` holds one pointer per argument slot, as `cuLaunchKernel`'s `kernelParams`;
    /// the slots are read during this call only (their contents are copied).
    ///
    /// # Safety
    /// `module` was loaded by this device, `kernel` is an index of its unit, `dims` is
    /// within the device's limits, the slots match the kernel's parameters, and every
    /// address they pass stays valid until the kernel completes.
    unsafe fn launch(
        &self,
        stream: &dyn Stream,
        module: &dyn Module,
        kernel: usize,
        dims: LaunchDims,
        args: &mut [*mut c_void],
    ) -> Result<()>;

    /// How many blocks of `kernel` of `module`, `block_threads` threads each with
    /// `dynamic_shared_bytes` of dynamic shared memory, can be resident on one
    /// multiprocessor at once (the driver's occupancy calculator for the exact code
    /// object: registers, shared memory, threads, block slots). At least 0; `u32::MAX` on
    /// the CPU, whose blocks are threads the operating system schedules.
    fn max_active_blocks_per_multiprocessor(
        &self,
        module: &dyn Module,
        kernel: usize,
        block_threads: u32,
        dynamic_shared_bytes: u32,
    ) -> Result<u32>;

    /// The copy engine's description of `shape` (CUDA's `CUtensorMap`, 16 words, boxes
    /// in the 128-byte swizzle), or `None` where the device has no copy engine for tiles
    /// (before Hopper, AMD, the CPU: kernels there copy the boxes themselves).
    ///
    /// The default returns `None`.
    fn tile_map(&self, shape: &TileShape) -> Result<Option<[u64; 16]>> {
        let _ = shape;
        Ok(None)
    }

    /// Allocates `bytes` (> 0) of device memory that other processes can map: its
    /// descriptor comes from [`export_fd`](Device::export_fd), and peers map it with
    /// [`import_fd`](Device::import_fd). The backend may round the size up to its
    /// granularity; importers pass the same `bytes` and round the same way. Released with
    /// [`free_shared`](Device::free_shared), never [`free`](Device::free). The contents
    /// are unspecified. Copies, sets and kernels accept the range like any allocation.
    ///
    /// The default returns [`Error::Unsupported`].
    fn alloc_exportable(&self, bytes: usize, kind: MemoryKind) -> Result<u64> {
        let _ = (bytes, kind);
        Err(unsupported(
            self.info().backend,
            "exportable memory (alloc_exportable)",
        ))
    }

    /// A new file descriptor for the allocation that starts at `addr` (made by
    /// [`alloc_exportable`](Device::alloc_exportable) on this device), to pass to another
    /// process (with `SCM_RIGHTS`). The caller owns the descriptor; the allocation stays
    /// valid whether or not the descriptor is still open.
    ///
    /// The default returns [`Error::Unsupported`].
    fn export_fd(&self, addr: u64) -> Result<OwnedFd> {
        let _ = addr;
        Err(unsupported(
            self.info().backend,
            "exporting memory (export_fd)",
        ))
    }

    /// Maps memory another process (or this one) exported as `fd`, `bytes` long (the
    /// exporter's `bytes`), into this device's address space, readable and writable by
    /// this device's kernels and by copies; returns its device address. The descriptor is
    /// only borrowed: the caller may close it afterwards. The mapping keeps the memory
    /// alive until [`free_shared`](Device::free_shared), even after the exporter frees it.
    ///
    /// The default returns [`Error::Unsupported`].
    fn import_fd(&self, fd: BorrowedFd<'_>, bytes: usize, kind: MemoryKind) -> Result<u64> {
        let _ = (fd, bytes, kind);
        Err(unsupported(
            self.info().backend,
            "importing memory (import_fd)",
        ))
    }

    /// Unmaps and releases memory made by [`alloc_exportable`](Device::alloc_exportable)
    /// or mapped by [`import_fd`](Device::import_fd), given the address either returned.
    ///
    /// # Safety
    /// `addr` is not used afterwards, by any stream of any device of this process.
    ///
    /// The default returns [`Error::Unsupported`].
    unsafe fn free_shared(&self, addr: u64) -> Result<()> {
        let _ = addr;
        Err(unsupported(
            self.info().backend,
            "releasing shared memory (free_shared)",
        ))
    }

    /// Whether [`alloc_exportable`](Device::alloc_exportable) and the other shared-memory
    /// methods are implemented (the default says no).
    fn supports_shared_memory(&self) -> bool {
        false
    }

    /// A stream of this device that another library created (PyTorch's current stream, a
    /// `CUstream` / `hipStream_t`): work iris queues on it is ordered with that library's.
    /// The stream is borrowed: dropping the result does not destroy it.
    ///
    /// # Safety
    /// `raw` is a live stream of this device (null: the legacy default stream), and it
    /// outlives the returned stream and all work queued on it.
    ///
    /// The default returns [`Error::Unsupported`] (the CPU backend keeps its own order).
    unsafe fn wrap_stream(&self, raw: *mut std::ffi::c_void) -> Result<Box<dyn Stream>> {
        let _ = raw;
        Err(unsupported(
            self.info().backend,
            "queuing on another library's stream (wrap_stream)",
        ))
    }
}

/// An ordered queue of work on one device.
pub trait Stream: Send + Sync {
    /// The concrete stream, for the backend that created it.
    fn as_any(&self) -> &dyn Any;

    /// Waits until all work queued so far has finished. Errors with
    /// [`Error::Timeout`] after `timeout`, and reports a failure of
    /// queued work (an asynchronous launch error).
    fn synchronize(&self, timeout: Duration) -> Result<()>;

    /// Records `event` at the current end of the queue: it completes once all work
    /// queued before it has. Re-recording an event moves it.
    fn record(&self, event: &dyn Event) -> Result<()>;

    /// Makes the work queued on this stream from now on wait until `event` (recorded on
    /// any stream of the device) has completed, without the host waiting. The default
    /// returns [`Error::Unsupported`].
    fn wait_event(&self, event: &dyn Event) -> Result<()> {
        let _ = event;
        Err(Error::Unsupported {
            backend: BackendKind::Cpu,
            what: "ordering a stream after another's event",
        })
    }

    /// Whether the stream is capturing a graph: work queued now is recorded, not run,
    /// so nothing may wait for it or read its results. The default says no.
    fn is_capturing(&self) -> Result<bool> {
        Ok(false)
    }

    /// Starts capturing the work queued on this stream (by the calling thread) into a
    /// graph, until [`end_capture`](Stream::end_capture). The default returns
    /// [`Error::Unsupported`].
    fn begin_capture(&self) -> Result<()> {
        Err(Error::Unsupported {
            backend: BackendKind::Cpu,
            what: "capturing a stream into a graph",
        })
    }

    /// Ends the capture [`begin_capture`](Stream::begin_capture) started and returns the
    /// graph, ready to launch. The default returns [`Error::Unsupported`].
    fn end_capture(&self) -> Result<Box<dyn Graph>> {
        Err(Error::Unsupported {
            backend: BackendKind::Cpu,
            what: "capturing a stream into a graph",
        })
    }
}

/// Work captured from a stream, launched again as a whole.
pub trait Graph: Send + Sync {
    /// Queues the captured work on `stream` (a stream of the same device).
    fn launch(&self, stream: &dyn Stream) -> Result<()>;
}

/// A marker in a stream, for waiting and timing.
pub trait Event: Send + Sync {
    /// The concrete event, for the backend that created it.
    fn as_any(&self) -> &dyn Any;

    /// Waits until the event has completed (errors with
    /// [`Error::Timeout`] after `timeout`).
    fn synchronize(&self, timeout: Duration) -> Result<()>;

    /// Milliseconds from this event to `end`; both must have been recorded and completed.
    fn elapsed_ms(&self, end: &dyn Event) -> Result<f32>;
}

/// A code object loaded on one device.
pub trait Module: Send + Sync {
    /// The concrete module, for the backend that loaded it.
    fn as_any(&self) -> &dyn Any;

    /// The unit it was loaded from.
    fn unit(&self) -> &'static KernelUnit;

    /// The target of the code object that was loaded.
    fn target(&self) -> &'static str;
}
/// The error a default shared-memory method of [`Device`] returns.
fn unsupported(backend: BackendKind, what: &'static str) -> Error {
    Error::Unsupported { backend, what }
}

/// Downcasts a backend object to the concrete type of the backend that must own it.
pub fn downcast<'a, T: Any>(
    object: &'a dyn Any,
    backend: BackendKind,
    what: &'static str,
) -> Result<&'a T> {
    object.downcast_ref::<T>().ok_or_else(|| Error::Driver {
        backend,
        call: what,
        message: format!("a {what} of another backend was passed to the {backend} backend"),
    })
}

/// Picks the code object of `unit` of family `kind` whose target `accepts` returns true
/// for, preferring later objects in the unit (the macro emits older targets first, so an
/// NVIDIA backend accepting every `sm_XY <= device` gets the newest). Errors with
/// [`Error::NoCodeObject`], naming the unit's targets.
pub fn select_code_object(
    unit: &'static KernelUnit,
    kind: TargetKind,
    device_target: &str,
    accepts: impl Fn(&str) -> bool,
) -> Result<&'static CodeObject> {
    unit.code_objects
        .iter()
        .rev()
        .find(|o| o.kind == kind && accepts(o.target))
        .ok_or_else(|| Error::NoCodeObject {
            unit: unit.id,
            kind,
            device_target: device_target.to_string(),
            available: unit.target_names(),
            left_out: unit.left_out_reason(device_target),
        })
}
