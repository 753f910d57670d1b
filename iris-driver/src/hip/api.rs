//! The HIP runtime as the generic GPU device's function table ([`GpuApi`]), and the
//! HIP-only calls of a [`HipDevice`].

use std::os::fd::{BorrowedFd, OwnedFd};

use cubecl_hip_sys::{
    self as hip, hipError_t, hipEvent_t, hipFunction_t, hipModule_t, hipStream_t,
};
use std::ffi::CStr;

use iris_device::abi::{CodeObject, KernelUnit};

use super::info::query;
use super::module::load_hsaco;
use super::runtime::{check, describe, error, set_device};
use super::shared::SharedMemory;
use crate::error::Result;
use crate::gpu::{GpuApi, GpuDevice, GpuEvent, GpuModule, GpuStream, Query};
use crate::{BackendKind, DeviceInfo, LaunchDims, MemoryKind};

/// An AMD GPU: its processor name and its shared-memory support.
pub struct Hip {
    gcn_arch_name: String,
    shared: SharedMemory,
}

/// A HIP device, selected (`hipSetDevice`) on the calling thread before every call.
pub type HipDevice = GpuDevice<Hip>;
/// A non-blocking HIP stream of one device.
pub type HipStream = GpuStream<Hip>;
/// A HIP event with timing enabled.
pub type HipEvent = GpuEvent<Hip>;
/// A kernel unit's code object loaded on one device, with one function per kernel.
pub type HipModule = GpuModule<Hip>;

/// `Done`, `NotReady` or the error of a query.
fn query_result(call: &'static str, r: hipError_t) -> Query {
    if r == hip::hipError_t_hipSuccess {
        Query::Done
    } else if r == hip::hipError_t_hipErrorNotReady {
        Query::NotReady
    } else {
        Query::Failed(error(call, r))
    }
}

impl crate::gpu::Sealed for Hip {}

impl GpuApi for Hip {
    const KIND: BackendKind = BackendKind::Hip;
    /// HIP's device ordinal: its current device is per thread.
    type Context = i32;
    type Stream = hipStream_t;
    type Event = hipEvent_t;
    type Module = hipModule_t;
    type Function = hipFunction_t;
    type Graph = hip::hipGraph_t;
    type GraphExec = hip::hipGraphExec_t;

    fn open(ordinal: usize) -> Result<(Self, i32, DeviceInfo)> {
        let ordinal = i32::try_from(ordinal).unwrap_or(i32::MAX);
        let (info, gcn_arch_name) = query(ordinal)?;
        let api = Hip {
            gcn_arch_name,
            shared: SharedMemory::new(),
        };
        Ok((api, ordinal, info))
    }

    fn make_current(ctx: &i32) -> Result<()> {
        set_device(*ctx)
    }

    fn context_id(ctx: &i32) -> u64 {
        *ctx as u64
    }

    fn ordinal(ctx: &i32) -> usize {
        usize::try_from(*ctx).unwrap_or(0)
    }

    unsafe fn stream_create() -> Result<hipStream_t> {
        let mut raw = std::ptr::null_mut();
        // SAFETY: a valid out-pointer, with the device selected (the caller's promise).
        check("hipStreamCreateWithFlags", unsafe {
            hip::hipStreamCreateWithFlags(&mut raw, hip::hipStreamNonBlocking)
        })?;
        Ok(raw)
    }

    unsafe fn stream_create_urgent() -> Result<hipStream_t> {
        let (mut least, mut greatest) = (0, 0);
        // SAFETY: valid out-pointers, with the device selected (the caller's promise).
        check("hipDeviceGetStreamPriorityRange", unsafe {
            hip::hipDeviceGetStreamPriorityRange(&mut least, &mut greatest)
        })?;
        let mut raw = std::ptr::null_mut();
        // SAFETY: a valid out-pointer, a priority from the device's range.
        check("hipStreamCreateWithPriority", unsafe {
            hip::hipStreamCreateWithPriority(&mut raw, hip::hipStreamNonBlocking, greatest)
        })?;
        Ok(raw)
    }

