//! Bulk copies from global into block-shared memory that complete on a shared-memory
//! barrier: Hopper's copy engine (`cp.async.bulk` with an `mbarrier`), which moves a
//! whole row ([`copy_bulk`]) or a whole box of a matrix ([`copy_tile`], through a host
//! tile map) in one instruction and leaves the threads' memory pipeline to the loads of
//! shared memory (`ldmatrix`).
//!
//! A barrier is a `u64` in block-shared memory (`shared_array::<u64, N>()`) that counts
//! the bytes of one batch of copies. Its phases alternate parity 0, 1, 0, ..: a batch
//! is announced once ([`bulk_expect`], by one thread), copied by any threads
//! ([`copy_bulk`]), and waited for by every thread ([`bulk_wait`] with the phase's
//! parity), after which the barrier counts the next batch.
//!
//! ```text
//! let rows = shared_array::<bf16, 2048>();
//! let bar = shared_array::<u64, 1>();
//! if thread_idx_x() == 0 { bulk_barrier_init(bar); }
//! sync_threads();
//! if thread_idx_x() == 0 { bulk_expect(bar, 32 * 128); }        // 32 rows of 128 bytes
//! if thread_idx_x() < 32 {
//!     let t = thread_idx_x() as usize;
//!     copy_bulk(unsafe { rows.add(64 * t) } as *mut [bf16; 64],
//!               unsafe { a.add(64 * t) } as *const [bf16; 64], bar);
//! }
//! bulk_wait(bar, 0);                                            // every thread
//! ```
//!
//! Where it runs: on sm_90 and sm_90a the copy engine and `mbarrier`s. Elsewhere (sm_80,
//! AMD, the CPU) [`copy_bulk`] copies at once, [`bulk_expect`] and [`bulk_barrier_init`]
//! do nothing, and [`bulk_wait`] is [`sync_threads`](super::sync_threads): so every
//! thread of the block must call [`bulk_wait`] at the same points, as it would
//! `sync_threads`, and a kernel that needs its threads to agree (before it overwrites a
//! buffer others read) still calls `sync_threads` itself.

use super::{device_only, DeviceValue};

/// Starts copying one box of a matrix into block-shared memory at `dst`, counted on
/// `barrier`'s current phase like [`copy_bulk`]: the box of the host's tile map `map`
/// (`Iris::tile_map`: `box_rows` rows of 128 bytes) whose first element is at column
/// `col`, row `row` of the matrix. The box lands in the 128-byte swizzle, the layout
/// Hopper's copy engine writes and `mma_load_a_swizzled`-style loads read: box row `r`
/// at byte `128 r` of `dst`, its 16-byte chunk `c` at chunk `c ^ (r % 8)` of that row;
/// `dst` on a 1024-byte boundary, `col` a multiple of 16 bytes' worth of elements (8 for
/// `bf16`). Elements outside the matrix read as zeros. It counts
/// `box_rows x 128` bytes on the barrier (announce them with [`bulk_expect`]).
///
/// On sm_90 and sm_90a one `cp.async.bulk.tensor` request; elsewhere the calling thread
/// copies the box at once (so one thread per box, as there).
#[inline(always)]
pub fn copy_tile<T: DeviceValue>(
    dst: *mut T,
    map: *const u64,
    col: u32,
    row: u32,
    barrier: *mut u64,
) {
    let _ = (dst, map, col, row, barrier);
    device_only("copy_tile")
}

/// Makes `barrier` (a `u64` in block-shared memory) ready to count batches of bulk copies;
/// one thread calls it, then the block calls `sync_threads` before the first use.
#[inline(always)]
pub fn bulk_barrier_init(barrier: *mut u64) {
    let _ = barrier;
    device_only("bulk_barrier_init")
}

/// Announces that the barrier's current phase completes when `bytes` bytes of
/// [`copy_bulk`] copies have landed: one thread calls it once per phase, before or after
/// the copies start.
#[inline(always)]
pub fn bulk_expect(barrier: *mut u64, bytes: u32) {
    let _ = (barrier, bytes);
    device_only("bulk_expect")
}

/// Starts copying `*src` (global memory) into `*dst` (block-shared memory), counted on
/// `barrier`'s current phase: `T` is a multiple of 16 bytes (a row such as `[bf16; 64]`),
/// both pointers 16-byte aligned. Where they are not (or not global and shared), the
/// thread copies at once and counts the bytes itself.
#[inline(always)]
pub fn copy_bulk<T: DeviceValue>(dst: *mut T, src: *const T, barrier: *mut u64) {
    let _ = (dst, src, barrier);
    device_only("copy_bulk")
}

/// Waits until the barrier's phase of parity `parity` (0 for its first phase, 1 for the
/// second, 0 for the third, ..) has completed: its announced bytes landed. Every thread of
/// the block calls it at the same point (it is `sync_threads` where there is no copy
/// engine).
#[inline(always)]
pub fn bulk_wait(barrier: *mut u64, parity: u32) {
    let _ = (barrier, parity);
    device_only("bulk_wait")
}
