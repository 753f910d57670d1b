//! The kernels the benchmark measures: translate-then-store, load, copy, all-gather (scalar
//! and 16-byte), their chunked variants, and the utilities that fill, poison and check.

#![allow(missing_docs)]

use iris::prelude::*;

// ----- kernels -------------------------------------------------------------------------

/// Translate-then-store: writes hash values into `peer`'s copy of `dst`, 16 bytes a thread
/// and a step, grid-stride. `n` counts 16-byte vectors.
#[iris::kernel]
pub fn store_v4(dst: Symmetric<f32>, n: u64, peer: u32, seed: u32) {
    let d = dst.cast::<f32x4>();
    let stride = (grid_dim_x() * block_dim_x()) as u64;
    let mut i = (block_idx_x() * block_dim_x() + thread_idx_x()) as u64;
    while i < n {
        let e = (i as u32).wrapping_mul(4);
        let v = f32x4::new([
            (e.wrapping_mul(2654435761) ^ seed) as f32,
            (e.wrapping_add(1).wrapping_mul(2654435761) ^ seed) as f32,
            (e.wrapping_add(2).wrapping_mul(2654435761) ^ seed) as f32,
            (e.wrapping_add(3).wrapping_mul(2654435761) ^ seed) as f32,
        ]);
        iris::store(d.add(i as usize), v, peer);
        i += stride;
    }
}

/// Translate-then-load: reads `peer`'s copy of `src` into the local `dst`, 16 bytes a
/// thread and a step, grid-stride.
#[iris::kernel]
pub fn load_v4(src: Symmetric<f32>, dst: *mut f32x4, n: u64, peer: u32) {
    let s = src.cast::<f32x4>();
    let stride = (grid_dim_x() * block_dim_x()) as u64;
    let mut i = (block_idx_x() * block_dim_x() + thread_idx_x()) as u64;
    while i < n {
        unsafe { *dst.add(i as usize) = iris::load(s.add(i as usize), peer) };
        i += stride;
    }
}

/// `iris::copy` between two allocations: `from_peer`'s copy of `src` into `to_peer`'s
/// copy of `dst`, each translated through its own table.
#[iris::kernel]
pub fn copy_v4(src: Symmetric<f32>, dst: Symmetric<f32>, n: u64, from_peer: u32, to_peer: u32) {
    let s = src.cast::<f32x4>();
    let d = dst.cast::<f32x4>();
    let stride = (grid_dim_x() * block_dim_x()) as u64;
    let mut i = (block_idx_x() * block_dim_x() + thread_idx_x()) as u64;
    while i < n {
        iris::copy(s.add(i as usize), d.add(i as usize), from_peer, to_peer);
        i += stride;
    }
}

/// The all-gather of `examples/all_gather.rs`, unchanged: one `f32` a thread.
#[iris::kernel]
pub fn all_gather(input: *const f32, out: Symmetric<f32>, n: u64, me: u32, world: u32) {
    let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as u64;
    if i < n {
        let v = unsafe { *input.add(i as usize) };
        for peer in 0..world {
            iris::store(out.add((me as u64 * n + i) as usize), v, peer);
        }
    }
}

/// All-gather with 16-byte vectors, grid-stride: every input vector is read once and
/// stored into slot `me` of every rank's `out`. `n` counts vectors per rank.
#[iris::kernel]
pub fn all_gather_v4(input: *const f32x4, out: Symmetric<f32>, n: u64, me: u32, world: u32) {
    let slot = out.cast::<f32x4>().add((me as u64 * n) as usize);
    let stride = (grid_dim_x() * block_dim_x()) as u64;
    let mut i = (block_idx_x() * block_dim_x() + thread_idx_x()) as u64;
    while i < n {
        let v = unsafe { *input.add(i as usize) };
        let mut peer = 0u32;
        while peer < world {
            iris::store(slot.add(i as usize), v, peer);
            peer += 1;
        }
        i += stride;
    }
}

/// Vectors per thread in the chunked kernels: a block covers `UNROLL * block_dim_x()`
/// consecutive vectors, as a Triton program of 4096 `f32` over 256 threads does.
pub(crate) const UNROLL: u64 = 4;

