//! The CUDA driver API as the generic GPU device's function table ([`GpuApi`]), and the
//! CUDA-only calls of a [`CudaDevice`].

use std::os::fd::{BorrowedFd, OwnedFd};
use std::sync::Arc;

use cudarc::driver::sys::{
    self, CUevent, CUevent_flags, CUfunction, CUmodule, CUresult, CUstream, CUstream_flags,
};
use std::ffi::CStr;

use iris_device::abi::{CodeObject, KernelUnit};

use super::context::PrimaryContext;
use super::driver::{check, describe, error, has_symbols, load};
use super::info::{device_handle, query};
use super::module::{load_now, load_ptx};
use super::shared::{SharedApi, SharedMemory, IPC_HANDLE_BYTES};
use crate::error::{Error, Result};
use crate::gpu::{GpuApi, GpuDevice, GpuEvent, GpuModule, GpuStream, Query};
use crate::{BackendKind, DeviceInfo, LaunchDims, MemoryKind, TileShape};

/// An NVIDIA GPU: its compute capability and its shared-memory support.
pub struct Cuda {
    capability: (u32, u32),
    shared: SharedMemory,
}

/// A CUDA device, driven through its primary context, made current on the calling thread
/// before every call.
pub type CudaDevice = GpuDevice<Cuda>;
/// A non-blocking CUDA stream of one device's primary context.
pub type CudaStream = GpuStream<Cuda>;
/// A CUDA event with timing enabled.
pub type CudaEvent = GpuEvent<Cuda>;
/// A kernel unit's PTX loaded on one device, with one function per kernel of the unit.
pub type CudaModule = GpuModule<Cuda>;

/// `Done`, `NotReady` or the error of a query.
fn query_result(call: &'static str, r: CUresult) -> Query {
    match r {
        CUresult::CUDA_SUCCESS => Query::Done,
        CUresult::CUDA_ERROR_NOT_READY => Query::NotReady,
        other => Query::Failed(error(call, other)),
    }
}

impl crate::gpu::Sealed for Cuda {}

impl GpuApi for Cuda {
    const KIND: BackendKind = BackendKind::Cuda;
    type Context = Arc<PrimaryContext>;
    type Stream = CUstream;
    type Event = CUevent;
    type Module = CUmodule;
    type Function = CUfunction;
    type Graph = sys::CUgraph;
    type GraphExec = sys::CUgraphExec;

    fn open(ordinal: usize) -> Result<(Self, Self::Context, DeviceInfo)> {
        let handle = device_handle(ordinal)?;
        let (info, capability) = query(ordinal, handle)?;
        let ctx = Arc::new(PrimaryContext::retain(ordinal, handle)?);
        let api = Cuda {
            capability,
            shared: SharedMemory::new(),
        };
        Ok((api, ctx, info))
    }

    fn make_current(ctx: &Self::Context) -> Result<()> {
        ctx.make_current()
    }

    fn context_id(ctx: &Self::Context) -> u64 {
        ctx.id()
    }

    fn ordinal(ctx: &Self::Context) -> usize {
        ctx.ordinal
    }

    unsafe fn stream_create() -> Result<CUstream> {
        let mut raw = std::ptr::null_mut();
        let flags = CUstream_flags::CU_STREAM_NON_BLOCKING as u32;
        // SAFETY: a valid out-pointer, with the context current (the caller's promise).
        check("cuStreamCreate", unsafe {
            sys::cuStreamCreate(&mut raw, flags)
        })?;
        Ok(raw)
    }

    unsafe fn stream_create_urgent() -> Result<CUstream> {
        let (mut least, mut greatest) = (0, 0);
        // SAFETY: valid out-pointers, with the context current (the caller's promise).
        check("cuCtxGetStreamPriorityRange", unsafe {
            sys::cuCtxGetStreamPriorityRange(&mut least, &mut greatest)
        })?;
        let mut raw = std::ptr::null_mut();
        let flags = CUstream_flags::CU_STREAM_NON_BLOCKING as u32;
        // SAFETY: a valid out-pointer, a priority from the context's range.
        check("cuStreamCreateWithPriority", unsafe {
            sys::cuStreamCreateWithPriority(&mut raw, flags, greatest)
        })?;
        Ok(raw)
    }

