//! The language's semantics, checked by running kernels on the CPU target and comparing
//! with Rust: wrapping integer arithmetic, masked shifts, signedness, saturating casts,
//! `f16`/`bf16` rounding, the exact float remainder, comparisons with NaN, control flow.

mod casts;
mod floats;
mod flow;
mod integers;
mod rounding;

pub use casts::casts_unit;
pub use floats::float_ops_unit;
pub use flow::{BLOCK, FLOW};
pub use integers::int_ops_src;

use crate::common::cpu::CpuModule;
use half::{bf16, f16};
use iris_device::compiler::kernel_ir::Scalar as Sc;
use std::ffi::c_void;

/// Runs a one-thread kernel.
fn run1(m: &CpuModule, kernel: &str, args: &mut [*mut c_void]) {
    m.launch(kernel, 1, 1, 0, args);
}

/// A scalar type of the tests and its kernel-IR scalar.
trait Scalar: Copy {
    const SC: Sc;
    const NAME: &'static str;
}

macro_rules! scalar {
    ($($t:ty => $sc:ident),*) => {$(
        impl Scalar for $t {
            const SC: Sc = Sc::$sc;
            const NAME: &'static str = stringify!($t);
        }
    )*};
}
scalar!(i8 => I8, i16 => I16, i32 => I32, i64 => I64, u8 => U8, u16 => U16, u32 => U32,
    u64 => U64, f16 => F16, bf16 => BF16, f32 => F32, f64 => F64);
