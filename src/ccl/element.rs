//! `CclElement`: which element types the collectives take, and the kernels of each.
//!
//! Kernels have no generics, so every collective's file generates one kernel unit per
//! element type with `macro_rules!`, and this trait maps each type to its units: the
//! public API stays generic (`all_reduce::<T>`) while every launch is typed.

use super::{all_gather, all_reduce, all_to_all, broadcast, reduce_scatter};
use crate::abi::KernelUnit;
use crate::prelude::{bf16, f16};
use crate::{Iris, LaunchConfig, Pod, Result, SymmetricBuffer};

mod sealed {
    pub trait Sealed {}
}

/// An element type the collectives take: `f32`, `f64`, `f16`, `bf16`, `i32`, `u32`, `i64`,
/// `u64`. Sealed: each type has kernels compiled for it.
pub trait CclElement: Pod + sealed::Sealed {
    /// Launches kernel `kernel` of this element type (used by the collectives).
    #[doc(hidden)]
    fn launch(kernel: KernelId, iris: &Iris, call: &KernelCall<'_, '_, Self>) -> Result<()>;

    /// The kernel unit (code objects) that holds kernel `kernel` of this element type.
    #[doc(hidden)]
    fn unit(kernel: KernelId) -> &'static KernelUnit;
}

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
    /// The entry barrier's epoch; the exit barrier uses `epoch + 1`.
    pub(crate) epoch: u64,
    /// How long each barrier wait may take.
    pub(crate) timeout_ns: u64,
}

macro_rules! launch_with {
    ($unit:path, $iris:expr, $c:expr) => {{
        use $unit as k;
        k::launch(
            $iris,
            $c.config,
            $c.input,
            $c.output,
            $c.signals,
            $c.n,
            $c.arg,
            $c.me,
            $c.world,
            $c.epoch,
            $c.timeout_ns,
        )
    }};
}

macro_rules! elements {
    ($($t:ident => $ag:ident, $ar:ident, $rs:ident, $a2a:ident, $bc:ident;)*) => {$(
        impl sealed::Sealed for $t {}
        impl CclElement for $t {
            fn launch(kernel: KernelId, iris: &Iris, c: &KernelCall<'_, '_, Self>) -> Result<()> {
                match kernel {
                    KernelId::AllGatherPush => launch_with!(all_gather::$ag::push, iris, c),
                    KernelId::AllGatherPull => launch_with!(all_gather::$ag::pull, iris, c),
                    KernelId::AllReduceOneShot => launch_with!(all_reduce::$ar::one_shot, iris, c),
                    KernelId::AllReduceTwoShot => launch_with!(all_reduce::$ar::two_shot, iris, c),
                    KernelId::ReduceScatter => launch_with!(reduce_scatter::$rs::reduce_scatter, iris, c),
                    KernelId::AllToAll => launch_with!(all_to_all::$a2a::all_to_all, iris, c),
                    KernelId::Broadcast => launch_with!(broadcast::$bc::broadcast, iris, c),
                }
            }

            fn unit(kernel: KernelId) -> &'static KernelUnit {
                match kernel {
                    KernelId::AllGatherPush | KernelId::AllGatherPull => &all_gather::$ag::push::UNIT,
                    KernelId::AllReduceOneShot | KernelId::AllReduceTwoShot => &all_reduce::$ar::one_shot::UNIT,
                    KernelId::ReduceScatter => &reduce_scatter::$rs::reduce_scatter::UNIT,
                    KernelId::AllToAll => &all_to_all::$a2a::all_to_all::UNIT,
                    KernelId::Broadcast => &broadcast::$bc::broadcast::UNIT,
                }
            }
        }
    )*};
}

elements! {
    f32 => all_gather_f32, all_reduce_f32, reduce_scatter_f32, all_to_all_f32, broadcast_f32;
    f64 => all_gather_f64, all_reduce_f64, reduce_scatter_f64, all_to_all_f64, broadcast_f64;
    f16 => all_gather_f16, all_reduce_f16, reduce_scatter_f16, all_to_all_f16, broadcast_f16;
    bf16 => all_gather_bf16, all_reduce_bf16, reduce_scatter_bf16, all_to_all_bf16, broadcast_bf16;
    i32 => all_gather_i32, all_reduce_i32, reduce_scatter_i32, all_to_all_i32, broadcast_i32;
    u32 => all_gather_u32, all_reduce_u32, reduce_scatter_u32, all_to_all_u32, broadcast_u32;
    i64 => all_gather_i64, all_reduce_i64, reduce_scatter_i64, all_to_all_i64, broadcast_i64;
    u64 => all_gather_u64, all_reduce_u64, reduce_scatter_u64, all_to_all_u64, broadcast_u64;
}
