//! Loading a kernel unit's PTX into a context and resolving its kernels.

use std::borrow::Cow;
use std::ffi::c_void;
use std::sync::OnceLock;

use cudarc::driver::sys::{self, CUfunction, CUjit_option, CUmodule, CUresult};
use iris_device::abi::{CodeObject, KernelUnit};

use super::context::PrimaryContext;
use super::driver::describe;
use super::target::select_ptx;
use crate::error::{Error, Result};

/// Bytes kept of the JIT compiler's error log.
const LOG_BYTES: usize = 16 * 1024;

/// Loads the PTX of `unit` that fits a device of compute capability `major.minor` into
/// `ctx`, with the JIT's error log in the error.
pub(super) fn load_ptx(
    ctx: &PrimaryContext,
    unit: &'static KernelUnit,
    capability: (u32, u32),
) -> Result<(CUmodule, &'static CodeObject, Vec<u64>)> {
    let object = select_ptx(unit, capability.0, capability.1)?;
    let _span =
        tracing::debug_span!("load_module", unit = unit.id, target = object.target).entered();
    let ptx: Cow<[u8]> = match object.bytes.last() {
        Some(0) => Cow::Borrowed(object.bytes),
        _ => Cow::Owned([object.bytes, b"\0"].concat()),
    };
    ctx.make_current()?;
    let raw = load_data(&ptx).map_err(|reason| Error::ModuleLoad {
        unit: unit.id,
        target: object.target,
        reason,
    })?;
    Ok((raw, object, Vec::new()))
}

/// Loads `function` onto the device now. With the driver's lazy loading (the default since
/// CUDA 12.2) a kernel is otherwise loaded at its first launch, and that load may wait for
/// the context's running kernels: a rank's first launch of a kernel would then wait behind
/// another rank's kernel spinning at a barrier for it, a deadlock. Loading every kernel when
/// its module loads (a moment every rank reaches without waiting kernels, see
/// `Ccl::preload`) takes the load off the launch path. Drivers before CUDA 12.4 have no
/// `cuFuncLoad`; there nothing is done here.
pub(super) fn load_now(function: CUfunction) -> std::result::Result<(), String> {
    static HAS_FUNC_LOAD: OnceLock<bool> = OnceLock::new();
    if !*HAS_FUNC_LOAD.get_or_init(|| super::driver::has_symbols(&["cuFuncLoad"])) {
        return Ok(());
    }
    // SAFETY: a function handle of a live module.
    let r = unsafe { sys::cuFuncLoad(function) };
    if r == CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(format!("cuFuncLoad failed: {}", describe(r)))
    }
}

/// `cuModuleLoadDataEx` with the JIT's error log, which the error then carries.
fn load_data(ptx: &[u8]) -> std::result::Result<CUmodule, String> {
    let mut log = vec![0u8; LOG_BYTES];
    let mut options = [
        CUjit_option::CU_JIT_ERROR_LOG_BUFFER,
        CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
    ];
    // The JIT reads the size option's value from the pointer itself.
    let mut values = [log.as_mut_ptr().cast::<c_void>(), LOG_BYTES as *mut c_void];
    let mut raw = std::ptr::null_mut();
    // SAFETY: `ptx` is NUL-terminated; the option arrays have two entries each and the log
    // buffer outlives the call.
    let r = unsafe {
        sys::cuModuleLoadDataEx(
            &mut raw,
            ptx.as_ptr().cast(),
            options.len() as u32,
            options.as_mut_ptr(),
            values.as_mut_ptr(),
        )
    };
    if r == CUresult::CUDA_SUCCESS {
        return Ok(raw);
    }
    let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
    let text = String::from_utf8_lossy(&log[..end]);
    Err(if text.trim().is_empty() {
        describe(r)
    } else {
        format!("{}: {}", describe(r), text.trim())
    })
}