    unsafe fn stream_destroy(stream: hipStream_t) -> Result<()> {
        // SAFETY: a live stream (the caller's promise).
        check("hipStreamDestroy", unsafe { hip::hipStreamDestroy(stream) })
    }

    unsafe fn stream_query(stream: hipStream_t) -> Query {
        // SAFETY: a live stream.
        query_result("hipStreamQuery", unsafe { hip::hipStreamQuery(stream) })
    }

    fn stream_from_raw(raw: *mut std::ffi::c_void) -> hipStream_t {
        raw.cast()
    }

    unsafe fn stream_is_capturing(stream: hipStream_t) -> Result<bool> {
        let mut status = hip::hipStreamCaptureStatus_hipStreamCaptureStatusNone;
        // SAFETY: a live stream and a valid out-pointer.
        check("hipStreamIsCapturing", unsafe {
            hip::hipStreamIsCapturing(stream, &mut status)
        })?;
        Ok(status != hip::hipStreamCaptureStatus_hipStreamCaptureStatusNone)
    }

    unsafe fn stream_begin_capture(stream: hipStream_t) -> Result<()> {
        let mode = hip::hipStreamCaptureMode_hipStreamCaptureModeThreadLocal;
        // SAFETY: a live stream.
        check("hipStreamBeginCapture", unsafe {
            hip::hipStreamBeginCapture(stream, mode)
        })
    }

    unsafe fn stream_end_capture(stream: hipStream_t) -> Result<hip::hipGraph_t> {
        let mut graph = std::ptr::null_mut();
        // SAFETY: a live stream capturing on this thread, a valid out-pointer.
        check("hipStreamEndCapture", unsafe {
            hip::hipStreamEndCapture(stream, &mut graph)
        })?;
        Ok(graph)
    }

    unsafe fn graph_instantiate(graph: hip::hipGraph_t) -> Result<hip::hipGraphExec_t> {
        let mut exec = std::ptr::null_mut();
        // SAFETY: a live graph, valid out-pointers (no error node or log wanted).
        check("hipGraphInstantiate", unsafe {
            hip::hipGraphInstantiate(
                &mut exec,
                graph,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                0,
            )
        })?;
        Ok(exec)
    }

    unsafe fn graph_launch(exec: hip::hipGraphExec_t, stream: hipStream_t) -> Result<()> {
        // SAFETY: live handles.
        check("hipGraphLaunch", unsafe {
            hip::hipGraphLaunch(exec, stream)
        })
    }

    unsafe fn graph_destroy(graph: hip::hipGraph_t) -> Result<()> {
        // SAFETY: a live graph, not used afterwards.
        check("hipGraphDestroy", unsafe { hip::hipGraphDestroy(graph) })
    }

    unsafe fn graph_exec_destroy(exec: hip::hipGraphExec_t) -> Result<()> {
        // SAFETY: a live instantiated graph, not used afterwards.
        check("hipGraphExecDestroy", unsafe {
            hip::hipGraphExecDestroy(exec)
        })
    }

    unsafe fn event_create() -> Result<hipEvent_t> {
        let mut raw = std::ptr::null_mut();
        // SAFETY: a valid out-pointer, with the device selected.
        check("hipEventCreateWithFlags", unsafe {
            hip::hipEventCreateWithFlags(&mut raw, hip::hipEventDefault)
        })?;
        Ok(raw)
    }

    unsafe fn event_destroy(event: hipEvent_t) -> Result<()> {
        // SAFETY: a live event.
        check("hipEventDestroy", unsafe { hip::hipEventDestroy(event) })
    }

    unsafe fn event_record(event: hipEvent_t, stream: hipStream_t) -> Result<()> {
        // SAFETY: live handles.
        check("hipEventRecord", unsafe {
            hip::hipEventRecord(event, stream)
        })
    }