/// Translate-then-store, chunked: block `b` writes vectors `[b * 4 * blockDim, ...)`, four
/// a thread, each warp-wide store 512 contiguous bytes; grid-stride over chunks.
#[iris::kernel]
pub fn store_v4c(dst: Symmetric<f32>, n: u64, peer: u32, seed: u32) {
    let d = dst.cast::<f32x4>();
    let t = thread_idx_x() as u64;
    let bd = block_dim_x() as u64;
    let mut base = block_idx_x() as u64 * bd * 4;
    let step = grid_dim_x() as u64 * bd * 4;
    while base < n {
        let mut k = 0u64;
        while k < 4 {
            let i = base + k * bd + t;
            if i < n {
                let e = (i as u32).wrapping_mul(4);
                let v = f32x4::new([
                    (e.wrapping_mul(2654435761) ^ seed) as f32,
                    (e.wrapping_add(1).wrapping_mul(2654435761) ^ seed) as f32,
                    (e.wrapping_add(2).wrapping_mul(2654435761) ^ seed) as f32,
                    (e.wrapping_add(3).wrapping_mul(2654435761) ^ seed) as f32,
                ]);
                iris::store(d.add(i as usize), v, peer);
            }
            k += 1;
        }
        base += step;
    }
}

/// Translate-then-load, chunked as [`store_v4c`].
#[iris::kernel]
pub fn load_v4c(src: Symmetric<f32>, dst: *mut f32x4, n: u64, peer: u32) {
    let s = src.cast::<f32x4>();
    let t = thread_idx_x() as u64;
    let bd = block_dim_x() as u64;
    let mut base = block_idx_x() as u64 * bd * 4;
    let step = grid_dim_x() as u64 * bd * 4;
    while base < n {
        let mut k = 0u64;
        while k < 4 {
            let i = base + k * bd + t;
            if i < n {
                unsafe { *dst.add(i as usize) = iris::load(s.add(i as usize), peer) };
            }
            k += 1;
        }
        base += step;
    }
}

/// `iris::copy` between two allocations, chunked as [`store_v4c`].
#[iris::kernel]
pub fn copy_v4c(src: Symmetric<f32>, dst: Symmetric<f32>, n: u64, from_peer: u32, to_peer: u32) {
    let s = src.cast::<f32x4>();
    let d = dst.cast::<f32x4>();
    let t = thread_idx_x() as u64;
    let bd = block_dim_x() as u64;
    let mut base = block_idx_x() as u64 * bd * 4;
    let step = grid_dim_x() as u64 * bd * 4;
    while base < n {
        let mut k = 0u64;
        while k < 4 {
            let i = base + k * bd + t;
            if i < n {
                iris::copy(s.add(i as usize), d.add(i as usize), from_peer, to_peer);
            }
            k += 1;
        }
        base += step;
    }
}

/// All-gather with 16-byte vectors, chunked as [`store_v4c`].
#[iris::kernel]
pub fn all_gather_v4c(input: *const f32x4, out: Symmetric<f32>, n: u64, me: u32, world: u32) {
    let slot = out.cast::<f32x4>().add((me as u64 * n) as usize);
    let t = thread_idx_x() as u64;
    let bd = block_dim_x() as u64;
    let mut base = block_idx_x() as u64 * bd * 4;
    let step = grid_dim_x() as u64 * bd * 4;
    while base < n {
        let mut k = 0u64;
        while k < 4 {
            let i = base + k * bd + t;
            if i < n {
                let v = unsafe { *input.add(i as usize) };
                let mut peer = 0u32;
                while peer < world {
                    iris::store(slot.add(i as usize), v, peer);
                    peer += 1;
                }
            }
            k += 1;
        }
        base += step;
    }
}

