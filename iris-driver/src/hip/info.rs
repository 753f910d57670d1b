//! What a HIP device is: name, processor (`gcnArchName`), limits.

use std::ffi::{c_char, CStr};
use std::mem::MaybeUninit;

use cubecl_hip_sys::{self as hip, hipDeviceAttribute_t};

use super::runtime::{check, load};
use super::target::processor;
use crate::error::Result;
use crate::{BackendKind, DeviceInfo};

fn attribute(ordinal: i32, attr: hipDeviceAttribute_t) -> Result<u32> {
    let mut value = 0;
    // SAFETY: a valid out-pointer; the runtime checks the ordinal.
    check("hipDeviceGetAttribute", unsafe {
        hip::hipDeviceGetAttribute(&mut value, attr, ordinal)
    })?;
    Ok(u32::try_from(value).unwrap_or(0))
}

/// A NUL-terminated C string in a fixed buffer, as text.
fn text(buf: &[c_char]) -> String {
    let bytes: Vec<u8> = buf
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// The device's full `gcnArchName` (`gfx942:sramecc+:xnack-`).
fn gcn_arch_name(ordinal: i32) -> Result<String> {
    let mut props = MaybeUninit::<hip::hipDeviceProp_tR0600>::zeroed();
    // SAFETY: the struct matches the R0600 symbol's layout; the runtime fills it.
    check("hipGetDevicePropertiesR0600", unsafe {
        hip::hipGetDevicePropertiesR0600(props.as_mut_ptr(), ordinal)
    })?;
    // SAFETY: zero-initialised plain data, filled by the runtime.
    let props = unsafe { props.assume_init() };
    Ok(text(&props.gcnArchName))
}

fn name(ordinal: i32) -> Result<String> {
    let mut buf = [0 as c_char; 256];
    // SAFETY: the buffer holds `len` bytes; the runtime NUL-terminates within them.
    check("hipDeviceGetName", unsafe {
        hip::hipDeviceGetName(buf.as_mut_ptr(), buf.len() as i32 - 1, ordinal)
    })?;
    // SAFETY: the last byte stays 0.
    Ok(unsafe { CStr::from_ptr(buf.as_ptr()) }
        .to_string_lossy()
        .into_owned())
}

/// The device's UUID (the same in every process, whatever `HIP_VISIBLE_DEVICES` says).
fn uuid(ordinal: i32) -> Result<[u8; 16]> {
    let mut uuid = hip::hipUUID { bytes: [0; 16] };
    // SAFETY: a valid out-pointer; a HIP device handle is its ordinal.
    check("hipDeviceGetUuid", unsafe {
        hip::hipDeviceGetUuid(&mut uuid, ordinal)
    })?;
    Ok(uuid.bytes.map(|b| b as u8))
}

/// The device's description and its full `gcnArchName`.
pub(super) fn query(ordinal: i32) -> Result<(DeviceInfo, String)> {
    let arch = gcn_arch_name(ordinal)?;
    let mut total_memory = 0usize;
    // SAFETY: a valid out-pointer; the runtime checks the ordinal.
    check("hipDeviceTotalMem", unsafe {
        hip::hipDeviceTotalMem(&mut total_memory, ordinal)
    })?;
    let a = |attr| attribute(ordinal, attr);
    let info = DeviceInfo {
        backend: BackendKind::Hip,
        ordinal: usize::try_from(ordinal).unwrap_or(0),
        uuid: uuid(ordinal)?,
        name: name(ordinal)?,
        target: processor(&arch).to_string(),
        total_memory: total_memory as u64,
        multiprocessors: a(hip::hipDeviceAttribute_t_hipDeviceAttributeMultiprocessorCount)?,
        max_threads_per_block: a(hip::hipDeviceAttribute_t_hipDeviceAttributeMaxThreadsPerBlock)?,
        max_block_dims: [
            a(hip::hipDeviceAttribute_t_hipDeviceAttributeMaxBlockDimX)?,
            a(hip::hipDeviceAttribute_t_hipDeviceAttributeMaxBlockDimY)?,
            a(hip::hipDeviceAttribute_t_hipDeviceAttributeMaxBlockDimZ)?,
        ],
        max_grid_dims: [
            a(hip::hipDeviceAttribute_t_hipDeviceAttributeMaxGridDimX)?,
            a(hip::hipDeviceAttribute_t_hipDeviceAttributeMaxGridDimY)?,
            a(hip::hipDeviceAttribute_t_hipDeviceAttributeMaxGridDimZ)?,
        ],
        work_queues: load()?.work_queues,
    };
    Ok((info, arch))
}

#[cfg(test)]
mod tests {
    use super::text;

    #[test]
    fn text_stops_at_the_nul() {
        let mut buf = [0 as std::ffi::c_char; 16];
        for (d, s) in buf.iter_mut().zip(b"gfx942:xnack-") {
            *d = *s as std::ffi::c_char;
        }
        assert_eq!(text(&buf), "gfx942:xnack-");
        assert_eq!(text(&[0; 4]), "");
    }
}
