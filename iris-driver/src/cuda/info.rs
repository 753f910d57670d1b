//! What a CUDA device is: name, compute capability, limits.

use std::ffi::CStr;

use cudarc::driver::sys::{self, CUdevice, CUdevice_attribute as Attr};

use super::driver::{check, load};
use super::target::device_target;
use crate::error::Result;
use crate::{BackendKind, DeviceInfo};

/// The handle of device `ordinal`.
pub(super) fn device_handle(ordinal: usize) -> Result<CUdevice> {
    let mut device = 0;
    let ordinal = i32::try_from(ordinal).unwrap_or(i32::MAX);
    // SAFETY: a valid out-pointer; the driver checks the ordinal.
    check("cuDeviceGet", unsafe {
        sys::cuDeviceGet(&mut device, ordinal)
    })?;
    Ok(device)
}

fn attribute(device: CUdevice, attr: Attr) -> Result<u32> {
    let mut value = 0;
    // SAFETY: a valid out-pointer and device handle.
    check("cuDeviceGetAttribute", unsafe {
        sys::cuDeviceGetAttribute(&mut value, attr, device)
    })?;
    Ok(u32::try_from(value).unwrap_or(0))
}

fn name(device: CUdevice) -> Result<String> {
    let mut buf = [0 as std::ffi::c_char; 256];
    // SAFETY: the buffer holds `len` bytes; the driver NUL-terminates within them.
    check("cuDeviceGetName", unsafe {
        sys::cuDeviceGetName(buf.as_mut_ptr(), buf.len() as i32 - 1, device)
    })?;
    // SAFETY: the last byte stays 0, so the string is terminated.
    Ok(unsafe { CStr::from_ptr(buf.as_ptr()) }
        .to_string_lossy()
        .into_owned())
}

/// The device's UUID (the same in every process, whatever `CUDA_VISIBLE_DEVICES` says).
fn uuid(device: CUdevice) -> Result<[u8; 16]> {
    let mut uuid = sys::CUuuid { bytes: [0; 16] };
    // SAFETY: a valid out-pointer and device handle.
    check("cuDeviceGetUuid_v2", unsafe {
        sys::cuDeviceGetUuid_v2(&mut uuid, device)
    })?;
    Ok(uuid.bytes.map(|b| b as u8))
}

/// The device's description and its compute capability (major, minor).
pub(super) fn query(ordinal: usize, device: CUdevice) -> Result<(DeviceInfo, (u32, u32))> {
    let major = attribute(device, Attr::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?;
    let minor = attribute(device, Attr::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?;
    let mut total_memory = 0usize;
    // SAFETY: a valid out-pointer and device handle.
    check("cuDeviceTotalMem_v2", unsafe {
        sys::cuDeviceTotalMem_v2(&mut total_memory, device)
    })?;
    let info = DeviceInfo {
        backend: BackendKind::Cuda,
        ordinal,
        uuid: uuid(device)?,
        name: name(device)?,
        target: device_target(major, minor),
        total_memory: total_memory as u64,
        multiprocessors: attribute(device, Attr::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
        max_threads_per_block: attribute(device, Attr::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
        max_block_dims: [
            attribute(device, Attr::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X)?,
            attribute(device, Attr::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y)?,
            attribute(device, Attr::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z)?,
        ],
        max_grid_dims: [
            attribute(device, Attr::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X)?,
            attribute(device, Attr::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y)?,
            attribute(device, Attr::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)?,
        ],
        work_queues: load()?.work_queues.get(ordinal).copied().unwrap_or(1),
    };
    Ok((info, (major, minor)))
}
