//! Device memory seen from the host: element types, raw device pointers, buffers.

mod buffer;
mod device_ptr;
mod pod;

pub(crate) use buffer::zeroed_vec as buffer_zeroed_vec;
pub use buffer::Buffer;
pub use device_ptr::{AsDevicePtr, DevicePtr};
pub use pod::Pod;

/// Bytes of `count` elements of `T`, or an error if that overflows.
pub(crate) fn byte_len<T>(count: usize) -> crate::Result<usize> {
    count
        .checked_mul(std::mem::size_of::<T>())
        .ok_or(crate::Error::SizeOverflow {
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
