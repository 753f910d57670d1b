//! `BackendKind`: which device runtime a backend drives. A leaf: everything else of the
//! runtime, its error type included, names backends through it.

use std::fmt;

use iris_device::abi::TargetKind;

/// Which device runtime a backend drives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BackendKind {
    /// NVIDIA GPUs through the CUDA driver API.
    Cuda,
    /// AMD GPUs through HIP.
    Hip,
    /// The host CPU: device memory is host memory, kernels are shared objects.
    Cpu,
}

impl BackendKind {
    /// Every backend, in the order [`open_default`](crate::open_default) tries them.
    pub const ALL: [BackendKind; 3] = [BackendKind::Cuda, BackendKind::Hip, BackendKind::Cpu];

    /// The name used by `IRIS_BACKEND`: `cuda`, `hip`, `cpu`.
    pub fn name(self) -> &'static str {
        match self {
            BackendKind::Cuda => "cuda",
            BackendKind::Hip => "hip",
            BackendKind::Cpu => "cpu",
        }
    }

    /// The code-object family this backend loads.
    pub fn target_kind(self) -> TargetKind {
        match self {
            BackendKind::Cuda => TargetKind::Nvptx,
            BackendKind::Hip => TargetKind::Amdgpu,
            BackendKind::Cpu => TargetKind::Cpu,
        }
    }
}

impl fmt::Display for BackendKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}
