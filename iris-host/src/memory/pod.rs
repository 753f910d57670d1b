//! `Pod`: element types that cross between host and device as raw bytes.

use half::{bf16, f16};
use iris_device::prelude::{f32x4, f64x2, i32x4, i64x2, u32x4, u64x2};

/// Plain old data: a type copied between host and device as raw bytes.
///
/// # Safety
/// Implementors are `Copy`, have no padding bytes, are valid when all bytes are zero,
/// and are valid for every byte pattern the device code stores into them (for `bool`,
/// kernels store only 0 and 1).
pub unsafe trait Pod: Copy + Send + Sync + 'static {}

macro_rules! pod {
    ($($t:ty),* $(,)?) => {
        $(
            // SAFETY: a primitive or a `repr(C)` array of primitives without padding.
            unsafe impl Pod for $t {}
        )*
    };
}

pod!(
    u8, u16, u32, u64, u128, usize, i8, i16, i32, i64, i128, isize, f32, f64, bool, f16, bf16,
    f32x4, i32x4, u32x4, f64x2, i64x2, u64x2,
);

// SAFETY: an array of `Pod` has no padding between elements.
unsafe impl<T: Pod, const N: usize> Pod for [T; N] {}
