//! Warpgroup matrix operations: four warps (128 threads, a warpgroup) multiply a 64 x 16
//! tile of A by a 16 x 128 tile of B, both in block-shared memory, into a 64 x 128 `f32`
//! accumulator held in registers (64 elements per thread).
//!
//! | | NVIDIA Hopper (the unit is compiled for `sm_90a`) | other NVIDIA, AMD, CPU backend |
//! |---|---|---|
//! | [`wg_mma`] | one `wgmma.mma_async.sync.aligned.m64n128k16.f32.{bf16,f16}`, asynchronous | each thread computes its 64 elements from shared memory in `f32` |
//! | [`wg_wait`] | `wgmma.wait_group 0` | nothing |
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
//! **Shared tiles.** Both tiles are made of core matrices (8 rows of 16 bytes, 64
//! elements, contiguous), `kchunks` 8-element k chunks per group of 8 rows. In a tile of
//! `8 * kchunks` columns of k:
//! - A (M x K, M a multiple of 64): element `(m, k)` at
//!   `((m / 8) * kchunks + k / 8) * 64 + (m % 8) * 8 + k % 8`;
//! - B (K x N, N = 128): element `(k, n)` at
//!   `((n / 8) * kchunks + k / 8) * 64 + (k % 8) * 8 + n % 8`.
//!
//! Eight consecutive k of a row of A (row-major in global memory), or eight consecutive n
//! of a row of B, are 16 contiguous bytes in both: one
//! [`copy_async`](super::copy_async) each. The tiles start on 16-byte boundaries
//! (`shared_array` gives that). [`wg_mma`]`(a, b, kchunks, acc)` multiplies the 64 rows
//! of A from `a` (warpgroup `w`'s rows: `tile_a + 8 * w * kchunks * 64`) by the 128
//! columns of B from `b`, over 16 k: k-step `s` (k `16 s .. 16 s + 16`) is `a + 128 * s`,
//! `b + 128 * s`.
//!
//! **Order.** Make the tiles' writes visible first (`copy_async_wait`, then
//! [`sync_threads`](super::sync_threads)). On Hopper [`wg_mma`] is asynchronous: its
//! result may be passed to more `wg_mma` calls, but read (stored) only after
//! [`wg_wait`], and the shared tiles it reads stay unchanged until then:
//!
//! ```ignore
//! let mut acc = wg_zero();
//! for s in 0..kchunks / 2 {
//!     acc = wg_mma(a.add((128 * s) as usize), b.add((128 * s) as usize), kchunks, acc);
//! }
//! acc = wg_wait(acc);
//! sync_threads(); // before the tiles are overwritten
//! ```
//!
//! The accumulator's layout ([`wg_store`] writes it out): thread `t` of the warpgroup
//! holds rows `16 (t / 32) + t % 32 / 4 (+ 8)`, columns `8 i + 2 (t % 4) (+ 1)`.

use super::device_only;
use super::matrix::MmaElement;

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

/// `acc + A * B` for the 64 x 16 slice of A at `a` and the 16 x 128 slice of B at `b`
/// (block-shared memory, in the layouts of the [module docs](self), `kchunks` k chunks
/// per 8-row group). Asynchronous on Hopper: read the result after [`wg_wait`].
#[inline(always)]
pub fn wg_mma<T: MmaElement>(a: *const T, b: *const T, kchunks: u32, acc: WgAcc) -> WgAcc {
    let _ = (a, b, kchunks, acc);
    device_only("wg_mma")
}

/// `acc` once every [`wg_mma`] this warpgroup issued has finished (and their shared
/// tiles may be overwritten).
#[inline(always)]
pub fn wg_wait(acc: WgAcc) -> WgAcc {
    let _ = acc;
    device_only("wg_wait")
}

/// Stores the accumulator into the 64 x 128 `f32` tile at `tile` (row-major, `ld`
/// elements between rows).
#[inline(always)]
pub fn wg_store(tile: *mut f32, ld: u32, acc: WgAcc) {
    let _ = (tile, ld, acc);
    device_only("wg_store")
}
