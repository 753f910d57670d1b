//! Loading a kernel unit's HSA code object onto a device and resolving its kernels.

use cubecl_hip_sys::{self as hip, hipModule_t};
use iris_device::abi::{CodeObject, KernelUnit};

use super::runtime::{describe, set_device};
use super::target::select_hsaco;
use crate::error::{Error, Result};

/// Loads the code object of `unit` built for the device's processor (`gcn_arch_name`) on
/// device `ordinal`; returns the module, the object and the 8-byte-aligned image (ELF
/// readers may assume the alignment), which must live as long as the module.
pub(super) fn load_hsaco(
    ordinal: i32,
    unit: &'static KernelUnit,
    gcn_arch_name: &str,
) -> Result<(hipModule_t, &'static CodeObject, Vec<u64>)> {
    let object = select_hsaco(unit, gcn_arch_name)?;
    let _span =
        tracing::debug_span!("load_module", unit = unit.id, target = object.target).entered();
    let image = aligned_copy(object.bytes);
    set_device(ordinal)?;
    let mut raw = std::ptr::null_mut();
    // SAFETY: the image is a complete code object (an ELF image) that the caller keeps as
    // long as the module.
    let r = unsafe { hip::hipModuleLoadData(&mut raw, image.as_ptr().cast()) };
    if r != hip::hipError_t_hipSuccess {
        return Err(Error::ModuleLoad {
            unit: unit.id,
            target: object.target,
            reason: describe(r),
        });
    }
    Ok((raw, object, image))
}

/// `bytes` in 8-byte-aligned storage (zero-padded to a whole word).
fn aligned_copy(bytes: &[u8]) -> Vec<u64> {
    bytes
        .chunks(8)
        .map(|chunk| {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            u64::from_ne_bytes(word)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::aligned_copy;

    #[test]
    fn aligned_copy_keeps_the_bytes() {
        let bytes: Vec<u8> = (1..=11).collect();
        let words = aligned_copy(&bytes);
        assert_eq!(words.len(), 2);
        let back: Vec<u8> = words.iter().flat_map(|w| w.to_ne_bytes()).collect();
        assert_eq!(&back[..11], &bytes[..]);
        assert_eq!(&back[11..], &[0, 0, 0, 0, 0]);
        assert_eq!(words.as_ptr() as usize % 8, 0);
    }
}