    unsafe fn stream_wait_event(stream: hipStream_t, event: hipEvent_t) -> Result<()> {
        // SAFETY: live handles; flag 0 is the default wait.
        check("hipStreamWaitEvent", unsafe {
            hip::hipStreamWaitEvent(stream, event, 0)
        })
    }

    unsafe fn event_query(event: hipEvent_t) -> Query {
        // SAFETY: a live event.
        query_result("hipEventQuery", unsafe { hip::hipEventQuery(event) })
    }

    unsafe fn event_elapsed_ms(start: hipEvent_t, end: hipEvent_t) -> Result<f32> {
        let mut ms = 0.0f32;
        // SAFETY: live events; the runtime checks that they were recorded.
        check("hipEventElapsedTime", unsafe {
            hip::hipEventElapsedTime(&mut ms, start, end)
        })?;
        Ok(ms)
    }

    /// `hipMalloc` for a device's own buffers, fine-grained memory
    /// (`hipExtMallocWithFlags`) for symmetric heaps, whose system-scope atomics peers
    /// must see.
    unsafe fn mem_alloc(bytes: usize, kind: MemoryKind) -> std::result::Result<u64, String> {
        let mut ptr = std::ptr::null_mut();
        // SAFETY: a valid out-pointer, with the device selected.
        let r = unsafe {
            match kind {
                MemoryKind::Device => hip::hipMalloc(&mut ptr, bytes),
                MemoryKind::Symmetric => {
                    hip::hipExtMallocWithFlags(&mut ptr, bytes, hip::hipDeviceMallocFinegrained)
                }
            }
        };
        if r == hip::hipError_t_hipSuccess {
            Ok(ptr as u64)
        } else {
            Err(describe(r))
        }
    }

    unsafe fn mem_free(addr: u64) -> Result<()> {
        // SAFETY: an allocation of `mem_alloc` (the caller's promise).
        check("hipFree", unsafe { hip::hipFree(addr as *mut _) })
    }

    unsafe fn pool_create(ordinal: usize) -> Result<u64> {
        // SAFETY: the properties are zeroed (the documented default for every field not set).
        let mut props: hip::hipMemPoolProps = unsafe { std::mem::zeroed() };
        props.allocType = hip::hipMemAllocationType_hipMemAllocationTypePinned;
        props.handleTypes = hip::hipMemAllocationHandleType_hipMemHandleTypeNone;
        props.location.type_ = hip::hipMemLocationType_hipMemLocationTypeDevice;
        props.location.id = ordinal as i32;
        let mut pool = std::ptr::null_mut();
        // SAFETY: valid pointers, with the device selected.
        check("hipMemPoolCreate", unsafe {
            hip::hipMemPoolCreate(&mut pool, &props)
        })?;
        let mut keep = u64::MAX;
        let mut no = 0i32;
        // SAFETY: a live pool; the values have the attributes' types (uint64_t, int).
        unsafe {
            check(
                "hipMemPoolSetAttribute",
                hip::hipMemPoolSetAttribute(
                    pool,
                    hip::hipMemPoolAttr_hipMemPoolAttrReleaseThreshold,
                    (&mut keep as *mut u64).cast(),
                ),
            )?;
            check(
                "hipMemPoolSetAttribute",
                hip::hipMemPoolSetAttribute(
                    pool,
                    hip::hipMemPoolAttr_hipMemPoolReuseAllowInternalDependencies,
                    (&mut no as *mut i32).cast(),
                ),
            )?;
        }
        Ok(pool as u64)
    }

    unsafe fn pool_alloc(
        pool: u64,
        bytes: usize,
        stream: hipStream_t,
    ) -> std::result::Result<u64, String> {
        let mut ptr = std::ptr::null_mut();
        // SAFETY: a live pool of the selected device and a live stream.
        let r = unsafe {
            hip::hipMallocFromPoolAsync(&mut ptr, bytes, pool as hip::hipMemPool_t, stream)
        };
        if r == hip::hipError_t_hipSuccess {
            Ok(ptr as u64)
        } else {
            Err(describe(r))
        }
    }

