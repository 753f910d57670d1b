//! Loading the HIP runtime at run time, and turning its results into errors.
//!
//! The calls go through `cubecl_hip_sys`, which resolves each symbol on use and panics when
//! the library or a symbol is missing. [`load`] therefore checks the libraries and probes
//! every symbol this backend calls before the first call, so that a machine without ROCm
//! (or with one too old) gets an error, never a panic.

use std::env;
use std::ffi::CStr;
use std::path::PathBuf;
use std::sync::OnceLock;

use cubecl_hip_sys as hip;
use cubecl_hip_sys::hipError_t;
use libloading::Library;

use crate::error::{Error, Result};
use crate::{runtime_loader, work_queues, BackendKind};

/// Every HIP symbol the backend calls.
const SYMBOLS: &[&str] = &[
    "hipInit",
    "hipRuntimeGetVersion",
    "hipGetErrorName",
    "hipGetErrorString",
    "hipGetDeviceCount",
    "hipSetDevice",
    "hipGetDevice",
    "hipDeviceGetName",
    "hipDeviceGetUuid",
    "hipDeviceGetAttribute",
    "hipDeviceTotalMem",
    "hipGetDevicePropertiesR0600",
    "hipDeviceCanAccessPeer",
    "hipDeviceEnablePeerAccess",
    "hipMalloc",
    "hipExtMallocWithFlags",
    "hipFree",
    "hipMemPoolCreate",
    "hipMemPoolSetAttribute",
    "hipMallocFromPoolAsync",
    "hipFreeAsync",
    "hipHostMalloc",
    "hipHostGetDevicePointer",
    "hipHostFree",
    "hipMemcpyHtoDAsync",
    "hipMemcpyDtoHAsync",
    "hipMemcpyDtoDAsync",
    "hipMemsetD8Async",
    "hipStreamCreateWithFlags",
    "hipStreamDestroy",
    "hipStreamQuery",
    "hipStreamIsCapturing",
    "hipStreamBeginCapture",
    "hipStreamEndCapture",
    "hipGraphInstantiate",
    "hipGraphLaunch",
    "hipGraphDestroy",
    "hipGraphExecDestroy",
    "hipEventCreateWithFlags",
    "hipEventDestroy",
    "hipEventRecord",
    "hipStreamWaitEvent",
    "hipEventQuery",
    "hipEventElapsedTime",
    "hipModuleLoadData",
    "hipModuleUnload",
    "hipModuleGetFunction",
    "hipModuleLaunchKernel",
    "hipModuleOccupancyMaxActiveBlocksPerMultiprocessor",
];

/// The variable that sets how many hardware queues HIP gives a process's streams per
/// device, HIP's default, and what iris asks for when it is unset.
const QUEUES_VAR: &str = "GPU_MAX_HW_QUEUES";
const QUEUES_DEFAULT: u32 = 4;
const QUEUES_WANTED: u32 = 16;

/// What loading the runtime found.
pub(super) struct Runtime {
    /// The HIP runtime version (`major * 10_000_000 + minor * 100_000 + patch`).
    pub(super) version: i32,
    /// Hardware queues for this process's streams on each device.
    pub(super) work_queues: u32,
}

static RUNTIME: OnceLock<std::result::Result<Runtime, String>> = OnceLock::new();

/// Loads and initialises the HIP runtime once per process; later calls return the same
/// result.
pub(super) fn load() -> Result<&'static Runtime> {
    runtime_loader::load_once(&RUNTIME, BackendKind::Hip, load_once)
}