    unsafe fn stream_destroy(stream: CUstream) -> Result<()> {
        // SAFETY: a live stream (the caller's promise).
        check("cuStreamDestroy_v2", unsafe {
            sys::cuStreamDestroy_v2(stream)
        })
    }

    unsafe fn stream_query(stream: CUstream) -> Query {
        // SAFETY: a live stream.
        query_result("cuStreamQuery", unsafe { sys::cuStreamQuery(stream) })
    }

    fn stream_from_raw(raw: *mut std::ffi::c_void) -> CUstream {
        raw.cast()
    }

    unsafe fn stream_is_capturing(stream: CUstream) -> Result<bool> {
        let mut status = sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE;
        // SAFETY: a live stream and a valid out-pointer.
        check("cuStreamIsCapturing", unsafe {
            sys::cuStreamIsCapturing(stream, &mut status)
        })?;
        Ok(status != sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE)
    }

    unsafe fn stream_begin_capture(stream: CUstream) -> Result<()> {
        let mode = sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL;
        // SAFETY: a live stream.
        check("cuStreamBeginCapture_v2", unsafe {
            sys::cuStreamBeginCapture_v2(stream, mode)
        })
    }

    unsafe fn stream_end_capture(stream: CUstream) -> Result<sys::CUgraph> {
        let mut graph = std::ptr::null_mut();
        // SAFETY: a live stream capturing on this thread, a valid out-pointer.
        check("cuStreamEndCapture", unsafe {
            sys::cuStreamEndCapture(stream, &mut graph)
        })?;
        Ok(graph)
    }

    unsafe fn graph_instantiate(graph: sys::CUgraph) -> Result<sys::CUgraphExec> {
        let mut exec = std::ptr::null_mut();
        // SAFETY: a live graph, a valid out-pointer.
        check("cuGraphInstantiateWithFlags", unsafe {
            sys::cuGraphInstantiateWithFlags(&mut exec, graph, 0)
        })?;
        Ok(exec)
    }

    unsafe fn graph_launch(exec: sys::CUgraphExec, stream: CUstream) -> Result<()> {
        // SAFETY: live handles.
        check("cuGraphLaunch", unsafe { sys::cuGraphLaunch(exec, stream) })
    }

    unsafe fn graph_destroy(graph: sys::CUgraph) -> Result<()> {
        // SAFETY: a live graph, not used afterwards.
        check("cuGraphDestroy", unsafe { sys::cuGraphDestroy(graph) })
    }

    unsafe fn graph_exec_destroy(exec: sys::CUgraphExec) -> Result<()> {
        // SAFETY: a live instantiated graph, not used afterwards.
        check("cuGraphExecDestroy", unsafe {
            sys::cuGraphExecDestroy(exec)
        })
    }

    unsafe fn event_create() -> Result<CUevent> {
        let mut raw = std::ptr::null_mut();
        let flags = CUevent_flags::CU_EVENT_DEFAULT as u32;
        // SAFETY: a valid out-pointer, with the context current.
        check("cuEventCreate", unsafe {
            sys::cuEventCreate(&mut raw, flags)
        })?;
        Ok(raw)
    }

    unsafe fn event_destroy(event: CUevent) -> Result<()> {
        // SAFETY: a live event.
        check("cuEventDestroy_v2", unsafe {
            sys::cuEventDestroy_v2(event)
        })
    }

    unsafe fn event_record(event: CUevent, stream: CUstream) -> Result<()> {
        // SAFETY: live handles.
        check("cuEventRecord", unsafe {
            sys::cuEventRecord(event, stream)
        })
    }

    unsafe fn stream_wait_event(stream: CUstream, event: CUevent) -> Result<()> {
        // SAFETY: live handles; flag 0 is the default wait.
        check("cuStreamWaitEvent", unsafe {
            sys::cuStreamWaitEvent(stream, event, 0)
        })
    }

