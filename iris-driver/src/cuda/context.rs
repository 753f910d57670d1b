//! The primary context of one device, shared by everything created on it.

use cudarc::driver::sys::{self, CUcontext, CUdevice};

use super::driver::check;
use crate::error::Result;

/// A retained primary context. Streams, events and modules hold it (through an `Arc`) so
/// that it outlives them; it is released when the last of them goes.
pub struct PrimaryContext {
    pub(super) ordinal: usize,
    pub(super) device: CUdevice,
    pub(super) raw: CUcontext,
}

// SAFETY: a CUDA context may be used from any thread once made current there, which every
// user of `PrimaryContext` does first (`make_current`).
unsafe impl Send for PrimaryContext {}
// SAFETY: as above; the driver synchronises calls on one context.
unsafe impl Sync for PrimaryContext {}

impl PrimaryContext {
    /// Retains the primary context of `device` (the one the runtime API and other
    /// libraries of the process share).
    pub(super) fn retain(ordinal: usize, device: CUdevice) -> Result<PrimaryContext> {
        let mut raw = std::ptr::null_mut();
        // SAFETY: a valid device handle and out-pointer.
        check("cuDevicePrimaryCtxRetain", unsafe {
            sys::cuDevicePrimaryCtxRetain(&mut raw, device)
        })?;
        Ok(PrimaryContext {
            ordinal,
            device,
            raw,
        })
    }

    /// Makes the context current on the calling thread (ranks are threads; each call may
    /// come from another one).
    #[inline]
    pub(super) fn make_current(&self) -> Result<()> {
        // SAFETY: `raw` is a retained context.
        check("cuCtxSetCurrent", unsafe { sys::cuCtxSetCurrent(self.raw) })
    }

    /// An identifier of the context, for error messages and ownership checks.
    pub(super) fn id(&self) -> u64 {
        self.raw as u64
    }
}

impl Drop for PrimaryContext {
    fn drop(&mut self) {
        // SAFETY: balances the retain in `retain`.
        let r = unsafe { sys::cuDevicePrimaryCtxRelease_v2(self.device) };
        if let Err(err) = check("cuDevicePrimaryCtxRelease_v2", r) {
            tracing::warn!(%err, "releasing a CUDA context failed");
        }
    }
}
