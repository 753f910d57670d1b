//! `Pod`: element types that cross between host and device (and between ranks) as raw
//! bytes, and the byte views of their slices. A leaf: memory, symmetric memory and the
//! transport's collectives all move `Pod` values.

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

/// Bytes of `count` elements of `T`, or an error if that overflows.
pub(crate) fn byte_len<T>(count: usize) -> iris_driver::Result<usize> {
    count
        .checked_mul(std::mem::size_of::<T>())
        .ok_or(iris_driver::Error::SizeOverflow {
            count,
            elem_bytes: std::mem::size_of::<T>(),
        })
}

/// The bytes of a slice of plain data.
pub(crate) fn as_bytes<T: Pod>(data: &[T]) -> &[u8] {
    // SAFETY: `Pod` types have no padding, so every byte is initialised.
    unsafe { std::slice::from_raw_parts(data.as_ptr().cast::<u8>(), std::mem::size_of_val(data)) }
}

/// The bytes of a mutable slice of plain data.
pub(crate) fn as_bytes_mut<T: Pod>(data: &mut [T]) -> &mut [u8] {
    // SAFETY: `Pod` types have no padding and accept the bytes the device writes.
    unsafe {
        std::slice::from_raw_parts_mut(data.as_mut_ptr().cast::<u8>(), std::mem::size_of_val(data))
    }
}

/// `len` zeroed elements.
pub(crate) fn zeroed_vec<T: Pod>(len: usize) -> Vec<T> {
    let mut out = Vec::<T>::with_capacity(len);
    // SAFETY: the capacity holds `len` elements; all-zero bytes are a valid `T` (`Pod`).
    unsafe {
        std::ptr::write_bytes(out.as_mut_ptr(), 0, len);
        out.set_len(len);
    }
    out
}