    unsafe fn event_query(event: CUevent) -> Query {
        // SAFETY: a live event.
        query_result("cuEventQuery", unsafe { sys::cuEventQuery(event) })
    }

    unsafe fn event_elapsed_ms(start: CUevent, end: CUevent) -> Result<f32> {
        let driver = load()?;
        let mut ms = 0.0f32;
        // SAFETY: live events; the driver checks that they were recorded.
        let r = unsafe { (driver.elapsed_time)(&mut ms, start, end) };
        check("cuEventElapsedTime", r).map(|()| ms)
    }

    /// Plain `cuMemAlloc` memory serves both kinds: peers reach it through peer access,
    /// other processes through IPC handles (never the stream-ordered pool, whose memory
    /// cannot be exported).
    unsafe fn mem_alloc(bytes: usize, _kind: MemoryKind) -> std::result::Result<u64, String> {
        let mut addr = 0;
        // SAFETY: a valid out-pointer, with the context current.
        match unsafe { sys::cuMemAlloc_v2(&mut addr, bytes) } {
            CUresult::CUDA_SUCCESS => Ok(addr),
            r => Err(describe(r)),
        }
    }

    unsafe fn mem_free(addr: u64) -> Result<()> {
        // SAFETY: an allocation of `mem_alloc` (the caller's promise).
        check("cuMemFree_v2", unsafe { sys::cuMemFree_v2(addr) })
    }

    unsafe fn pool_create(ordinal: usize) -> Result<u64> {
        // SAFETY: the properties are zeroed (the documented default for every field not set).
        let mut props: sys::CUmemPoolProps = unsafe { std::mem::zeroed() };
        props.allocType = sys::CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED;
        props.handleTypes = sys::CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_NONE;
        props.location.type_ = sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE;
        props.location.id = ordinal as i32;
        let mut pool = std::ptr::null_mut();
        // SAFETY: valid pointers, with the context current.
        check("cuMemPoolCreate", unsafe {
            sys::cuMemPoolCreate(&mut pool, &props)
        })?;
        let mut keep = u64::MAX;
        let mut no = 0i32;
        // SAFETY: a live pool; the values have the attributes' types (cuuint64_t, int).
        unsafe {
            check(
                "cuMemPoolSetAttribute",
                sys::cuMemPoolSetAttribute(
                    pool,
                    sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
                    (&mut keep as *mut u64).cast(),
                ),
            )?;
            check(
                "cuMemPoolSetAttribute",
                sys::cuMemPoolSetAttribute(
                    pool,
                    sys::CUmemPool_attribute::CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES,
                    (&mut no as *mut i32).cast(),
                ),
            )?;
        }
        Ok(pool as u64)
    }

    unsafe fn pool_alloc(
        pool: u64,
        bytes: usize,
        stream: CUstream,
    ) -> std::result::Result<u64, String> {
        let mut addr = 0;
        // SAFETY: a live pool of the current device and a live stream.
        match unsafe {
            sys::cuMemAllocFromPoolAsync(&mut addr, bytes, pool as sys::CUmemoryPool, stream)
        } {
            CUresult::CUDA_SUCCESS => Ok(addr),
            r => Err(describe(r)),
        }
    }

    unsafe fn free_async(addr: u64, stream: CUstream) -> Result<()> {
        // SAFETY: an allocation of `pool_alloc` (the caller's promise) and a live stream.
        check("cuMemFreeAsync", unsafe {
            sys::cuMemFreeAsync(addr, stream)
        })
    }

