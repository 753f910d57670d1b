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

/// Lane `lane`'s part of a warp's `mma` in NVIDIA's `m16n8k16` layout, twice over (a
/// 16 x 16 tile of `f32` from 16 x 16 A and B): `a(l)` and `b(l)` are lane `l`'s
/// fragments, `c` the lane's accumulator, to which the products are added in `k` order
/// (a multiply, then an add, as the per-lane code did). Lane `4g + t` holds rows `g` and
/// `g + 8` of its accumulator's columns `2t`, `2t + 1` of each 8-column half; A's row `r`,
/// column `k` is element `(k & 1) + 4 (k >= 8) + 2 (r >= 8)` of lane `4 (r mod 8) + (k mod 8) / 2`;
/// B's row `k`, column `8h + n` is element `4h + (k & 1) + 2 (k >= 8)` of lane
/// `4n + (k mod 8) / 2`.
pub(crate) fn mma_lane(
    lane: usize,
    a: impl Fn(usize) -> [f32; 8],
    b: impl Fn(usize) -> [f32; 8],
    c: &mut [f32; 8],
) {
    let (g, t) = (lane >> 2, lane & 3);
    for (i, out) in c.iter_mut().enumerate() {
        let (h, ii) = (i / 4, i % 4);
        let (upper, n) = (ii >> 1, 2 * t + (ii & 1));
        let mut sum = *out;
        for k in 0..16usize {
            let tk = (k % 8) >> 1;
            let high = usize::from(k >= 8);
            let av = a(4 * g + tk)[(k & 1) + 4 * high + 2 * upper];
            let bv = b(4 * n + tk)[4 * h + (k & 1) + 2 * high];
            sum += av * bv;
        }
        *out = sum;
    }
}

/// An `mma` with no other lane: the lane as lane 0 of a warp whose other lanes hold zeros
/// (kernels that call `mma` run as fibers; see `fibers.rs`).
///
/// # Safety
/// `a` and `b` point to 8 `f32` each, `c` to 8 writable `f32`.
pub(crate) unsafe extern "C" fn lone_mma(
    _seat: *mut c_void,
    a: *const f32,
    b: *const f32,
    c: *mut f32,
) {
    // SAFETY: the caller's promise.
    let (a, b, c) = unsafe {
        (
            *(a as *const [f32; 8]),
            *(b as *const [f32; 8]),
            &mut *(c as *mut [f32; 8]),
        )
    };
    let pick = |own: [f32; 8]| move |l: usize| if l == 0 { own } else { [0.0; 8] };
    mma_lane(0, pick(a), pick(b), c);
}
