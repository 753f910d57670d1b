//! Warp (NVIDIA) and wavefront (AMD) operations: the threads of a warp exchange values
//! in registers, vote, and reduce without shared memory.
//!
//! | function | NVIDIA | AMD (gfx9, wave64) | CPU backend |
//! |---|---|---|---|
//! | [`warp_size`] | 32 | 64 | 32 |
//! | [`lane_id`] | `%laneid` | `mbcnt` | thread index % 32 |
//! | [`shfl`], [`shfl_xor`], [`shfl_down`], [`shfl_up`] | `shfl.sync` | `ds_bpermute` | exchanged through the warp |
//! | [`ballot`], [`any`], [`all`] | `vote.sync` | `s_ballot` (`llvm.amdgcn.ballot`) | exchanged through the warp |
//! | [`warp_sync`] | `bar.warp.sync` | `wave_barrier` | a barrier of the warp |
//! | [`warp_reduce_add`], [`warp_reduce_min`], [`warp_reduce_max`] | `shfl.sync.bfly` × 5 | `ds_bpermute` × 6 | exchanges × 5 |
//!
//! A warp is `warp_size()` consecutive threads of a block, numbered x fastest (thread
//! `x + y * block_dim_x() + z * block_dim_x() * block_dim_y()`). Every thread of a warp
//! must make the same warp operations in the same order (as CUDA's `*_sync` functions
//! with a full mask ask): call them outside branches that split a warp. The last warp of
//! a block whose size is not a multiple of the warp size has fewer lanes.
//!
//! A shuffle whose source lane is outside the warp (`shfl_down` past the last lane,
//! `shfl_up` before lane 0, `shfl` or `shfl_xor` to lane `warp_size()` or more) returns
//! the caller's own value, on every target. A source lane inside the warp that has no
//! thread (the short last warp) gives an unspecified value on GPUs and the caller's own
//! value on the CPU.

use super::{device_only, DeviceValue, Element};

/// What a shuffle moves between lanes: every [`DeviceValue`] and raw pointers.
pub trait WarpValue: Copy + 'static {}

impl<T: DeviceValue> WarpValue for T {}
impl<T: 'static> WarpValue for *const T {}
impl<T: 'static> WarpValue for *mut T {}

/// The number of threads in a warp: 32 on NVIDIA and the CPU backend, 64 on AMD's gfx9
/// (wave64).
#[inline(always)]
pub fn warp_size() -> u32 {
    device_only("warp_size")
}

/// This thread's lane in its warp, `0..warp_size()`.
#[inline(always)]
pub fn lane_id() -> u32 {
    device_only("lane_id")
}

/// This thread's warp in its block: its linear thread index / `warp_size()`.
#[inline(always)]
pub fn warp_id() -> u32 {
    device_only("warp_id")
}

/// The value `src_lane` holds (CUDA `__shfl_sync`).
#[inline(always)]
pub fn shfl<T: WarpValue>(value: T, src_lane: u32) -> T {
    let _ = (value, src_lane);
    device_only("shfl")
}

/// The value lane `lane_id() ^ lane_mask` holds (CUDA `__shfl_xor_sync`): the butterfly
/// of reductions.
#[inline(always)]
pub fn shfl_xor<T: WarpValue>(value: T, lane_mask: u32) -> T {
    let _ = (value, lane_mask);
    device_only("shfl_xor")
}

/// The value lane `lane_id() + delta` holds (CUDA `__shfl_down_sync`).
#[inline(always)]
pub fn shfl_down<T: WarpValue>(value: T, delta: u32) -> T {
    let _ = (value, delta);
    device_only("shfl_down")
}

/// The value lane `lane_id() - delta` holds (CUDA `__shfl_up_sync`).
#[inline(always)]
pub fn shfl_up<T: WarpValue>(value: T, delta: u32) -> T {
    let _ = (value, delta);
    device_only("shfl_up")
}

/// Bit `i` set when lane `i`'s `predicate` is true (bits 32..64 are 0 where the warp has
/// 32 lanes).
#[inline(always)]
pub fn ballot(predicate: bool) -> u64 {
    let _ = predicate;
    device_only("ballot")
}

/// Whether `predicate` is true in any lane of the warp.
#[inline(always)]
pub fn any(predicate: bool) -> bool {
    let _ = predicate;
    device_only("any")
}

/// Whether `predicate` is true in every lane of the warp.
#[inline(always)]
pub fn all(predicate: bool) -> bool {
    let _ = predicate;
    device_only("all")
}

/// Waits until every lane of the warp has reached this point; memory written before it
/// by a lane is visible to the others after it.
#[inline(always)]
pub fn warp_sync() {
    device_only("warp_sync")
}

/// The sum of `value` over the warp, in every lane (a butterfly of `shfl_xor`; integers
/// wrap, floats are summed in a fixed order, the same in every lane).
#[inline(always)]
pub fn warp_reduce_add<T: Element>(value: T) -> T {
    let _ = value;
    device_only("warp_reduce_add")
}

/// The minimum of `value` over the warp, in every lane.
#[inline(always)]
pub fn warp_reduce_min<T: Element>(value: T) -> T {
    let _ = value;
    device_only("warp_reduce_min")
}

/// The maximum of `value` over the warp, in every lane.
#[inline(always)]
pub fn warp_reduce_max<T: Element>(value: T) -> T {
    let _ = value;
    device_only("warp_reduce_max")
}