    unsafe fn host_alloc_mapped(bytes: usize) -> Result<(u64, u64)> {
        let mut host = std::ptr::null_mut();
        let flags = sys::CU_MEMHOSTALLOC_PORTABLE | sys::CU_MEMHOSTALLOC_DEVICEMAP;
        // SAFETY: a valid out-pointer, with a context current.
        check("cuMemHostAlloc", unsafe {
            sys::cuMemHostAlloc(&mut host, bytes, flags)
        })?;
        let mut device = 0;
        // SAFETY: `host` is mapped memory just allocated.
        let mapped = check("cuMemHostGetDevicePointer_v2", unsafe {
            sys::cuMemHostGetDevicePointer_v2(&mut device, host, 0)
        });
        if let Err(err) = mapped {
            // SAFETY: nothing else has seen `host`.
            let _ = unsafe { sys::cuMemFreeHost(host) };
            return Err(err);
        }
        Ok((host as u64, device))
    }

    unsafe fn host_free(host: u64) -> Result<()> {
        // SAFETY: memory of `host_alloc_mapped` (the caller's promise).
        check("cuMemFreeHost", unsafe {
            sys::cuMemFreeHost(host as *mut _)
        })
    }

    unsafe fn memcpy_htod_async(
        dst: u64,
        src: *const u8,
        bytes: usize,
        stream: CUstream,
    ) -> Result<()> {
        // SAFETY: the caller vouches for both ranges until the copy completes.
        check("cuMemcpyHtoDAsync_v2", unsafe {
            sys::cuMemcpyHtoDAsync_v2(dst, src.cast(), bytes, stream)
        })
    }

    unsafe fn memcpy_dtoh_async(
        dst: *mut u8,
        src: u64,
        bytes: usize,
        stream: CUstream,
    ) -> Result<()> {
        // SAFETY: as above.
        check("cuMemcpyDtoHAsync_v2", unsafe {
            sys::cuMemcpyDtoHAsync_v2(dst.cast(), src, bytes, stream)
        })
    }

    unsafe fn memcpy_dtod_async(dst: u64, src: u64, bytes: usize, stream: CUstream) -> Result<()> {
        // SAFETY: as above.
        check("cuMemcpyDtoDAsync_v2", unsafe {
            sys::cuMemcpyDtoDAsync_v2(dst, src, bytes, stream)
        })
    }

    unsafe fn memset_async(dst: u64, value: u8, bytes: usize, stream: CUstream) -> Result<()> {
        // SAFETY: as above.
        check("cuMemsetD8Async", unsafe {
            sys::cuMemsetD8Async(dst, value, bytes, stream)
        })
    }

    fn load_code_object(
        &self,
        ctx: &Self::Context,
        unit: &'static KernelUnit,
    ) -> Result<(CUmodule, &'static CodeObject, Vec<u64>)> {
        load_ptx(ctx, unit, self.capability)
    }

    unsafe fn module_function(
        module: CUmodule,
        name: &CStr,
    ) -> std::result::Result<CUfunction, String> {
        let mut function = std::ptr::null_mut();
        // SAFETY: a live module, a NUL-terminated name and a valid out-pointer.
        match unsafe { sys::cuModuleGetFunction(&mut function, module, name.as_ptr()) } {
            CUresult::CUDA_SUCCESS => Ok(function),
            r => Err(describe(r)),
        }
    }

    /// Loads every kernel when its module loads: see `load_now` in the `module` module.
    unsafe fn prepare_function(function: CUfunction) -> std::result::Result<(), String> {
        load_now(function)
    }

    unsafe fn allow_dynamic_shared(
        function: CUfunction,
        bytes: u32,
    ) -> std::result::Result<(), String> {
        let attribute = sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES;
        // SAFETY: a live function; the driver checks the value against the device.
        let r = unsafe { sys::cuFuncSetAttribute(function, attribute, bytes as i32) };
        check("cuFuncSetAttribute", r).map_err(|e| {
            format!("its shared arrays take {bytes} bytes, more than the device allows: {e}")
        })
    }

    unsafe fn prefer_shared_carveout(
        function: CUfunction,
        percent: u32,
    ) -> std::result::Result<(), String> {
        let attribute =
            sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT;
        // SAFETY: a live function; the driver checks the percent.
        let r = unsafe { sys::cuFuncSetAttribute(function, attribute, percent as i32) };
        check("cuFuncSetAttribute", r)
            .map_err(|e| format!("a shared-memory carveout of {percent}%: {e}"))
    }