/// A flag ping-pong kernel between ranks 0 and 1, one thread each, at one scope: rank 0
/// sets the peer's flag to `ping` and waits for its own to reach `pong`; rank 1 the mirror.
/// Release stores and acquire loads. A wait longer than `spin_limit` polls sets `*failed`.
macro_rules! ping_pong_kernel {
    ($(#[$doc:meta])* $name:ident, $scope:ident) => {
        $(#[$doc])*
        #[iris::kernel]
        pub fn $name(
            flag: Symmetric<u32>,
            rounds: u32,
            epoch: u32,
            me: u32,
            spin_limit: u32,
            failed: *mut u32,
        ) {
            let peer = 1 - me;
            let mut k = 0u32;
            while k < rounds {
                let ping = epoch + 2 * k + 1;
                let pong = ping + 1;
                let want = if me == 0 { pong } else { ping };
                if me == 0 {
                    iris::atomic_store(flag, ping, peer, Ordering::Release, Scope::$scope);
                }
                let mut spins = 0u32;
                while iris::atomic_load(flag, me, Ordering::Acquire, Scope::$scope) != want {
                    spins += 1;
                    if spins > spin_limit {
                        unsafe { *failed = 1 };
                        return;
                    }
                }
                if me == 1 {
                    iris::atomic_store(flag, pong, peer, Ordering::Release, Scope::$scope);
                }
                k += 1;
            }
        }
    };
}

ping_pong_kernel!(
    /// [`ping_pong`] at device scope (enough when both ranks share one GPU), to show what
    /// system scope costs.
    ping_pong_device,
    Device
);
ping_pong_kernel!(
    /// The flag ping-pong at system scope, the scope cross-rank flags need.
    ping_pong,
    System
);

/// Helpers: random fill, device-side checks, and the local fill/copy kernels that give the
/// in-language ceilings.
#[iris::kernels]
pub mod util {
    use iris::prelude::*;

    /// The value of element `e` for `seed`: a multiplicative hash, as an `f32`.
    fn hashed(e: u32, seed: u32) -> f32 {
        (e.wrapping_mul(2654435761) ^ seed) as f32
    }

    /// The four hashed values of vector `i`.
    fn hashed4(i: u64, seed: u32) -> f32x4 {
        let e = (i as u32).wrapping_mul(4);
        f32x4::new([
            hashed(e, seed),
            hashed(e.wrapping_add(1), seed),
            hashed(e.wrapping_add(2), seed),
            hashed(e.wrapping_add(3), seed),
        ])
    }

    /// `out[i] = hashed4(i, seed)`, grid-stride (the in-language fill ceiling).
    #[kernel]
    pub fn fill_hash(out: *mut f32x4, n: u64, seed: u32) {
        let stride = (grid_dim_x() * block_dim_x()) as u64;
        let mut i = (block_idx_x() * block_dim_x() + thread_idx_x()) as u64;
        while i < n {
            unsafe { *out.add(i as usize) = hashed4(i, seed) };
            i += stride;
        }
    }

    /// `dst[i] = src[i]`, grid-stride (the in-language copy ceiling).
    #[kernel]
    pub fn copy_local(src: *const f32x4, dst: *mut f32x4, n: u64) {
        let stride = (grid_dim_x() * block_dim_x()) as u64;
        let mut i = (block_idx_x() * block_dim_x() + thread_idx_x()) as u64;
        while i < n {
            unsafe { *dst.add(i as usize) = *src.add(i as usize) };
            i += stride;
        }
    }

    /// Sets `*bad` when any `data[i]` differs from `hashed4(i, seed)`.
    #[kernel]
    pub fn check_hash(data: *const f32x4, n: u64, seed: u32, bad: *mut u32) {
        let stride = (grid_dim_x() * block_dim_x()) as u64;
        let mut i = (block_idx_x() * block_dim_x() + thread_idx_x()) as u64;
        while i < n {
            let v = unsafe { *data.add(i as usize) };
            let w = hashed4(i, seed);
            if v.get(0) != w.get(0)
                || v.get(1) != w.get(1)
                || v.get(2) != w.get(2)
                || v.get(3) != w.get(3)
            {
                unsafe { *bad = 1 };
            }
            i += stride;
        }
    }
}

// ----- options and results -------------------------------------------------------------
