//! The warp of the CPU backend: 32 consecutive threads of a block (x fastest) that
//! exchange values behind `shfl*`, `ballot`, `any`, `all`, `warp_sync` and the warp
//! reductions. A block whose kernel exchanges within warps runs as fibers (`fibers.rs`),
//! whose exchanges are barriers of the warp's lanes; a kernel that makes none gets these
//! lone lanes, which never meet another.

use core::ffi::c_void;

/// Lanes per warp (the compiler's `warp_size()` on the CPU target).
pub(crate) const WARP_LANES: usize = 32;

/// A shuffle with no other lane: the lane's own value.
///
/// # Safety
/// Any pointer: it is not read.
pub(crate) unsafe extern "C" fn lone_shuffle(_seat: *mut c_void, value: u64, _src: u32) -> u64 {
    value
}

/// A ballot with no other lane: the lane's own bit.
///
/// # Safety
/// Any pointer: it is not read.
pub(crate) unsafe extern "C" fn lone_ballot(_seat: *mut c_void, predicate: u32) -> u64 {
    u64::from(predicate != 0)
}