    unsafe fn module_unload(module: CUmodule) -> Result<()> {
        // SAFETY: a live module whose launches have completed (the caller's promise).
        check("cuModuleUnload", unsafe { sys::cuModuleUnload(module) })
    }

    unsafe fn launch(
        function: CUfunction,
        dims: LaunchDims,
        stream: CUstream,
        params: *mut *mut core::ffi::c_void,
    ) -> Result<()> {
        let [gx, gy, gz] = dims.grid;
        let [bx, by, bz] = dims.block;
        // SAFETY: the caller vouches for the function, the stream, the dimensions and the
        // argument slots, which the driver copies during the call.
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
                stream,
                params,
                std::ptr::null_mut(),
            )
        })
    }

    unsafe fn max_active_blocks(
        function: CUfunction,
        block_threads: u32,
        dynamic_shared_bytes: u32,
    ) -> Result<u32> {
        let mut blocks = 0;
        // SAFETY: a live function and a valid out-pointer.
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

    /// `cuTensorMapEncodeTiled` on Hopper and newer (compute capability 9 and up), whose
    /// kernels copy tiles with it; `None` before, where the kernels copy the boxes
    /// themselves. The element type is only its size: the engine moves bytes.
    fn tile_map(info: &DeviceInfo, shape: &TileShape) -> Result<Option<[u64; 16]>> {
        let number: u32 = info
            .target
            .trim_start_matches("sm_")
            .trim_end_matches(char::is_alphabetic)
            .parse()
            .unwrap_or(0);
        if number < 90 {
            return Ok(None);
        }
        if !has_symbols(&["cuTensorMapEncodeTiled"]) {
            return Err(Error::Unsupported {
                backend: BackendKind::Cuda,
                what: "tile maps on this driver (cuTensorMapEncodeTiled: CUDA 12.0 and newer)",
            });
        }
        use sys::CUtensorMapDataType_enum as Data;
        let data = match shape.elem_bytes {
            1 => Data::CU_TENSOR_MAP_DATA_TYPE_UINT8,
            2 => Data::CU_TENSOR_MAP_DATA_TYPE_UINT16,
            4 => Data::CU_TENSOR_MAP_DATA_TYPE_UINT32,
            _ => Data::CU_TENSOR_MAP_DATA_TYPE_UINT64,
        };
        let dims = [shape.cols, shape.rows];
        let strides = [shape.cols * u64::from(shape.elem_bytes)];
        let boxes = [shape.box_cols, shape.box_rows];
        let unit = [1u32, 1];
        let mut map = sys::CUtensorMap { opaque: [0; 16] };
        // SAFETY: valid out-pointer and arrays of the rank's lengths; the driver reads the
        // address only to describe it (the caller keeps the allocation alive while used).
        check("cuTensorMapEncodeTiled", unsafe {
            sys::cuTensorMapEncodeTiled(
                &mut map,
                data,
                2,
                shape.base as *mut core::ffi::c_void,
                dims.as_ptr(),
                strides.as_ptr(),
                boxes.as_ptr(),
                unit.as_ptr(),
                sys::CUtensorMapInterleave_enum::CU_TENSOR_MAP_INTERLEAVE_NONE,
                sys::CUtensorMapSwizzle_enum::CU_TENSOR_MAP_SWIZZLE_128B,
                sys::CUtensorMapL2promotion_enum::CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                sys::CUtensorMapFloatOOBfill_enum::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
            )
        })?;
        Ok(Some(map.opaque))
    }

    /// Uses [`CudaDevice::shared_api`]; when `cuMemCreate` fails for a reason other than
    /// memory (a driver or container without file-descriptor export), falls back to the
    /// legacy IPC API if the driver has it. CUDA memory is coherent for peers either way:
    /// the kind changes nothing.
    fn alloc_exportable(
        &self,
        ctx: &Self::Context,
        info: &DeviceInfo,
        bytes: usize,
        _kind: MemoryKind,
    ) -> Result<u64> {
        match self.shared.default_api(ctx)? {
            SharedApi::Vmm => match self.shared.alloc(ctx, info.ordinal, bytes, SharedApi::Vmm) {
                Err(Error::Driver {
                    call: "cuMemCreate",
                    message,
                    ..
                }) if self.shared.ipc_available(ctx) => {
                    tracing::debug!(%message, "cuMemCreate failed; using the legacy IPC API");
                    self.shared.alloc(ctx, info.ordinal, bytes, SharedApi::Ipc)
                }
                other => other,
            },
            SharedApi::Ipc => self.shared.alloc(ctx, info.ordinal, bytes, SharedApi::Ipc),
        }
    }

    fn export_fd(&self, ctx: &Self::Context, addr: u64) -> Result<OwnedFd> {
        self.shared.export_fd(ctx, addr)
    }

    fn import_fd(
        &self,
        ctx: &Self::Context,
        fd: BorrowedFd<'_>,
        bytes: usize,
        _kind: MemoryKind,
    ) -> Result<u64> {
        self.shared.import_fd(ctx, fd, bytes)
    }

    unsafe fn free_shared(&self, ctx: &Self::Context, addr: u64) -> Result<()> {
        // SAFETY: per the caller.
        unsafe { self.shared.free(ctx, addr) }
    }

    fn supports_shared_memory(&self, ctx: &Self::Context) -> bool {
        self.shared.supported(ctx)
    }
}

