//! A kernel unit's code object loaded on a GPU device, for any [`GpuApi`].

use std::any::Any;
use std::ffi::CString;

use iris_device::abi::KernelUnit;

use super::api::GpuApi;
use super::shared_carveout;
use crate::error::{Error, Result};
use crate::Module;

/// A kernel unit's code object loaded on one device, with one function per kernel.
pub struct GpuModule<A: GpuApi> {
    ctx: A::Context,
    unit: &'static KernelUnit,
    raw: A::Module,
    target: &'static str,
    functions: Vec<A::Function>,
    /// Memory the module reads while it is loaded (HIP's aligned image).
    _image: Vec<u64>,
}

// SAFETY: module and function handles may be used from any thread that makes their device
// current, which every user does first; they are never mutated.
unsafe impl<A: GpuApi> Send for GpuModule<A> {}
// SAFETY: as above.
unsafe impl<A: GpuApi> Sync for GpuModule<A> {}

impl<A: GpuApi> GpuModule<A> {
    /// Loads `unit`'s code object for this device and resolves (and readies) every kernel;
    /// a kernel missing from the object is [`Error::ModuleLoad`] naming it.
    pub(crate) fn load(api: &A, ctx: &A::Context, unit: &'static KernelUnit) -> Result<Self> {
        let carveout = shared_carveout::from_env()?;
        let (raw, object, image) = api.load_code_object(ctx, unit)?;
        let mut module = Self {
            ctx: ctx.clone(),
            unit,
            raw,
            target: object.target,
            functions: Vec::with_capacity(unit.kernels.len()),
            _image: image,
        };
        let load_error = |reason: String| Error::ModuleLoad {
            unit: unit.id,
            target: object.target,
            reason,
        };
        for kernel in unit.kernels {
            let name = CString::new(kernel.name)
                .map_err(|_| load_error(format!("kernel name {:?} holds a NUL", kernel.name)))?;
            // SAFETY: a live module of the current device (the code object just loaded).
            let function = unsafe { A::module_function(raw, &name) }.map_err(|reason| {
                load_error(format!(
                    "kernel `{}` is not in the code object: {reason}",
                    kernel.name
                ))
            })?;
            // SAFETY: a function of that module.
            unsafe { A::prepare_function(function) }.map_err(load_error)?;
            if let Some(percent) = carveout.percent_for(kernel.spins) {
                // SAFETY: a function of that module.
                let asked = unsafe { A::prefer_shared_carveout(function, percent) };
                // A hint: only a split the variable asked for fails the load.
                if let (Err(reason), true) = (asked, carveout.asked_by_the_variable()) {
                    return Err(load_error(format!(
                        "kernel `{}`, {}: {reason}",
                        kernel.name,
                        shared_carveout::VAR
                    )));
                }
            }
            let dynamic = kernel.dynamic_shared_bytes();
            if dynamic > 0 {
                // SAFETY: a function of that module.
                unsafe { A::allow_dynamic_shared(function, dynamic) }
                    .map_err(|reason| load_error(format!("kernel `{}`: {reason}", kernel.name)))?;
            }
            module.functions.push(function);
        }
        Ok(module)
    }

    /// The function of kernel `index` of the unit.
    pub fn function(&self, index: usize) -> Result<A::Function> {
        self.functions
            .get(index)
            .copied()
            .ok_or(Error::NoSuchKernel {
                unit: self.unit.id,
                index,
                count: self.functions.len(),
            })
    }

    /// Bytes of dynamic shared memory a launch of kernel `index` asks for beyond the
    /// caller's (its shared arrays, when the compiler made them dynamic).
    pub fn dynamic_shared_bytes(&self, index: usize) -> u32 {
        self.unit
            .kernels
            .get(index)
            .map_or(0, |k| k.dynamic_shared_bytes())
    }

    /// The context the module was loaded into.
    pub(crate) fn context(&self) -> &A::Context {
        &self.ctx
    }
}

impl<A: GpuApi> Drop for GpuModule<A> {
    fn drop(&mut self) {
        let r = A::make_current(&self.ctx).and_then(|()| {
            // SAFETY: the module is not used after this; its owner drops it only once the
            // launches of its kernels have completed.
            unsafe { A::module_unload(self.raw) }
        });
        if let Err(err) = r {
            tracing::warn!(%err, unit = self.unit.id, "unloading a module failed");
        }
    }
}

impl<A: GpuApi> Module for GpuModule<A> {
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
