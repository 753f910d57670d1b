//! Loading a kernel unit's HSA code object onto a device and resolving its kernels.

use std::any::Any;
use std::ffi::CString;

use cubecl_hip_sys::{self as hip, hipFunction_t, hipModule_t};
use iris_device::abi::KernelUnit;

use super::runtime::{check, describe, set_device};
use super::target::select_hsaco;
use crate::error::{Error, Result};
use crate::Module;

/// A kernel unit's code object loaded on one device, with one function per kernel.
pub struct HipModule {
    ordinal: i32,
    raw: hipModule_t,
    unit: &'static KernelUnit,
    target: &'static str,
    functions: Vec<hipFunction_t>,
    /// The code object, copied to 8-byte alignment (ELF readers may assume it) and kept
    /// for the module's life.
    _image: Vec<u64>,
}

// SAFETY: module and function handles may be used from any thread; users select the
// module's device first.
unsafe impl Send for HipModule {}
// SAFETY: as above; the handles are never mutated.
unsafe impl Sync for HipModule {}

impl HipModule {
    /// Loads the code object of `unit` built for the device's processor (`gcn_arch_name`).
    pub(super) fn load(
        ordinal: i32,
        unit: &'static KernelUnit,
        gcn_arch_name: &str,
    ) -> Result<HipModule> {
        let object = select_hsaco(unit, gcn_arch_name)?;
        let _span =
            tracing::debug_span!("load_module", unit = unit.id, target = object.target).entered();
        let load_error = |reason: String| Error::ModuleLoad {
            unit: unit.id,
            target: object.target,
            reason,
        };
        let image = aligned_copy(object.bytes);
        set_device(ordinal)?;
        let mut raw = std::ptr::null_mut();
        // SAFETY: the image is a complete code object (an ELF image) that lives as long as
        // the module.
        let r = unsafe { hip::hipModuleLoadData(&mut raw, image.as_ptr().cast()) };
        if r != hip::hipError_t_hipSuccess {
            return Err(load_error(describe(r)));
        }
        let mut module = HipModule {
            ordinal,
            raw,
            unit,
            target: object.target,
            functions: Vec::with_capacity(unit.kernels.len()),
            _image: image,
        };
        for kernel in unit.kernels {
            let name = CString::new(kernel.name)
                .map_err(|_| load_error(format!("kernel name {:?} holds a NUL", kernel.name)))?;
            let mut function = std::ptr::null_mut();
            // SAFETY: a live module, a NUL-terminated name and a valid out-pointer.
            let r = unsafe { hip::hipModuleGetFunction(&mut function, raw, name.as_ptr()) };
            if r != hip::hipError_t_hipSuccess {
                return Err(load_error(format!(
                    "kernel `{}` is not in the code object: {}",
                    kernel.name,
                    describe(r)
                )));
            }
            module.functions.push(function);
        }
        Ok(module)
    }

    /// The function of kernel `index` of the unit.
    pub fn function(&self, index: usize) -> Result<hipFunction_t> {
        self.functions
            .get(index)
            .copied()
            .ok_or(Error::NoSuchKernel {
                unit: self.unit.id,
                index,
                count: self.functions.len(),
            })
    }

    /// The device the module was loaded on.
    pub(super) fn ordinal(&self) -> i32 {
        self.ordinal
    }
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

impl Drop for HipModule {
    fn drop(&mut self) {
        let r = set_device(self.ordinal).and_then(|()| {
            // SAFETY: the module is not used after this; its owner drops it only once the
            // launches of its kernels have completed.
            check("hipModuleUnload", unsafe { hip::hipModuleUnload(self.raw) })
        });
        if let Err(err) = r {
            tracing::warn!(%err, "unloading a HIP module failed");
        }
    }
}

impl Module for HipModule {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn unit(&self) -> &'static KernelUnit {
        self.unit
    }

    fn target(&self) -> &'static str {
        self.target
    }
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