/// The CUDA-only calls of a device.
impl GpuDevice<Cuda> {
    /// The compute capability, (major, minor).
    pub fn compute_capability(&self) -> (u32, u32) {
        self.api().capability
    }

    /// The API [`alloc_exportable`](crate::Device::alloc_exportable) uses on this device:
    /// the virtual-memory API where the device supports POSIX file-descriptor handles,
    /// else the legacy IPC API. Errors with [`Error::Unsupported`] when neither is usable.
    pub fn shared_api(&self) -> Result<SharedApi> {
        self.api().shared.default_api(self.context())
    }

    /// Allocates `bytes` (> 0) of memory other processes can map, with `api` (see
    /// [`Device::alloc_exportable`](crate::Device::alloc_exportable), which picks the API
    /// itself). A [`SharedApi::Vmm`] allocation is rounded up to the driver's granularity
    /// (2 MiB on current GPUs); a [`SharedApi::Ipc`] one is a plain `cuMemAlloc`
    /// allocation whose handle [`ipc_handle`](GpuDevice::ipc_handle) gives. Either is
    /// exported with `export_fd` and released with `free_shared`.
    pub fn alloc_exportable_with(&self, bytes: usize, api: SharedApi) -> Result<u64> {
        let ordinal = crate::Device::info(self).ordinal;
        self.api().shared.alloc(self.context(), ordinal, bytes, api)
    }

    /// The 64-byte legacy IPC handle (`cuIpcGetMemHandle`) of the `cuMemAlloc` allocation
    /// that starts at `addr`, to send as bytes to another process, which opens it with
    /// [`open_ipc_handle`](GpuDevice::open_ipc_handle).
    pub fn ipc_handle(&self, addr: u64) -> Result<[u8; IPC_HANDLE_BYTES]> {
        self.api().shared.ipc_handle(self.context(), addr)
    }

    /// Maps the allocation another process exported as the legacy IPC handle `handle`
    /// (`cuIpcOpenMemHandle`) on this device and returns its device address, released
    /// with `free_shared`. A process cannot open its own handles.
    pub fn open_ipc_handle(&self, handle: &[u8; IPC_HANDLE_BYTES]) -> Result<u64> {
        self.api().shared.open_ipc_handle(self.context(), handle)
    }

    /// The primary context's handle, for peer access between devices.
    pub(super) fn raw_context(&self) -> sys::CUcontext {
        self.context().raw
    }
}