fn load_once() -> std::result::Result<Runtime, String> {
    if !hip::is_available() {
        return Err(
            "libamdhip64.so and libhiprtc.so (ROCm's HIP runtime) were not found; install ROCm or set ROCM_PATH"
                .into(),
        );
    }
    let lib = open_amdhip()?;
    let missing: Vec<&str> = SYMBOLS
        .iter()
        .copied()
        // SAFETY: only the symbol's presence is checked; nothing is called.
        .filter(|name| unsafe { lib.get::<*const ()>(name.as_bytes()) }.is_err())
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "the HIP runtime is too old (ROCm 6 or newer is needed): it lacks {}",
            missing.join(", ")
        ));
    }
    // Before the runtime starts: enough hardware queues for every rank's stream. (A HIP
    // runtime another library started earlier has already read it.)
    let queues = work_queues::claim(QUEUES_VAR, QUEUES_DEFAULT, QUEUES_WANTED);
    // SAFETY: plain runtime calls with valid out-pointers; every symbol is present.
    unsafe {
        check("hipInit", hip::hipInit(0)).map_err(|e| e.to_string())?;
        let mut version = 0;
        check(
            "hipRuntimeGetVersion",
            hip::hipRuntimeGetVersion(&mut version),
        )
        .map_err(|e| e.to_string())?;
        Ok(Runtime {
            version,
            work_queues: queues.for_context(false),
        })
    }
}

/// Opens `libamdhip64` where `cubecl_hip_sys` looks for it (`$ROCM_PATH/lib`,
/// `$HIP_PATH/lib`, then the loader's path), to probe its symbols. The loader hands back
/// the library the bindings already opened.
fn open_amdhip() -> std::result::Result<Library, String> {
    let names = ["libamdhip64.so", "libamdhip64.so.1", "libamdhip64.so.0"];
    let dirs: Vec<PathBuf> = ["ROCM_PATH", "HIP_PATH"]
        .into_iter()
        .filter_map(env::var_os)
        .flat_map(|p| {
            let p = PathBuf::from(p);
            [p.join("lib"), p]
        })
        .collect();
    let candidates = dirs
        .iter()
        .flat_map(|d| names.iter().map(move |n| d.join(n)))
        .chain(names.iter().map(PathBuf::from));
    let mut errors = Vec::new();
    for candidate in candidates {
        // SAFETY: loading the HIP runtime runs its initialisers, as every HIP program does.
        match unsafe { Library::new(&candidate) } {
            Ok(lib) => return Ok(lib),
            Err(e) => errors.push(format!("{}: {e}", candidate.display())),
        }
    }
    Err(format!(
        "libamdhip64.so could not be opened: {}",
        errors.join("; ")
    ))
}

/// Whether the loaded runtime exports every one of `symbols` (for calls outside
/// [`SYMBOLS`], which a runtime may lack without the backend being unavailable). False
/// when the runtime is not loaded.
pub(super) fn has_symbols(symbols: &[&str]) -> bool {
    if load().is_err() {
        return false;
    }
    let Ok(lib) = open_amdhip() else {
        return false;
    };
    symbols
        .iter()
        // SAFETY: only the symbol's presence is checked; nothing is called.
        .all(|name| unsafe { lib.get::<*const ()>(name.as_bytes()) }.is_ok())
}

/// `hipErrorName: description` for a result code.
pub(super) fn describe(r: hipError_t) -> String {
    // SAFETY: both return pointers to static strings (or null).
    unsafe {
        let name = hip::hipGetErrorName(r);
        let text = hip::hipGetErrorString(r);
        let part = |p: *const std::ffi::c_char| {
            (!p.is_null()).then(|| CStr::from_ptr(p).to_string_lossy().into_owned())
        };
        match (part(name), part(text)) {
            (Some(n), Some(t)) => format!("{n}: {t}"),
            (Some(n), None) => n,
            _ => format!("HIP error {r}"),
        }
    }
}

/// The error for a failed HIP call.
pub(super) fn error(call: &'static str, r: hipError_t) -> Error {
    Error::Driver {
        backend: BackendKind::Hip,
        call,
        message: describe(r),
    }
}

/// `Ok` when `r` is success, else the error naming `call`.
pub(super) fn check(call: &'static str, r: hipError_t) -> Result<()> {
    if r == hip::hipError_t_hipSuccess {
        Ok(())
    } else {
        Err(error(call, r))
    }
}

/// Makes device `ordinal` current on the calling thread (HIP's per-thread device).
#[inline]
pub(super) fn set_device(ordinal: i32) -> Result<()> {
    // SAFETY: the runtime is loaded (every caller holds an object made after `load`).
    check("hipSetDevice", unsafe { hip::hipSetDevice(ordinal) })
}
