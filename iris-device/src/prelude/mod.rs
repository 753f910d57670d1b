//! What kernels are written against: `use iris::prelude::*;`.
//!
//! Every function here is a device intrinsic. Kernel bodies are type-checked by rustc
//! against these signatures and compiled by the iris compiler; calling one from host code
//! panics, because host code has no thread, block or peer to speak of.

mod atomics;
mod bulk;
mod element;
mod ids;
mod matrix;
mod memory;
mod scope;
mod signals;
mod symmetric;
mod time;
mod values;
mod vector;
mod warp;
mod warpgroup;

pub use atomics::*;
pub use bulk::{bulk_barrier_init, bulk_expect, bulk_wait, copy_bulk, copy_tile};
pub use element::{max, min, narrow, widen, Acc, Element};
pub use ids::*;
pub use matrix::{
    mma, mma_add_peer, mma_load_a, mma_load_a_swizzled, mma_load_b, mma_load_b_swizzled, mma_store,
    mma_store_peer, mma_zero, MmaA, MmaAcc, MmaB, MmaElement, MMA_K, MMA_M, MMA_N,
};
pub use memory::*;
pub use scope::{fence, Scope};
pub use signals::{
    put_signal, put_signal_block, signal, signal_block, signal_wait_until, signal_wait_until_block,
    world_aborted, Cmp, SignalOp,
};
pub use symmetric::Symmetric;
pub use time::{clock64, global_timer_ns, nanosleep, trace_event};
pub use values::{AtomicBits, AtomicValue, DeviceValue};
pub use vector::*;
pub use warp::{
    all, any, ballot, lane_id, shfl, shfl_down, shfl_up, shfl_xor, warp_id, warp_reduce_add,
    warp_reduce_max, warp_reduce_min, warp_size, warp_sync, WarpValue,
};

pub use warpgroup::{
    wg_commit, wg_mma, wg_store, wg_store_peer, wg_wait, wg_zero, WgAcc, WG_K, WG_M, WG_N,
};

pub use core::sync::atomic::Ordering;
pub use half::{bf16, f16};

/// The body of every intrinsic when it is called on the host.
#[cold]
#[track_caller]
pub(crate) fn device_only(name: &str) -> ! {
    panic!("iris::{name} is a device intrinsic: it runs inside a #[iris::kernel] only")
}
