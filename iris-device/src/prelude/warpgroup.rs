//! Warpgroup matrix operations: four warps (128 threads, a warpgroup) multiply a 64 x 16
//! tile of A by a 16 x 128 tile of B (given as Bᵀ), both in block-shared memory, into a
//! 64 x 128 `f32` accumulator held in registers (64 elements per thread).
//!
//! | | NVIDIA Hopper (the unit is compiled for `sm_90a`) | other NVIDIA, AMD, CPU backend |
//! |---|---|---|
//! | [`wg_mma`] | one `wgmma.mma_async.sync.aligned.m64n128k16.f32.{bf16,f16}`, asynchronous | each thread computes its 64 elements from shared memory in `f32` |
//! | [`wg_commit`] | `wgmma.commit_group` | nothing |
//! | [`wg_wait`]`(acc, n)` | `wgmma.wait_group n` | nothing |
//!
//! A unit whose kernels call [`wg_mma`] is compiled for `sm_90a` instead of `sm_90`: its
//! Hopper code uses `wgmma`, and other NVIDIA GPUs run its `sm_80` code (which computes
//! the same products without the matrix units). The other operations (`mma`, ...) and
//! every other intrinsic work in such a unit as everywhere.
//!
//! **Threads.** Launch 1-D blocks whose size is a multiple of 128: threads `128 w ..
//! 128 w + 128` are warpgroup `w`, and all 128 make every warpgroup operation together,
//! with the same arguments, outside branches that split them.
//!
//! **Shared tiles.** A and B are given K-major: A as M x K, and B transposed, as Bᵀ
//! (N x K, the layout of a `torch.nn.Linear` weight): `C = A B` from two row-major
//! matrices with k contiguous in both. A tile holds 64 k per row (128 bytes), with the
//! 16-byte chunks of row `r` swizzled by `r % 8` (the 128-byte swizzle the matrix units
//! read without bank conflicts): element `(r, k)` of a tile at
//! `r * 64 + ((k / 8) ^ (r % 8)) * 8 + k % 8`. Each tile starts on a 1024-byte boundary:
//! NVIDIA shared arrays are aligned so, tiles of whole rows are multiples of 1024 bytes,
//! and in a kernel whose arrays exceed 48 KiB (dynamic shared memory) keep every array a
//! multiple of 1024 bytes. Eight consecutive k of a row are 16 contiguous bytes in global
//! and shared memory: one [`copy_async`](super::copy_async) each, and eight threads
//! copying the chunks of one row write one 128-byte line.
//!
//! [`wg_mma`]`(a, b, kstep, acc)` multiplies k `16 kstep .. 16 kstep + 16` (`kstep` 0 to
//! 3) of the 64-row A tile at `a` (warpgroup `w`'s rows of a larger tile: `tile_a + 64 *
//! 64 * w`) and the 128-row Bᵀ tile at `b`.
//!
//! **Order.** Make the tiles' writes visible first (`copy_async_wait`, then
//! [`sync_threads`](super::sync_threads)). On Hopper [`wg_mma`] is asynchronous, like
//! `copy_async`: [`wg_commit`] closes the batch issued since the last commit, and
//! [`wg_wait`]`(acc, n)` returns once at most `n` committed batches are still in flight.
//! An accumulator may be passed to more `wg_mma` calls at any time, but read (stored)
//! only after `wg_wait(acc, 0)`, and the shared tiles a batch reads stay unchanged until
//! a wait has covered it (in a kernel's body; `examples/common/warpgroup_gemm.rs` is a
//! whole kernel, compiled and run by tests/matrix.rs):
//!
//! ```text
//! let mut acc = wg_zero();
//! for s in 0..4 {
//!     acc = wg_mma(a, b, s, acc);
//! }
//! wg_commit();
//! acc = wg_wait(acc, 0);
//! sync_threads(); // before the tiles are overwritten
//! ```
//!
//! With `wg_wait(acc, 1)` a warpgroup issues the next batch while the previous one runs
//! (`examples/gemm.rs`'s `warpgroup_256`).
//!
//! The accumulator's layout ([`wg_store`] writes it out): thread `t` of the warpgroup
//! holds rows `16 (t / 32) + t % 32 / 4 (+ 8)`, columns `8 i + 2 (t % 4) (+ 1)`.

use super::matrix::MmaElement;
use super::{device_only, Symmetric};

/// Rows of A and of the accumulator of a warpgroup.
pub const WG_M: u32 = 64;
/// Columns of B and of the accumulator of a warpgroup.
pub const WG_N: u32 = 128;
/// The k extent of one [`wg_mma`].
pub const WG_K: u32 = 16;

/// A warpgroup's 64 x 128 `f32` accumulator, spread over its 128 threads.
#[derive(Clone, Copy)]
pub struct WgAcc(());

/// An accumulator of zeros.
#[inline(always)]
pub fn wg_zero() -> WgAcc {
    device_only("wg_zero")
}

/// `acc + A B` over k `16 kstep .. 16 kstep + 16` of the 64 x 64 tile of A at `a` and
/// the 128 x 64 tile of Bᵀ at `b` (block-shared memory, in the 128-byte swizzled layout
/// the prelude's `warpgroup` module describes). Asynchronous on Hopper: read the result
/// after [`wg_wait`].
#[inline(always)]
pub fn wg_mma<T: MmaElement>(a: *const T, b: *const T, kstep: u32, acc: WgAcc) -> WgAcc {
    let _ = (a, b, kstep, acc);
    device_only("wg_mma")
}

/// Closes the batch of [`wg_mma`] this warpgroup issued since the last commit.
#[inline(always)]
pub fn wg_commit() {
    device_only("wg_commit")
}

/// `acc` once at most `pending` (an integer literal, 0 to 7) of this warpgroup's
/// committed batches are still in flight: with 0 every [`wg_mma`] before the last
/// [`wg_commit`] has finished, so `acc` may be read and their shared tiles overwritten.
#[inline(always)]
pub fn wg_wait(acc: WgAcc, pending: u32) -> WgAcc {
    let _ = (acc, pending);
    device_only("wg_wait")
}

/// Stores the accumulator into the 64 x 128 `f32` tile at `tile` (row-major, `ld`
/// elements between rows). With `tile` 8-byte aligned and `ld` even, each thread's pairs
/// of adjacent columns are written with one 8-byte store each.
#[inline(always)]
pub fn wg_store(tile: *mut f32, ld: u32, acc: WgAcc) {
    let _ = (tile, ld, acc);
    device_only("wg_store")
}

/// Stores the accumulator into `peer`'s copy of the 64 x 128 `f32` tile at `tile`
/// (row-major, `ld` elements between rows): a GEMM's output tile straight into a peer.
#[inline(always)]
pub fn wg_store_peer(tile: Symmetric<f32>, ld: u32, acc: WgAcc, peer: u32) {
    let _ = (tile, ld, acc, peer);
    device_only("wg_store_peer")
}
