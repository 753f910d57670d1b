//! Remote and local memory operations, named as in Iris.

use super::{device_only, DeviceValue, Symmetric};

/// Reads `peer`'s copy of `*p`.
#[inline(always)]
pub fn load<T: DeviceValue>(p: Symmetric<T>, peer: u32) -> T {
    let _ = (p, peer);
    device_only("load")
}

/// Writes `value` into `peer`'s copy of `*p`.
#[inline(always)]
pub fn store<T: DeviceValue>(p: Symmetric<T>, value: T, peer: u32) {
    let _ = (p, value, peer);
    device_only("store")
}

/// Reads `peer`'s copy of `*src` and writes it to the local `*dst`.
#[inline(always)]
pub fn get<T: DeviceValue>(src: Symmetric<T>, dst: *mut T, peer: u32) {
    let _ = (src, dst, peer);
    device_only("get")
}

/// Reads the local `*src` and writes it into `peer`'s copy of `*dst`.
#[inline(always)]
pub fn put<T: DeviceValue>(src: *const T, dst: Symmetric<T>, peer: u32) {
    let _ = (src, dst, peer);
    device_only("put")
}

/// Reads `from_peer`'s copy of `*src` and writes it into `to_peer`'s copy of `*dst`.
///
/// `src` and `dst` may belong to different allocations: each is translated through its
/// own table.
#[inline(always)]
pub fn copy<T: DeviceValue>(src: Symmetric<T>, dst: Symmetric<T>, from_peer: u32, to_peer: u32) {
    let _ = (src, dst, from_peer, to_peer);
    device_only("copy")
}

/// A block-shared array of `N` elements of `T` (`__shared__ T a[N]`), returned as a
/// pointer to its first element. Each call site is its own array; its contents are
/// undefined until written.
#[inline(always)]
pub fn shared_array<T: DeviceValue, const N: usize>() -> *mut T {
    device_only("shared_array")
}