    unsafe fn free_async(addr: u64, stream: hipStream_t) -> Result<()> {
        // SAFETY: an allocation of `pool_alloc` (the caller's promise) and a live stream.
        check("hipFreeAsync", unsafe {
            hip::hipFreeAsync(addr as *mut _, stream)
        })
    }

    unsafe fn host_alloc_mapped(bytes: usize) -> Result<(u64, u64)> {
        let mut host = std::ptr::null_mut();
        let flags = hip::hipHostMallocMapped | hip::hipHostMallocPortable;
        // SAFETY: a valid out-pointer, with a device selected.
        check("hipHostMalloc", unsafe {
            hip::hipHostMalloc(&mut host, bytes, flags)
        })?;
        let mut device = std::ptr::null_mut();
        // SAFETY: `host` is mapped memory just allocated.
        let mapped = check("hipHostGetDevicePointer", unsafe {
            hip::hipHostGetDevicePointer(&mut device, host, 0)
        });
        if let Err(err) = mapped {
            // SAFETY: nothing else has seen `host`.
            let _ = unsafe { hip::hipHostFree(host) };
            return Err(err);
        }
        Ok((host as u64, device as u64))
    }

    unsafe fn host_free(host: u64) -> Result<()> {
        // SAFETY: memory of `host_alloc_mapped` (the caller's promise).
        check("hipHostFree", unsafe { hip::hipHostFree(host as *mut _) })
    }

    unsafe fn memcpy_htod_async(
        dst: u64,
        src: *const u8,
        bytes: usize,
        stream: hipStream_t,
    ) -> Result<()> {
        // SAFETY: the caller vouches for both ranges until the copy completes.
        check("hipMemcpyHtoDAsync", unsafe {
            hip::hipMemcpyHtoDAsync(dst as *mut _, src as *mut _, bytes, stream)
        })
    }

    unsafe fn memcpy_dtoh_async(
        dst: *mut u8,
        src: u64,
        bytes: usize,
        stream: hipStream_t,
    ) -> Result<()> {
        // SAFETY: as above.
        check("hipMemcpyDtoHAsync", unsafe {
            hip::hipMemcpyDtoHAsync(dst.cast(), src as *mut _, bytes, stream)
        })
    }

    unsafe fn memcpy_dtod_async(
        dst: u64,
        src: u64,
        bytes: usize,
        stream: hipStream_t,
    ) -> Result<()> {
        // SAFETY: as above.
        check("hipMemcpyDtoDAsync", unsafe {
            hip::hipMemcpyDtoDAsync(dst as *mut _, src as *mut _, bytes, stream)
        })
    }

    unsafe fn memset_async(dst: u64, value: u8, bytes: usize, stream: hipStream_t) -> Result<()> {
        // SAFETY: as above.
        check("hipMemsetD8Async", unsafe {
            hip::hipMemsetD8Async(dst as *mut _, value, bytes, stream)
        })
    }

    fn load_code_object(
        &self,
        ctx: &i32,
        unit: &'static KernelUnit,
    ) -> Result<(hipModule_t, &'static CodeObject, Vec<u64>)> {
        load_hsaco(*ctx, unit, &self.gcn_arch_name)
    }

    unsafe fn module_function(
        module: hipModule_t,
        name: &CStr,
    ) -> std::result::Result<hipFunction_t, String> {
        let mut function = std::ptr::null_mut();
        // SAFETY: a live module, a NUL-terminated name and a valid out-pointer.
        let r = unsafe { hip::hipModuleGetFunction(&mut function, module, name.as_ptr()) };
        if r == hip::hipError_t_hipSuccess {
            Ok(function)
        } else {
            Err(describe(r))
        }
    }

