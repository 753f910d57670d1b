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

/// Starts copying `*src` (global memory) into `*dst` (block-shared memory) without
/// waiting for it: `T` is 4, 8 or 16 bytes (`[bf16; 8]`, `f32x4`, `u32`, ..), both
/// pointers aligned to its size. The copy belongs to the group that the next
/// [`copy_async_commit`] closes; [`copy_async_wait`] waits for groups, then
/// [`sync_threads`](super::sync_threads) shows the copies of every thread of the block.
///
/// On NVIDIA (sm_80 and later) it is `cp.async` (16 bytes bypass L1); where `dst` is not
/// block-shared or `src` not global, and on AMD and the CPU, it is a load and a store
/// made at once (commit and wait then have nothing to do).
#[inline(always)]
pub fn copy_async<T: DeviceValue>(dst: *mut T, src: *const T) {
    let _ = (dst, src);
    device_only("copy_async")
}

/// Closes the group of [`copy_async`] copies this thread started since the last commit.
#[inline(always)]
pub fn copy_async_commit() {
    device_only("copy_async_commit")
}

/// Waits until at most `pending` of this thread's committed groups of [`copy_async`]
/// copies are still in flight (`pending` is an integer literal: 0 waits for all). With
/// two buffers, start the copies of the next tile, commit, and `copy_async_wait(1)`
/// before using the current one.
#[inline(always)]
pub fn copy_async_wait(pending: u32) {
    let _ = pending;
    device_only("copy_async_wait")
}
