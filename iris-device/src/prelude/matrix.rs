//! Matrix units: a warp (NVIDIA) or wavefront (AMD) multiplies 16 x 16 tiles of `bf16` or
//! `f16` into an `f32` accumulator, with the tensor cores / matrix cores of each target.
//!
//! | | NVIDIA (sm_80, sm_90) | AMD (gfx90a, gfx942, gfx950) | CPU backend |
//! |---|---|---|---|
//! | [`mma`] | 2 x `mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}` | `v_mfma_f32_16x16x16{bf16_1k,f16}` | exact `f32` sums, lanes exchanged through the warp |
//! | elements per lane (A, B, accumulator) | 8, 8, 8 | 4, 4, 4 | 8, 8, 8 |
//!
//! The tile shape is the same on every target: `C[16 x 16] += A[16 x 16] * B[16 x 16]`,
//! [`MMA_M`] x [`MMA_N`] x [`MMA_K`]. Each lane holds its share of a tile in registers (a
//! fragment); which elements a lane holds depends on the target, so fragments are opaque:
//! they are loaded from memory ([`mma_load_a`], [`mma_load_b`]), combined ([`mma`]) and
//! stored ([`mma_store`], [`mma_store_peer`]) or added into a peer's tile
//! ([`mma_add_peer`]). Tiles are row-major with a leading dimension `ld` (elements between
//! the starts of two rows), in global or block-shared memory.
//!
//! Every lane of a full warp must make the same matrix operations with the same tile
//! and `ld` (as with the warp operations): launch blocks whose size is a multiple of
//! [`warp_size`](super::warp_size) and call them outside branches that split a warp.
//! After such a branch (`if lane_id() == 0 { .. }`), call
//! [`warp_sync`](super::warp_sync) before the next matrix operation: on NVIDIA the lanes
//! of a warp do not rejoin by themselves, and `mma.sync`/`ldmatrix` need all of them.
//!
//! On NVIDIA a fragment load from block-shared memory whose rows start on 16-byte
//! boundaries (tile address and `ld * size_of::<T>()` multiples of 16) is one `ldmatrix`;
//! other loads read element by element. Where the kernel's own expressions prove it (a
//! `shared_array` pointer moved by offsets that are multiples of 8 elements, through
//! immutable `let`s, `*`, `+`, `<<` and casts, and an `ld` that is such a multiple), the
//! load compiles to `ldmatrix` alone; otherwise a run-time test picks one of the two,
//! which costs a branch per fragment in an inner loop.
//!
//! Four warps together (a warpgroup) can multiply larger tiles straight from shared
//! memory: see the `warpgroup` operations (`wg_mma`: Hopper's `wgmma`).

use super::{device_only, Symmetric};
use core::marker::PhantomData;

/// Rows of A and C in a warp's tile.
pub const MMA_M: u32 = 16;
/// Columns of B and C in a warp's tile.
pub const MMA_N: u32 = 16;
/// Columns of A and rows of B in a warp's tile.
pub const MMA_K: u32 = 16;

/// The element types the matrix units multiply: `bf16` and `f16` (a kernel's `T:
/// MmaElement` can use everything `Element` offers too).
pub trait MmaElement: super::Element + sealed::Sealed {}
impl MmaElement for half::bf16 {}
impl MmaElement for half::f16 {}

mod sealed {
    pub trait Sealed {}
    impl Sealed for half::bf16 {}
    impl Sealed for half::f16 {}
}

/// A warp's 16 x 16 tile of A (rows of the product), spread over its lanes.
#[derive(Clone, Copy)]
pub struct MmaA<T: MmaElement>(PhantomData<T>);

/// A warp's 16 x 16 tile of B (columns of the product), spread over its lanes.
#[derive(Clone, Copy)]
pub struct MmaB<T: MmaElement>(PhantomData<T>);

/// A warp's 16 x 16 `f32` accumulator tile, spread over its lanes.
#[derive(Clone, Copy)]
pub struct MmaAcc(());

/// Loads the 16 x 16 tile of A whose first element is `*tile` (row-major, `ld` elements
/// between rows).
#[inline(always)]
pub fn mma_load_a<T: MmaElement>(tile: *const T, ld: u32) -> MmaA<T> {
    let _ = (tile, ld);
    device_only("mma_load_a")
}

/// Loads the 16 x 16 tile of B whose first element is `*tile` (row-major, `ld` elements
/// between rows).
#[inline(always)]
pub fn mma_load_b<T: MmaElement>(tile: *const T, ld: u32) -> MmaB<T> {
    let _ = (tile, ld);
    device_only("mma_load_b")
}

/// Loads the 16 x 16 tile of A at row `row`, column `col` (a multiple of 8) of a box in
/// the 128-byte swizzle, as `copy_tile` leaves it: rows of 64 elements, the 8-element
/// chunk `c` of row `r` at chunk `c ^ (r % 8)`, `tile` the box's first byte (on a
/// 1024-byte boundary).
#[inline(always)]
pub fn mma_load_a_swizzled<T: MmaElement>(tile: *const T, row: u32, col: u32) -> MmaA<T> {
    let _ = (tile, row, col);
    device_only("mma_load_a_swizzled")
}

/// Loads the 16 x 16 tile of B at row `row` (k), column `col` (a multiple of 8) of a box
/// in the 128-byte swizzle (see [`mma_load_a_swizzled`]).
#[inline(always)]
pub fn mma_load_b_swizzled<T: MmaElement>(tile: *const T, row: u32, col: u32) -> MmaB<T> {
    let _ = (tile, row, col);
    device_only("mma_load_b_swizzled")
}

/// An accumulator of zeros.
#[inline(always)]
pub fn mma_zero() -> MmaAcc {
    device_only("mma_zero")
}

/// `acc + a * b` on the matrix units.
#[inline(always)]
pub fn mma<T: MmaElement>(a: MmaA<T>, b: MmaB<T>, acc: MmaAcc) -> MmaAcc {
    let _ = (a, b, acc);
    device_only("mma")
}

/// Stores the accumulator into the 16 x 16 `f32` tile at `tile` (row-major, `ld` elements
/// between rows). Any `tile` and `ld` work; on NVIDIA (and the CPU), where the tile is
/// 8-byte aligned and `ld` even, each lane's pairs of adjacent columns are written with
/// one 8-byte store each (the same holds for [`mma_store_peer`]).
#[inline(always)]
pub fn mma_store(tile: *mut f32, ld: u32, acc: MmaAcc) {
    let _ = (tile, ld, acc);
    device_only("mma_store")
}

/// Stores the accumulator into `peer`'s copy of the 16 x 16 `f32` tile at `tile`
/// (row-major, `ld` elements between rows): a GEMM's output tile straight into a peer.
#[inline(always)]
pub fn mma_store_peer(tile: Symmetric<f32>, ld: u32, acc: MmaAcc, peer: u32) {
    let _ = (tile, ld, acc, peer);
    device_only("mma_store_peer")
}

/// Adds the accumulator into `peer`'s copy of the 16 x 16 `f32` tile at `tile` (row-major,
/// `ld` elements between rows), each element with a relaxed system-scope atomic add: the
/// partial products of every rank summed in the owner's tile (GEMM + reduce-scatter).
/// The order of the additions is not fixed, so sums of inexact values may differ in the
/// last bits from run to run.
#[inline(always)]
pub fn mma_add_peer(tile: Symmetric<f32>, ld: u32, acc: MmaAcc, peer: u32) {
    let _ = (tile, ld, acc, peer);
    device_only("mma_add_peer")
}