    /// HIP needs no opt-in for dynamic shared memory, but a launch asking for more than
    /// the device gives a block fails without saying why: refuse it at load, naming the
    /// sizes, as the CUDA driver does.
    unsafe fn allow_dynamic_shared(
        function: hipFunction_t,
        bytes: u32,
    ) -> std::result::Result<(), String> {
        let _ = function;
        let (mut device, mut most) = (0, 0);
        // SAFETY: valid out-pointers; modules load on the current device.
        let r = unsafe { hip::hipGetDevice(&mut device) };
        if r != hip::hipError_t_hipSuccess {
            return Err(format!("hipGetDevice: {}", describe(r)));
        }
        // SAFETY: a valid out-pointer and the current device.
        let r = unsafe {
            hip::hipDeviceGetAttribute(
                &mut most,
                hip::hipDeviceAttribute_t_hipDeviceAttributeMaxSharedMemoryPerBlock,
                device,
            )
        };
        if r != hip::hipError_t_hipSuccess {
            return Err(format!("hipDeviceGetAttribute: {}", describe(r)));
        }
        if i64::from(bytes) > i64::from(most) {
            return Err(format!(
                "its shared arrays take {bytes} bytes, more than the device allows: {most} bytes per block"
            ));
        }
        Ok(())
    }

    unsafe fn module_unload(module: hipModule_t) -> Result<()> {
        // SAFETY: a live module whose launches have completed (the caller's promise).
        check("hipModuleUnload", unsafe { hip::hipModuleUnload(module) })
    }

    unsafe fn launch(
        function: hipFunction_t,
        dims: LaunchDims,
        stream: hipStream_t,
        params: *mut *mut core::ffi::c_void,
    ) -> Result<()> {
        let [gx, gy, gz] = dims.grid;
        let [bx, by, bz] = dims.block;
        // SAFETY: the caller vouches for the function, the stream, the dimensions and the
        // argument slots, which the runtime copies during the call.
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
                stream,
                params,
                std::ptr::null_mut(),
            )
        })
    }

    unsafe fn max_active_blocks(
        function: hipFunction_t,
        block_threads: u32,
        dynamic_shared_bytes: u32,
    ) -> Result<u32> {
        let mut blocks = 0;
        let threads = i32::try_from(block_threads).unwrap_or(i32::MAX);
        // SAFETY: a live function and a valid out-pointer.
        let r = unsafe {
            hip::hipModuleOccupancyMaxActiveBlocksPerMultiprocessor(
                &mut blocks,
                function,
                threads,
                dynamic_shared_bytes as usize,
            )
        };
        check("hipModuleOccupancyMaxActiveBlocksPerMultiprocessor", r)?;
        Ok(u32::try_from(blocks).unwrap_or(0))
    }

    /// `hipMemCreate` with a POSIX file-descriptor handle: fine-grained (uncached) memory
    /// for [`MemoryKind::Symmetric`], pinned device memory for [`MemoryKind::Device`]; the
    /// size is rounded up to the runtime's granularity.
    fn alloc_exportable(
        &self,
        ctx: &i32,
        _info: &DeviceInfo,
        bytes: usize,
        kind: MemoryKind,
    ) -> Result<u64> {
        self.shared.alloc(*ctx, bytes, kind)
    }

    fn export_fd(&self, ctx: &i32, addr: u64) -> Result<OwnedFd> {
        self.shared.export_fd(*ctx, addr)
    }

    /// The exporter chose the memory's kind; the import maps it as it is.
    fn import_fd(
        &self,
        ctx: &i32,
        fd: BorrowedFd<'_>,
        bytes: usize,
        _kind: MemoryKind,
    ) -> Result<u64> {
        self.shared.import_fd(*ctx, fd, bytes)
    }

    unsafe fn free_shared(&self, ctx: &i32, addr: u64) -> Result<()> {
        // SAFETY: per the caller.
        unsafe { self.shared.free(*ctx, addr) }
    }

    fn supports_shared_memory(&self, ctx: &i32) -> bool {
        self.shared.supported(*ctx)
    }
}

/// The HIP-only calls of a device.
impl GpuDevice<Hip> {
    /// The full `gcnArchName`, features included (`gfx942:sramecc+:xnack-`).
    pub fn gcn_arch_name(&self) -> &str {
        &self.api().gcn_arch_name
    }
}
