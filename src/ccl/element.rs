//! `CclElement`: which element types the collectives take, and how each collective's
//! kernel is found for one.
//!
//! Every collective is one generic kernel, `fn push<T: Element, const L: usize>`, built
//! for each element type `T` with the `L` elements that fill 16 bytes (instances
//! `push__f32__4`, `push__f16__8`, ...). The public API is generic (`all_reduce::<T>`);
//! a launch picks the instance of `T` from its unit by that name.

use super::{
    all_gather, all_reduce, all_reduce_rmsnorm, all_to_all, all_to_all_v, broadcast, moe,
    point_to_point, reduce_scatter, rooted,
};
use crate::abi::KernelUnit;
use crate::prelude::{bf16, f16};
use crate::{Error, Iris, LaunchConfig, Pod, Result, SymmetricBuffer};

mod sealed {
    pub trait Sealed {}
}

/// An element type the collectives take: `f32`, `f64`, `f16`, `bf16`, `i32`, `u32`, `i64`,
/// `u64`. Sealed: each type has the collectives' kernels built for it.
pub trait CclElement: Pod + sealed::Sealed {
    /// The type's name in kernel symbols.
    #[doc(hidden)]
    const KERNEL_NAME: &'static str;
    /// Elements in 16 bytes (the kernels move whole 16-byte chunks where they can).
    #[doc(hidden)]
    const KERNEL_LANES: usize;
}

impl sealed::Sealed for f32 {}
impl CclElement for f32 {
    const KERNEL_NAME: &'static str = "f32";
    const KERNEL_LANES: usize = 4;
}

impl sealed::Sealed for f64 {}
impl CclElement for f64 {
    const KERNEL_NAME: &'static str = "f64";
    const KERNEL_LANES: usize = 2;
}

impl sealed::Sealed for f16 {}
impl CclElement for f16 {
    const KERNEL_NAME: &'static str = "f16";
    const KERNEL_LANES: usize = 8;
}

impl sealed::Sealed for bf16 {}
impl CclElement for bf16 {
    const KERNEL_NAME: &'static str = "bf16";
    const KERNEL_LANES: usize = 8;
}

impl sealed::Sealed for i32 {}
impl CclElement for i32 {
    const KERNEL_NAME: &'static str = "i32";
    const KERNEL_LANES: usize = 4;
}

impl sealed::Sealed for u32 {}
impl CclElement for u32 {
    const KERNEL_NAME: &'static str = "u32";
    const KERNEL_LANES: usize = 4;
}

impl sealed::Sealed for i64 {}
impl CclElement for i64 {
    const KERNEL_NAME: &'static str = "i64";
    const KERNEL_LANES: usize = 2;
}

impl sealed::Sealed for u64 {}
impl CclElement for u64 {
    const KERNEL_NAME: &'static str = "u64";
    const KERNEL_LANES: usize = 2;
}

/// A floating-point element type, for the operations that weight or normalize: `f32`,
/// `f16`, `bf16` (computed in `f32`, each result rounded once).
pub trait FloatElement: CclElement {}
impl FloatElement for f32 {}
impl FloatElement for f16 {}
impl FloatElement for bf16 {}

/// Which collective kernel to launch.
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KernelId {
    AllGatherPush,
    AllGatherPull,
    AllReduceOneShot,
    AllReduceTwoShot,
    ReduceScatter,
    AllToAll,
    Broadcast,
    Reduce,
    Gather,
    Scatter,
    Send,
    Recv,
    AllToAllV,
    MoeDispatch,
    MoeCombine,
    AllReduceRmsNorm,
}

