//! Loading the CUDA driver library at run time, and turning its results into errors.
//!
//! The driver calls go through `cudarc::driver::sys`, which resolves each symbol on first
//! use and panics when the library or a symbol is missing. [`load`] therefore probes the
//! library and every symbol this backend calls before the first call, so that a machine
//! without a (recent enough) driver gets an error, never a panic.

use std::ffi::CStr;
use std::sync::OnceLock;

use cudarc::driver::sys::{self, CUresult};

use crate::error::{Error, Result};
use crate::{runtime_loader, work_queues, BackendKind};

/// Every driver symbol the backend calls (as cudarc resolves them).
const SYMBOLS: &[&str] = &[
    "cuInit",
    "cuDriverGetVersion",
    "cuGetErrorName",
    "cuGetErrorString",
    "cuDeviceGetCount",
    "cuDeviceGet",
    "cuDeviceGetName",
    "cuDeviceGetUuid_v2",
    "cuDeviceGetAttribute",
    "cuDeviceTotalMem_v2",
    "cuDeviceCanAccessPeer",
    "cuDevicePrimaryCtxRetain",
    "cuDevicePrimaryCtxRelease_v2",
    "cuDevicePrimaryCtxGetState",
    "cuCtxSetCurrent",
    "cuCtxEnablePeerAccess",
    "cuMemAlloc_v2",
    "cuMemFree_v2",
    "cuMemcpyHtoDAsync_v2",
    "cuMemcpyDtoHAsync_v2",
    "cuMemcpyDtoDAsync_v2",
    "cuMemsetD8Async",
    "cuStreamCreate",
    "cuStreamDestroy_v2",
    "cuStreamQuery",
    "cuStreamIsCapturing",
    "cuStreamBeginCapture_v2",
    "cuStreamEndCapture",
    "cuGraphInstantiateWithFlags",
    "cuGraphLaunch",
    "cuGraphDestroy",
    "cuGraphExecDestroy",
    "cuEventCreate",
    "cuEventDestroy_v2",
    "cuEventRecord",
    "cuStreamWaitEvent",
    "cuEventQuery",
    "cuModuleLoadDataEx",
    "cuModuleUnload",
    "cuModuleGetFunction",
    "cuFuncSetAttribute",
    "cuLaunchKernel",
    "cuOccupancyMaxActiveBlocksPerMultiprocessor",
];

/// The variable that sets the hardware queues of a CUDA context, the driver's default,
/// and what iris asks for (the most the driver takes).
const QUEUES_VAR: &str = "CUDA_DEVICE_MAX_CONNECTIONS";
const QUEUES_DEFAULT: u32 = 8;
const QUEUES_WANTED: u32 = 32;

/// `cuEventElapsedTime` under the name this driver exports (`_v2` since CUDA 12.8).
pub(super) type ElapsedTimeFn =
    unsafe extern "C" fn(*mut f32, sys::CUevent, sys::CUevent) -> CUresult;

/// What loading the driver found.
pub(super) struct Driver {
    /// The driver's CUDA version, `major * 1000 + minor * 10`.
    pub(super) version: i32,
    /// `cuEventElapsedTime`, resolved by hand: cudarc binds one name per CUDA version.
    pub(super) elapsed_time: ElapsedTimeFn,
    /// Hardware queues (connections) of each device's primary context, by ordinal.
    pub(super) work_queues: Vec<u32>,
}

static DRIVER: OnceLock<std::result::Result<Driver, String>> = OnceLock::new();

/// Loads and initialises the driver once per process; later calls return the same result.
pub(super) fn load() -> Result<&'static Driver> {
    runtime_loader::load_once(&DRIVER, BackendKind::Cuda, load_once)
}

