//! Device memory: `hipMalloc` for a device's own buffers, fine-grained memory
//! (`hipExtMallocWithFlags`) for symmetric heaps, whose system-scope atomics peers must see;
//! copies and sets on a stream.

use cubecl_hip_sys as hip;

use super::runtime::{check, describe, set_device};
use super::stream::HipStream;
use super::wait::COPY_TIMEOUT;
use crate::error::{Error, Result};
use crate::{BackendKind, MemoryKind};

/// Allocates `bytes` of `kind` on device `ordinal`.
pub(super) fn alloc(ordinal: i32, bytes: usize, kind: MemoryKind) -> Result<u64> {
    let oom = |reason: String| Error::OutOfMemory {
        backend: BackendKind::Hip,
        ordinal: usize::try_from(ordinal).unwrap_or(0),
        bytes,
        reason,
    };
    if bytes == 0 {
        return Err(oom("a zero-byte allocation was asked for".into()));
    }
    set_device(ordinal)?;
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
    if r != hip::hipError_t_hipSuccess {
        return Err(oom(describe(r)));
    }
    if ptr.is_null() {
        return Err(oom("the runtime returned a null pointer".into()));
    }
    Ok(ptr as u64)
}

/// Frees an allocation of `alloc`.
///
/// # Safety
/// `addr` came from `alloc` on this device and is not used afterwards.
pub(super) unsafe fn free(ordinal: i32, addr: u64) -> Result<()> {
    set_device(ordinal)?;
    // SAFETY: per the caller.
    check("hipFree", unsafe { hip::hipFree(addr as *mut _) })
}

/// Copies host bytes to the device after the stream's prior work; returns once done.
///
/// # Safety
/// `dst..dst + src.len()` lies in a live allocation reachable from the device.
pub(super) unsafe fn htod(stream: &HipStream, dst: u64, src: &[u8]) -> Result<()> {
    if src.is_empty() {
        return Ok(());
    }
    set_device(stream.ordinal())?;
    // SAFETY: per the caller; the wait below keeps `src` borrowed until the copy is done.
    check("hipMemcpyHtoDAsync", unsafe {
        hip::hipMemcpyHtoDAsync(dst as *mut _, src.as_ptr().cast(), src.len(), stream.raw())
    })?;
    stream.wait(COPY_TIMEOUT)
}

/// Copies device bytes to the host after the stream's prior work; returns once done.
///
/// # Safety
/// `src..src + dst.len()` lies in a live allocation reachable from the device.
pub(super) unsafe fn dtoh(stream: &HipStream, dst: &mut [u8], src: u64) -> Result<()> {
    if dst.is_empty() {
        return Ok(());
    }
    set_device(stream.ordinal())?;
    // SAFETY: per the caller; the wait below keeps `dst` borrowed until the copy is done.
    check("hipMemcpyDtoHAsync", unsafe {
        hip::hipMemcpyDtoHAsync(
            dst.as_mut_ptr().cast(),
            src as *mut _,
            dst.len(),
            stream.raw(),
        )
    })?;
    stream.wait(COPY_TIMEOUT)
}

/// Copies between device addresses, ordered on the stream.
///
/// # Safety
/// Both ranges lie in live allocations reachable from the device until the copy is done.
pub(super) unsafe fn dtod(stream: &HipStream, dst: u64, src: u64, bytes: usize) -> Result<()> {
    if bytes == 0 {
        return Ok(());
    }
    set_device(stream.ordinal())?;
    // SAFETY: per the caller.
    check("hipMemcpyDtoDAsync", unsafe {
        hip::hipMemcpyDtoDAsync(dst as *mut _, src as *mut _, bytes, stream.raw())
    })
}

/// Sets device bytes, ordered on the stream.
///
/// # Safety
/// The range lies in a live allocation reachable from the device until the set is done.
pub(super) unsafe fn set(stream: &HipStream, dst: u64, value: u8, bytes: usize) -> Result<()> {
    if bytes == 0 {
        return Ok(());
    }
    set_device(stream.ordinal())?;
    // SAFETY: per the caller.
    check("hipMemsetD8Async", unsafe {
        hip::hipMemsetD8Async(dst as *mut _, value, bytes, stream.raw())
    })
}
