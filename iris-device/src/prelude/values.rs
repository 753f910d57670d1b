//! Which Rust types a kernel may move through memory and atomics.

use super::vector::{f32x4, f64x2, i32x4, i64x2, u32x4, u64x2};
use half::{bf16, f16};

mod sealed {
    pub trait Sealed {}
}

/// A value a kernel can load, store and pass: `bool`, the integers, `f16`, `bf16`, `f32`,
/// `f64`, and the 16-byte vector types.
pub trait DeviceValue: Copy + sealed::Sealed + 'static {}

/// A value with atomic read-modify-write arithmetic (`atomic_add`, `atomic_sub`):
/// 32- and 64-bit integers, `f32` and `f64`.
pub trait AtomicValue: DeviceValue {}

/// A value with bitwise atomics, `atomic_min`/`atomic_max`, `atomic_xchg` and `atomic_cas`:
/// the 32- and 64-bit integers.
pub trait AtomicBits: AtomicValue {}

macro_rules! impl_values {
    ($($t:ty),*) => { $(impl sealed::Sealed for $t {} impl DeviceValue for $t {})* };
}
impl_values!(bool, i8, i16, i32, i64, u8, u16, u32, u64, f16, bf16, f32, f64);
impl_values!(f32x4, i32x4, u32x4, f64x2, i64x2, u64x2);

/// An array of values (in kernels: of numbers) moves through memory as one access
/// (`p.cast::<[f32; 4]>()` reads or writes 16 bytes at once; arrays of 2, 4, 8 or 16 bytes
/// must be aligned to their size).
impl<T: DeviceValue, const N: usize> sealed::Sealed for [T; N] {}
impl<T: DeviceValue, const N: usize> DeviceValue for [T; N] {}

impl AtomicValue for i32 {}
impl AtomicValue for u32 {}
impl AtomicValue for i64 {}
impl AtomicValue for u64 {}
impl AtomicValue for f32 {}
impl AtomicValue for f64 {}
impl AtomicBits for i32 {}
impl AtomicBits for u32 {}
impl AtomicBits for i64 {}
impl AtomicBits for u64 {}