impl KernelId {
    /// The unit holding the kernel, and the generic kernel's name.
    fn generic(self) -> (&'static KernelUnit, &'static str) {
        match self {
            KernelId::AllGatherPush => (&all_gather::kernels::push::UNIT, "push"),
            KernelId::AllGatherPull => (&all_gather::kernels::pull::UNIT, "pull"),
            KernelId::AllReduceOneShot => (&all_reduce::kernels::one_shot::UNIT, "one_shot"),
            KernelId::AllReduceTwoShot => (&all_reduce::kernels::two_shot::UNIT, "two_shot"),
            KernelId::ReduceScatter => (
                &reduce_scatter::kernels::reduce_scatter::UNIT,
                "reduce_scatter",
            ),
            KernelId::AllToAll => (&all_to_all::kernels::all_to_all::UNIT, "all_to_all"),
            KernelId::Broadcast => (&broadcast::kernels::broadcast::UNIT, "broadcast"),
            KernelId::Reduce => (&rooted::kernels::reduce_to_root::UNIT, "reduce_to_root"),
            KernelId::Gather => (&rooted::kernels::gather::UNIT, "gather"),
            KernelId::Scatter => (&rooted::kernels::scatter::UNIT, "scatter"),
            KernelId::Send => (&point_to_point::kernels::send::UNIT, "send"),
            KernelId::Recv => (&point_to_point::kernels::recv::UNIT, "recv"),
            KernelId::AllToAllV => (&all_to_all_v::kernels::all_to_all_v::UNIT, "all_to_all_v"),
            KernelId::MoeDispatch => (&moe::kernels::moe_dispatch::UNIT, "moe_dispatch"),
            KernelId::MoeCombine => (&moe::kernels::moe_combine::UNIT, "moe_combine"),
            KernelId::AllReduceRmsNorm => (
                &all_reduce_rmsnorm::kernels::all_reduce_rmsnorm::UNIT,
                "all_reduce_rmsnorm",
            ),
        }
    }

    /// The call it serves, as the trace names it (`iris::ccl::all_reduce`, ...).
    pub(crate) fn call_name(self) -> &'static str {
        match self {
            KernelId::AllGatherPush | KernelId::AllGatherPull => "ccl::all_gather",
            KernelId::AllReduceOneShot | KernelId::AllReduceTwoShot => "ccl::all_reduce",
            KernelId::ReduceScatter => "ccl::reduce_scatter",
            KernelId::AllToAll => "ccl::all_to_all",
            KernelId::Broadcast => "ccl::broadcast",
            KernelId::Reduce => "ccl::reduce",
            KernelId::Gather => "ccl::gather",
            KernelId::Scatter => "ccl::scatter",
            KernelId::Send => "ccl::send",
            KernelId::Recv => "ccl::recv",
            KernelId::AllToAllV => "ccl::all_to_all_v",
            KernelId::MoeDispatch => "ccl::Moe::dispatch",
            KernelId::MoeCombine => "ccl::Moe::combine",
            KernelId::AllReduceRmsNorm => "ccl::all_reduce_rmsnorm",
        }
    }

    /// The unit that holds this kernel for every element type.
    pub(crate) fn unit(self) -> &'static KernelUnit {
        self.generic().0
    }

    /// This kernel's instance for `T`: its index in [`unit`](Self::unit).
    pub(crate) fn index<T: CclElement>(self) -> Result<usize> {
        let (unit, generic) = self.generic();
        let lanes = T::KERNEL_LANES.to_string();
        unit.kernels
            .iter()
            .position(|k| {
                let mut parts = k.name.split("__");
                parts.next() == Some(generic)
                    && parts.next() == Some(T::KERNEL_NAME)
                    && parts.next() == Some(lanes.as_str())
                    && parts.next().is_none()
            })
            .ok_or_else(|| {
                Error::InvalidConfig(format!(
                    "the collectives' unit `{}` has no kernel `{generic}` for {} (a build of iris without it)",
                    unit.id,
                    T::KERNEL_NAME
                ))
            })
    }
}

/// The arguments every collective kernel takes (each reads the ones it needs).
#[doc(hidden)]
pub struct KernelCall<'a, 'ctx, T: Pod> {
    pub(crate) config: LaunchConfig,
    pub(crate) input: &'a SymmetricBuffer<'ctx, T>,
    pub(crate) output: &'a SymmetricBuffer<'ctx, T>,
    pub(crate) signals: &'a SymmetricBuffer<'ctx, u64>,
    /// Elements: the collective's count (see each kernel).
    pub(crate) n: u64,
    /// The reduction's code, or the root.
    pub(crate) arg: u32,
    pub(crate) me: u32,
    pub(crate) world: u32,
    /// How long each barrier wait may take.
    pub(crate) timeout_ns: u64,
}

/// Launches `kernel`'s instance for `T` with the arguments of `c`.
pub(crate) fn launch<T: CclElement>(
    kernel: KernelId,
    iris: &Iris,
    c: &KernelCall<'_, '_, T>,
) -> Result<()> {
    let mut args = iris.args(kernel.unit(), kernel.index::<T>()?);
    args.symmetric(c.input)?;
    args.symmetric(c.output)?;
    args.symmetric(c.signals)?;
    args.value(c.n);
    args.value(c.arg);
    args.value(c.me);
    args.value(c.world);
    args.value(c.timeout_ns);
    iris.launch(c.config, args)
}
