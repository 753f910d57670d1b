//! The block barrier of a kernel whose threads run one after another (it calls no
//! `sync_threads`): nothing to wait for. Kernels that meet at barriers run their blocks
//! as fibers (`fibers.rs`), whose barrier the fibers' contexts name instead.

use core::ffi::c_void;

/// `CpuLaunchContext::barrier` for blocks whose threads run one after another.
///
/// # Safety
/// Any pointer: it is not read.
pub(crate) unsafe extern "C" fn no_barrier(_state: *mut c_void) {}
