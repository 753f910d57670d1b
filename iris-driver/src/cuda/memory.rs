//! Device memory: plain `cuMemAlloc` allocations (never the stream-ordered pool, whose
//! memory cannot be exported), copies and sets on a stream.

use cudarc::driver::sys::{self, CUresult};

use super::context::PrimaryContext;
use super::driver::{check, describe};
use super::stream::CudaStream;
use super::wait::COPY_TIMEOUT;
use crate::error::{Error, Result};
use crate::BackendKind;

/// Allocates `bytes` on the context's device.
pub(super) fn alloc(ctx: &PrimaryContext, ordinal: usize, bytes: usize) -> Result<u64> {
    let oom = |reason: String| Error::OutOfMemory {
        backend: BackendKind::Cuda,
        ordinal,
        bytes,
        reason,
    };
    if bytes == 0 {
        return Err(oom("a zero-byte allocation was asked for".into()));
    }
    ctx.make_current()?;
    let mut addr = 0;
    // SAFETY: a valid out-pointer, with the context current.
    match unsafe { sys::cuMemAlloc_v2(&mut addr, bytes) } {
        CUresult::CUDA_SUCCESS => Ok(addr),
        r => Err(oom(describe(r))),
    }
}

/// Frees an allocation of `alloc`.
///
/// # Safety
/// `addr` came from `alloc` on this context and is not used afterwards.
pub(super) unsafe fn free(ctx: &PrimaryContext, addr: u64) -> Result<()> {
    ctx.make_current()?;
    // SAFETY: per the caller.
    check("cuMemFree_v2", unsafe { sys::cuMemFree_v2(addr) })
}

/// Copies host bytes to the device after the stream's prior work; returns once done.
///
/// # Safety
/// `dst..dst + src.len()` lies in a live allocation reachable from the context.
pub(super) unsafe fn htod(stream: &CudaStream, dst: u64, src: &[u8]) -> Result<()> {
    if src.is_empty() {
        return Ok(());
    }
    stream.context().make_current()?;
    // SAFETY: per the caller; the wait below keeps `src` borrowed until the copy is done.
    check("cuMemcpyHtoDAsync_v2", unsafe {
        sys::cuMemcpyHtoDAsync_v2(dst, src.as_ptr().cast(), src.len(), stream.raw())
    })?;
    stream.wait(COPY_TIMEOUT)
}

/// Copies device bytes to the host after the stream's prior work; returns once done.
///
/// # Safety
/// `src..src + dst.len()` lies in a live allocation reachable from the context.
pub(super) unsafe fn dtoh(stream: &CudaStream, dst: &mut [u8], src: u64) -> Result<()> {
    if dst.is_empty() {
        return Ok(());
    }
    stream.context().make_current()?;
    // SAFETY: per the caller; the wait below keeps `dst` borrowed until the copy is done.
    check("cuMemcpyDtoHAsync_v2", unsafe {
        sys::cuMemcpyDtoHAsync_v2(dst.as_mut_ptr().cast(), src, dst.len(), stream.raw())
    })?;
    stream.wait(COPY_TIMEOUT)
}

/// Copies between device addresses, ordered on the stream.
///
/// # Safety
/// Both ranges lie in live allocations reachable from the context until the copy is done.
pub(super) unsafe fn dtod(stream: &CudaStream, dst: u64, src: u64, bytes: usize) -> Result<()> {
    if bytes == 0 {
        return Ok(());
    }
    stream.context().make_current()?;
    // SAFETY: per the caller.
    check("cuMemcpyDtoDAsync_v2", unsafe {
        sys::cuMemcpyDtoDAsync_v2(dst, src, bytes, stream.raw())
    })
}

/// Sets device bytes, ordered on the stream.
///
/// # Safety
/// The range lies in a live allocation reachable from the context until the set is done.
pub(super) unsafe fn set(stream: &CudaStream, dst: u64, value: u8, bytes: usize) -> Result<()> {
    if bytes == 0 {
        return Ok(());
    }
    stream.context().make_current()?;
    // SAFETY: per the caller.
    check("cuMemsetD8Async", unsafe {
        sys::cuMemsetD8Async(dst, value, bytes, stream.raw())
    })
}