fn load_once() -> std::result::Result<Driver, String> {
    // SAFETY: loading the system's driver library runs its initialisers, which is what
    // every CUDA program does.
    if !unsafe { sys::is_culib_present() } {
        return Err("libcuda.so (the NVIDIA driver) was not found".into());
    }
    // SAFETY: the library is present, so `culib` returns it rather than panicking.
    let lib = unsafe { sys::culib() };
    let missing: Vec<&str> = SYMBOLS
        .iter()
        .copied()
        // SAFETY: only the symbol's presence is checked; nothing is called.
        .filter(|name| unsafe { lib.get::<*const ()>(name.as_bytes()) }.is_err())
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "the CUDA driver is too old: it lacks {}",
            missing.join(", ")
        ));
    }
    // SAFETY: the symbols have the documented signature of cuEventElapsedTime.
    let elapsed_time = unsafe {
        lib.get::<ElapsedTimeFn>(b"cuEventElapsedTime_v2")
            .or_else(|_| lib.get::<ElapsedTimeFn>(b"cuEventElapsedTime"))
            .map(|f| *f)
            .map_err(|e| format!("the CUDA driver lacks cuEventElapsedTime: {e}"))?
    };
    // Before the driver makes a context: enough hardware queues for every rank's stream.
    let queues = work_queues::claim(QUEUES_VAR, QUEUES_DEFAULT, QUEUES_WANTED);
    // SAFETY: plain driver calls with valid out-pointers.
    unsafe {
        let r = sys::cuInit(0);
        if r != CUresult::CUDA_SUCCESS {
            return Err(format!("cuInit failed: {}", describe(r)));
        }
        let mut version = 0;
        let r = sys::cuDriverGetVersion(&mut version);
        if r != CUresult::CUDA_SUCCESS {
            return Err(format!("cuDriverGetVersion failed: {}", describe(r)));
        }
        Ok(Driver {
            version,
            elapsed_time,
            work_queues: primary_contexts_active()?
                .into_iter()
                .map(|active| queues.for_context(active))
                .collect(),
        })
    }
}

/// Whether each device's primary context already exists (another library of the process
/// made it, with the queue count in force then).
fn primary_contexts_active() -> std::result::Result<Vec<bool>, String> {
    let mut count = 0;
    // SAFETY: a valid out-pointer; the driver is initialised.
    let r = unsafe { sys::cuDeviceGetCount(&mut count) };
    if r != CUresult::CUDA_SUCCESS {
        return Err(format!("cuDeviceGetCount failed: {}", describe(r)));
    }
    (0..count.max(0))
        .map(|ordinal| {
            let (mut device, mut flags, mut active) = (0, 0, 0);
            // SAFETY: valid out-pointers and an ordinal below the count.
            let r = unsafe {
                match sys::cuDeviceGet(&mut device, ordinal) {
                    CUresult::CUDA_SUCCESS => {
                        sys::cuDevicePrimaryCtxGetState(device, &mut flags, &mut active)
                    }
                    failed => failed,
                }
            };
            if r == CUresult::CUDA_SUCCESS {
                Ok(active != 0)
            } else {
                Err(format!(
                    "reading device {ordinal}'s context state failed: {}",
                    describe(r)
                ))
            }
        })
        .collect()
}

/// Whether the loaded driver exports every one of `symbols` (for calls outside
/// [`SYMBOLS`], which a driver may lack without the backend being unavailable). False when
/// the driver is not loaded.
pub(super) fn has_symbols(symbols: &[&str]) -> bool {
    if load().is_err() {
        return false;
    }
    // SAFETY: the driver loaded, so the library is present and `culib` returns it.
    let lib = unsafe { sys::culib() };
    symbols
        .iter()
        // SAFETY: only the symbol's presence is checked; nothing is called.
        .all(|name| unsafe { lib.get::<*const ()>(name.as_bytes()) }.is_ok())
}

/// `CUDA_ERROR_NAME: description` for a result code.
pub(super) fn describe(r: CUresult) -> String {
    let mut name = std::ptr::null();
    let mut text = std::ptr::null();
    // SAFETY: the driver writes pointers to static strings, or leaves them null.
    unsafe {
        if sys::cuGetErrorName(r, &mut name) != CUresult::CUDA_SUCCESS || name.is_null() {
            return format!("CUDA error {}", r as u32);
        }
        let name = CStr::from_ptr(name).to_string_lossy();
        if sys::cuGetErrorString(r, &mut text) != CUresult::CUDA_SUCCESS || text.is_null() {
            return name.into_owned();
        }
        format!("{name}: {}", CStr::from_ptr(text).to_string_lossy())
    }
}

/// The error for a failed driver call.
pub(super) fn error(call: &'static str, r: CUresult) -> Error {
    Error::Driver {
        backend: BackendKind::Cuda,
        call,
        message: describe(r),
    }
}

/// `Ok` when `r` is success, else the error naming `call`.
pub(super) fn check(call: &'static str, r: CUresult) -> Result<()> {
    if r == CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(error(call, r))
    }
}
