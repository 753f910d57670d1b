//! The performance benchmark: every figure against a ceiling measured in the same run.
//!
//! ```text
//! cargo bench --bench gpu_bench                        # the backend found (CPU: tiny sizes)
//! cargo bench --bench gpu_bench -- --out bench.json    # where the JSON goes
//! ```
//!
//! Cases (ranks are threads of this process; on a one-GPU machine they share the GPU):
//! - ceilings: the runtime's own device memset and device-to-device copy, on plain and
//!   on symmetric-heap memory, and the same two as trivial iris kernels;
//! - `store`: rank 0 translates into rank 1's copy and stores 16-byte vectors (write only;
//!   against memset);
//! - `load`: rank 0 loads rank 1's copy, stores into its own buffer (against copy);
//! - `copy`: `iris::copy` from rank 1's copy of one allocation into rank 0's copy of
//!   another (against copy);
//! - `all_gather`: 2, 4 and 8 ranks, 4 KiB to 1 GiB per rank, the example's scalar kernel
//!   and a 16-byte grid-stride one (against all ranks' bytes over the copy bandwidth);
//! - `ping_pong`: a flag bounced between two ranks, one thread each (round trip);
//! - `module_load`: first launch of a kernel minus a steady launch (the code object's load).
//!
//! Device times come from events on the rank's stream, medians over repeats after
//! warm-up; data is random (a multiplicative hash of the index and a random seed) and
//! every destination is poisoned first and checked on the device afterwards.
//! Prints a table; writes JSON to `--out`, else `$OUT/bench-iris.json`, else `./bench.json`.
//! `--dump-ptx DIR` writes each kernel unit's `sm_90` PTX into `DIR` and exits.

use iris::driver::{self as backend, Device, MemoryKind, Stream};
use iris::prelude::*;
use iris::{BackendKind, DevicePtr, Iris, LaunchConfig, World};
use rand::Rng;
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::{Duration, Instant};

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
const UNROLL: u64 = 4;

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
mod util {
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

const KIB: usize = 1 << 10;
const MIB: usize = 1 << 20;
const GIB: usize = 1 << 30;
/// Threads per block of the grid-stride kernels.
const BLOCK: u32 = 256;
/// Resident blocks per multiprocessor the grid-stride kernels are launched with.
const BLOCKS_PER_SM: u32 = 8;

struct Options {
    out: Option<String>,
    dump_ptx: Option<String>,
    only: Option<Vec<String>>,
    /// Largest all-gather size per rank.
    max_gather: Option<usize>,
}

fn parse_options() -> Result<Options, String> {
    let mut opts = Options {
        out: None,
        dump_ptx: None,
        only: None,
        max_gather: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--bench" => {}
            "--out" => opts.out = Some(value()?),
            "--dump-ptx" => opts.dump_ptx = Some(value()?),
            "--only" => {
                opts.only = Some(value()?.split(',').map(|s| s.trim().to_string()).collect())
            }
            "--max-gather" => {
                opts.max_gather = Some(value()?.parse().map_err(|e| format!("--max-gather: {e}"))?)
            }
            "-h" | "--help" => {
                println!(
                    "usage: gpu_bench [--out FILE] [--only ceilings,store,load,copy,all_gather,ping_pong,module_load] \
                     [--max-gather BYTES] [--dump-ptx DIR]"
                );
                std::process::exit(0);
            }
            // `cargo bench` passes filters and flags of its own; ignore what is not ours.
            _ => {}
        }
    }
    Ok(opts)
}

/// Sizes and repeat counts for the backend found.
struct Plan {
    gpu: bool,
    bw_bytes: usize,
    gather_sizes: Vec<usize>,
    gather_ranks: Vec<usize>,
    warmup: usize,
    repeats: usize,
    ping_rounds: (u32, u32),
    spin_limit: u32,
}

impl Plan {
    fn for_backend(kind: BackendKind, max_gather: Option<usize>) -> Self {
        let gpu = kind != BackendKind::Cpu;
        let mut gather_sizes: Vec<usize> = if gpu {
            vec![4 * KIB, 64 * KIB, MIB, 16 * MIB, 256 * MIB, GIB]
        } else {
            vec![4 * KIB, 64 * KIB]
        };
        if let Some(max) = max_gather {
            gather_sizes.retain(|&s| s <= max);
        }
        Plan {
            gpu,
            bw_bytes: if gpu { GIB } else { 4 * MIB },
            gather_sizes,
            gather_ranks: vec![2, 4, 8],
            warmup: if gpu { 3 } else { 1 },
            repeats: if gpu { 15 } else { 3 },
            ping_rounds: if gpu { (1_000, 21_000) } else { (50, 250) },
            spin_limit: if gpu { 1 << 22 } else { u32::MAX },
        }
    }
}

/// One measured row.
#[derive(Clone, Debug, Default)]
struct Row {
    case: String,
    kernel: String,
    ranks: usize,
    /// Bytes per rank (the message size).
    size_bytes: usize,
    /// Bytes read plus written through device memory, all ranks together.
    bytes_moved: f64,
    /// Median device milliseconds of one operation.
    ms: f64,
    /// The ceiling it is compared with, and that ceiling's bandwidth (GB/s).
    ceiling: String,
    ceiling_gbps: f64,
    /// Launches per timed sample (back to back).
    launches: usize,
    correct: bool,
    extra: Vec<(String, f64)>,
}

impl Row {
    fn gbps(&self) -> f64 {
        self.bytes_moved / (self.ms * 1e-3) / 1e9
    }
    fn bound_ms(&self) -> f64 {
        self.bytes_moved / (self.ceiling_gbps * 1e9) * 1e3
    }
    fn ratio(&self) -> f64 {
        self.bound_ms() / self.ms
    }
}

fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let m = v.len() / 2;
    if v.len() % 2 == 1 {
        v[m]
    } else {
        0.5 * (v[m - 1] + v[m])
    }
}

fn random_seed() -> u32 {
    rand::rng().random::<u32>() | 1
}

/// Grid of a grid-stride launch over `n` items: enough blocks to fill every
/// multiprocessor, no more than the items need.
fn grid_for(iris: &Iris, n: u64) -> LaunchConfig {
    let full = iris.device_info().multiprocessors.max(1) * BLOCKS_PER_SM;
    let needed = n.div_ceil(u64::from(BLOCK)).max(1);
    LaunchConfig::linear(needed.min(u64::from(full)) as u32, BLOCK)
}

/// Grid of a chunked launch over `n` vectors: one block per chunk of `UNROLL * BLOCK`
/// vectors (no grid-stride), as Triton launches one program per block of elements.
fn chunk_grid(n: u64) -> LaunchConfig {
    let blocks = n.div_ceil(UNROLL * u64::from(BLOCK)).max(1);
    LaunchConfig::linear(u32::try_from(blocks).unwrap_or(u32::MAX), BLOCK)
}

/// Median device milliseconds of `op`, timed with events on the rank's stream after
/// `warmup` untimed calls; each sample runs `op` `launches` times back to back.
fn time_events(
    iris: &Iris,
    warmup: usize,
    repeats: usize,
    launches: usize,
    mut op: impl FnMut() -> iris::Result<()>,
) -> iris::Result<f64> {
    for _ in 0..warmup {
        op()?;
    }
    iris.synchronize()?;
    let (start, end) = (iris.event()?, iris.event()?);
    let mut samples = Vec::with_capacity(repeats);
    for _ in 0..repeats {
        iris.record(&start)?;
        for _ in 0..launches {
            op()?;
        }
        iris.record(&end)?;
        samples.push(f64::from(start.elapsed_ms(&end)?) / launches as f64);
    }
    Ok(median(&mut samples))
}

/// The runtime's own memset and device-to-device copy, on a stream and two allocations of
/// their own (made through the backend's device API), timed with events of that device.
struct Runtime {
    device: Arc<dyn Device>,
    stream: Box<dyn Stream>,
    timeout: Duration,
    a: u64,
    b: u64,
}

impl Runtime {
    fn new(iris: &Iris, bytes: usize) -> iris::Result<Self> {
        let device = backend::open(iris.backend_kind())?.device(iris.device_info().ordinal)?;
        let stream = device.create_stream()?;
        let a = device.alloc(bytes, MemoryKind::Device)?;
        let b = match device.alloc(bytes, MemoryKind::Device) {
            Ok(b) => b,
            Err(e) => {
                // SAFETY: just allocated, never used.
                let _ = unsafe { device.free(a) };
                return Err(e);
            }
        };
        Ok(Self {
            device,
            stream,
            timeout: iris.timeout(),
            a,
            b,
        })
    }

    /// Median milliseconds of `op` on this stream.
    fn time(
        &self,
        warmup: usize,
        repeats: usize,
        mut op: impl FnMut(&dyn Stream) -> iris::Result<()>,
    ) -> iris::Result<f64> {
        for _ in 0..warmup {
            op(&*self.stream)?;
        }
        self.stream.synchronize(self.timeout)?;
        let (start, end) = (self.device.create_event()?, self.device.create_event()?);
        let mut samples = Vec::with_capacity(repeats);
        for _ in 0..repeats {
            self.stream.record(&*start)?;
            op(&*self.stream)?;
            self.stream.record(&*end)?;
            end.synchronize(self.timeout)?;
            samples.push(f64::from(start.elapsed_ms(&*end)?));
        }
        Ok(median(&mut samples))
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        if self.stream.synchronize(self.timeout).is_ok() {
            // SAFETY: our own allocations; the only stream that used them is synchronized
            // (kernels that used them were synchronized by their rank before this drop).
            unsafe {
                let _ = self.device.free(self.a);
                let _ = self.device.free(self.b);
            }
        }
    }
}

/// Runs `check_hash` over `n` vectors at `data` and says whether all matched `seed`.
fn check(iris: &Iris, data: DevicePtr<f32x4>, n: u64, seed: u32) -> iris::Result<bool> {
    let bad = iris.zeros::<u32>(1)?;
    util::check_hash::launch(iris, grid_for(iris, n), &data, n, seed, &bad)?;
    Ok(bad.to_vec()?[0] == 0)
}

/// Overwrites `n` vectors at `data` with values no check accepts for any other seed.
fn poison(iris: &Iris, data: &DevicePtr<f32x4>, n: u64, seed: u32) -> iris::Result<()> {
    util::fill_hash::launch(iris, grid_for(iris, n), data, n, !seed)?;
    iris.synchronize()
}

// ----- ceilings ----------------------------------------------------------------------------

/// Memset and device-to-device copy through the runtime (the backend's own entry points,
/// and `Buffer::copy_from_buffer`), and the same two as iris kernels.
fn ceilings(plan: &Plan) -> iris::Result<Vec<Row>> {
    let bytes = plan.bw_bytes;
    let n = (bytes / 16) as u64;
    let heap = bytes + 16 * MIB;
    let rows = World::threads(1).heap_bytes(heap).run(|iris| {
        let rt = Runtime::new(iris, bytes)?;
        // SAFETY: the runtime's allocations outlive every launch below (synchronized).
        let (ra, rb) = unsafe {
            (
                DevicePtr::<f32x4>::from_raw(rt.a),
                DevicePtr::<f32x4>::from_raw(rt.b),
            )
        };
        let a = iris.zeros::<f32x4>(n as usize)?;
        let b = iris.zeros::<f32x4>(n as usize)?;
        let seed = random_seed();
        util::fill_hash::launch(iris, grid_for(iris, n), &a, n, seed)?;
        util::fill_hash::launch(iris, grid_for(iris, n), &ra, n, seed)?;
        iris.synchronize()?;
        let (w, r) = (plan.warmup, plan.repeats);
        let memset = rt.time(w, r, |s| {
            // SAFETY: the runtime's own live allocation of `bytes`.
            unsafe { rt.device.memset(s, rt.b, 0x5a, bytes) }
        })?;
        let memcpy = rt.time(w, r, |s| {
            // SAFETY: the runtime's own live allocations of `bytes` each.
            unsafe { rt.device.memcpy_dtod(s, rt.b, rt.a, bytes) }
        })?;
        rt.stream.synchronize(iris.timeout())?;
        let memcpy_ok = check(iris, rb, n, seed)?;
        poison(iris, &b.device_ptr(), n, seed)?;
        let buffer_copy = time_events(iris, w, r, 1, || b.copy_from_buffer(&a))?;
        let buffer_copy_ok = check(iris, b.device_ptr(), n, seed)?;
        let fill = time_events(iris, w, r, 1, || {
            util::fill_hash::launch(iris, grid_for(iris, n), &b, n, seed ^ 7)
        })?;
        let fill_ok = check(iris, b.device_ptr(), n, seed ^ 7)?;
        poison(iris, &b.device_ptr(), n, seed)?;
        let copy = time_events(iris, w, r, 1, || {
            util::copy_local::launch(iris, grid_for(iris, n), &a, &b, n)
        })?;
        let copy_kernel_ok = check(iris, b.device_ptr(), n, seed)?;
        let row = |name: &str, kernel: &str, moved: usize, ms: f64, ok: bool| Row {
            case: "ceiling".into(),
            kernel: kernel.into(),
            ranks: 1,
            size_bytes: bytes,
            bytes_moved: moved as f64,
            ms,
            ceiling: name.into(),
            launches: 1,
            correct: ok,
            ..Row::default()
        };
        Ok(vec![
            row("memset", "runtime memset", bytes, memset, true),
            row(
                "memcpy_dtod",
                "runtime memcpy_dtod",
                2 * bytes,
                memcpy,
                memcpy_ok,
            ),
            row(
                "memcpy_dtod",
                "Buffer::copy_from_buffer",
                2 * bytes,
                buffer_copy,
                buffer_copy_ok,
            ),
            row("memset", "iris fill_hash kernel", bytes, fill, fill_ok),
            row(
                "memcpy_dtod",
                "iris copy_local kernel",
                2 * bytes,
                copy,
                copy_kernel_ok,
            ),
        ])
    })?;
    let mut rows = rows.into_iter().next().unwrap_or_default();
    // Each ceiling row is compared with the runtime's own figure.
    let memset = rows[0].gbps();
    let memcpy = rows[1].gbps();
    for r in &mut rows {
        r.ceiling_gbps = if r.ceiling == "memset" {
            memset
        } else {
            memcpy
        };
    }
    Ok(rows)
}

// ----- two-rank bandwidth cases ----------------------------------------------------------

/// Translate-then-store, translate-then-load and `iris::copy` between two ranks.
fn two_rank_cases(
    plan: &Plan,
    memset_gbps: f64,
    memcpy_gbps: f64,
    which: &dyn Fn(&str) -> bool,
) -> iris::Result<Vec<Row>> {
    let bytes = plan.bw_bytes;
    let n = (bytes / 16) as u64;
    let heap = 2 * bytes + 16 * MIB;
    let (do_store, do_load, do_copy) = (which("store"), which("load"), which("copy"));
    let per_rank = World::threads(2).heap_bytes(heap).run(|iris| {
        let me = iris.rank();
        let seeds = iris.all_gather(random_seed())?;
        let (w, r) = (plan.warmup, plan.repeats);
        let mut rows = Vec::new();
        let row = |case: &str, kernel: &str, moved: usize, ms: f64, ceiling: &str, ok: bool| Row {
            case: case.into(),
            kernel: kernel.into(),
            ranks: 2,
            size_bytes: bytes,
            bytes_moved: moved as f64,
            ms,
            ceiling: ceiling.into(),
            ceiling_gbps: if ceiling == "memset" {
                memset_gbps
            } else {
                memcpy_gbps
            },
            launches: 1,
            correct: ok,
            extra: Vec::new(),
        };

        // Each case in two shapes: grid-stride over a grid that fills the GPU, and chunked
        // (one block per 4 * 256 vectors, as Triton launches).
        let variants = [false, true];
        let name = |base: &str, what: &str, chunked: bool| {
            if chunked {
                format!("{base}c (chunked, {what})")
            } else {
                format!("{base} (grid-stride, {what})")
            }
        };
        let config = |chunked: bool| {
            if chunked {
                chunk_grid(n)
            } else {
                grid_for(iris, n)
            }
        };

        // Rank 0 stores into rank 1's copy; rank 1 checks what arrived.
        if do_store {
            let dst = iris.symmetric::<f32>(bytes / 4)?;
            for chunked in variants {
                poison(iris, &dst.local_ptr().cast(), n, seeds[0])?;
                iris.barrier()?;
                let ms = if me == 0 {
                    time_events(iris, w, r, 1, || {
                        if chunked {
                            store_v4c::launch(iris, config(true), &dst, n, 1, seeds[0])
                        } else {
                            store_v4::launch(iris, config(false), &dst, n, 1, seeds[0])
                        }
                    })?
                } else {
                    0.0
                };
                iris.barrier()?;
                let ok = if me == 1 {
                    check(iris, dst.local_ptr().cast(), n, seeds[0])?
                } else {
                    true
                };
                let ok = iris.all_gather(ok)?.iter().all(|&x| x);
                if me == 0 {
                    let kernel = name("store_v4", "translate, 16-byte store", chunked);
                    rows.push(row("store", &kernel, bytes, ms, "memset", ok));
                }
                iris.barrier()?;
            }
        }

        // Rank 0 loads rank 1's copy into a local buffer.
        if do_load {
            let src = iris.symmetric::<f32>(bytes / 4)?;
            let src_local = src.local_ptr().cast::<f32x4>();
            util::fill_hash::launch(iris, grid_for(iris, n), &src_local, n, seeds[me])?;
            let dst = iris.zeros::<f32x4>(n as usize)?;
            for chunked in variants {
                poison(iris, &dst.device_ptr(), n, seeds[1])?;
                iris.barrier()?;
                if me == 0 {
                    let ms = time_events(iris, w, r, 1, || {
                        if chunked {
                            load_v4c::launch(iris, config(true), &src, &dst, n, 1)
                        } else {
                            load_v4::launch(iris, config(false), &src, &dst, n, 1)
                        }
                    })?;
                    let ok = check(iris, dst.device_ptr(), n, seeds[1])?;
                    let kernel = name("load_v4", "translate, 16-byte load", chunked);
                    rows.push(row("load", &kernel, 2 * bytes, ms, "memcpy_dtod", ok));
                }
                iris.barrier()?;
            }
        }

        // iris::copy from rank 1's copy of `a` into rank 0's copy of `b`.
        if do_copy {
            let a = iris.symmetric::<f32>(bytes / 4)?;
            let b = iris.symmetric::<f32>(bytes / 4)?;
            let a_local = a.local_ptr().cast::<f32x4>();
            util::fill_hash::launch(iris, grid_for(iris, n), &a_local, n, seeds[me])?;
            for chunked in variants {
                poison(iris, &b.local_ptr().cast(), n, seeds[1])?;
                iris.barrier()?;
                if me == 0 {
                    let ms = time_events(iris, w, r, 1, || {
                        if chunked {
                            copy_v4c::launch(iris, config(true), &a, &b, n, 1, 0)
                        } else {
                            copy_v4::launch(iris, config(false), &a, &b, n, 1, 0)
                        }
                    })?;
                    let ok = check(iris, b.local_ptr().cast(), n, seeds[1])?;
                    let kernel = name("copy_v4", "iris::copy, two allocations", chunked);
                    rows.push(row("copy", &kernel, 2 * bytes, ms, "memcpy_dtod", ok));
                }
                iris.barrier()?;
            }
        }
        Ok(rows)
    })?;
    Ok(per_rank.into_iter().flatten().collect())
}

// ----- all-gather -------------------------------------------------------------------------

/// All-gather at `ranks` ranks, every size of the plan, both kernels.
fn all_gather_case(plan: &Plan, ranks: usize, memcpy_gbps: f64) -> iris::Result<Vec<Row>> {
    let max = plan.gather_sizes.iter().copied().max().unwrap_or(0);
    let heap = ranks * max + 16 * MIB;
    let per_rank = World::threads(ranks).heap_bytes(heap).run(|iris| {
        let me = iris.rank();
        let world = ranks as u32;
        let seeds = iris.all_gather(random_seed())?;
        // (kernel, size) -> this rank's samples (ms per operation) and check.
        let mut out_rows = Vec::new();
        for &size in &plan.gather_sizes {
            let nv = (size / 16) as u64; // vectors per rank
            let nf = (size / 4) as u64; // floats per rank
            let input = iris.zeros::<f32x4>(nv as usize)?;
            util::fill_hash::launch(iris, grid_for(iris, nv), &input, nv, seeds[me])?;
            let out = iris.symmetric::<f32>(ranks * size / 4)?;
            // Aggregate bytes: every rank reads its input once and writes it to every rank.
            let moved = (ranks * (ranks + 1) * size) as f64;
            let expected_ms = moved / (memcpy_gbps.max(1.0) * 1e9) * 1e3;
            let launches = if plan.gpu {
                (0.5 / expected_ms).ceil().clamp(1.0, 100.0) as usize
            } else {
                2
            };
            let input_f32: DevicePtr<f32> = input.device_ptr().cast();
            for kernel in ["all_gather_v4", "all_gather_v4c", "all_gather"] {
                for (r, &seed) in seeds.iter().enumerate() {
                    poison(
                        iris,
                        &out.local_ptr().cast::<f32x4>().add(r * nv as usize),
                        nv,
                        seed,
                    )?;
                }
                iris.barrier()?;
                let op = || {
                    if kernel == "all_gather_v4c" {
                        all_gather_v4c::launch(
                            iris,
                            chunk_grid(nv),
                            &input,
                            &out,
                            nv,
                            me as u32,
                            world,
                        )
                    } else if kernel == "all_gather_v4" {
                        all_gather_v4::launch(
                            iris,
                            grid_for(iris, nv),
                            &input,
                            &out,
                            nv,
                            me as u32,
                            world,
                        )
                    } else {
                        all_gather::launch(
                            iris,
                            LaunchConfig::for_elements(nf, BLOCK),
                            &input_f32,
                            &out,
                            nf,
                            me as u32,
                            world,
                        )
                    }
                };
                for _ in 0..plan.warmup {
                    op()?;
                }
                iris.synchronize()?;
                let (start, end) = (iris.event()?, iris.event()?);
                let mut samples = Vec::with_capacity(plan.repeats);
                for _ in 0..plan.repeats {
                    // All ranks start together: the sample is this rank's span, and the
                    // slowest rank's span is the operation's time.
                    iris.barrier()?;
                    iris.record(&start)?;
                    for _ in 0..launches {
                        op()?;
                    }
                    iris.record(&end)?;
                    samples.push(f64::from(start.elapsed_ms(&end)?) / launches as f64);
                }
                iris.barrier()?;
                let mut ok = true;
                for (r, &seed) in seeds.iter().enumerate() {
                    ok &= check(
                        iris,
                        out.local_ptr().cast::<f32x4>().add(r * nv as usize),
                        nv,
                        seed,
                    )?;
                }
                out_rows.push((kernel, size, moved, launches, samples, ok));
            }
        }
        Ok(out_rows)
    })?;
    let mut rows = Vec::new();
    for (k, (kernel, size, moved, launches, _, _)) in per_rank[0].iter().enumerate() {
        // Per sample, the slowest rank; then the median over samples.
        let repeats = per_rank[0][k].4.len();
        let mut worst: Vec<f64> = (0..repeats)
            .map(|s| per_rank.iter().map(|r| r[k].4[s]).fold(0.0, f64::max))
            .collect();
        let correct = per_rank.iter().all(|r| r[k].5);
        rows.push(Row {
            case: "all_gather".into(),
            kernel: (*kernel).into(),
            ranks,
            size_bytes: *size,
            bytes_moved: *moved,
            ms: median(&mut worst),
            ceiling: "memcpy_dtod".into(),
            ceiling_gbps: memcpy_gbps,
            launches: *launches,
            correct,
            extra: Vec::new(),
        });
    }
    Ok(rows)
}

// ----- ping-pong ----------------------------------------------------------------------------

/// Round-trip latency of a flag between two ranks (threads, each its own stream), at
/// system scope (the default for cross-rank flags) or device scope.
fn ping_pong_case(plan: &Plan, device_scope: bool) -> iris::Result<Row> {
    let (short, long) = plan.ping_rounds;
    let per_rank = World::threads(2).heap_bytes(16 * MIB).run(|iris| {
        let me = iris.rank() as u32;
        let flag = iris.symmetric::<u32>(64)?;
        let failed = iris.zeros::<u32>(1)?;
        let mut epoch = 0u32;
        let mut run = |rounds: u32| -> iris::Result<f64> {
            iris.barrier()?;
            let start = iris.record_event()?;
            if device_scope {
                ping_pong_device::launch(
                    iris,
                    (1, 1),
                    &flag,
                    rounds,
                    epoch,
                    me,
                    plan.spin_limit,
                    &failed,
                )?;
            } else {
                ping_pong::launch(
                    iris,
                    (1, 1),
                    &flag,
                    rounds,
                    epoch,
                    me,
                    plan.spin_limit,
                    &failed,
                )?;
            }
            let end = iris.record_event()?;
            let ms = f64::from(start.elapsed_ms(&end)?);
            epoch += 2 * rounds;
            Ok(ms)
        };
        for _ in 0..plan.warmup {
            run(short)?;
        }
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for _ in 0..plan.repeats.min(7) {
            a.push(run(short)?);
            b.push(run(long)?);
        }
        iris.barrier()?;
        Ok((median(&mut a), median(&mut b), failed.to_vec()?[0] == 0))
    })?;
    let (t_short, t_long, _) = per_rank[0];
    let ok = per_rank.iter().all(|r| r.2);
    let per_trip_us = (t_long - t_short) * 1e3 / f64::from(long - short);
    Ok(Row {
        case: "ping_pong".into(),
        kernel: if device_scope {
            "ping_pong_device (release/acquire, device scope)".into()
        } else {
            "ping_pong (release/acquire, system scope)".into()
        },
        ranks: 2,
        size_bytes: 4,
        ms: per_trip_us * 1e-3,
        launches: 1,
        correct: ok,
        extra: vec![
            ("us_per_round_trip".into(), per_trip_us),
            (
                "us_per_round_trip_long_only".into(),
                t_long * 1e3 / f64::from(long),
            ),
            ("rounds_short".into(), f64::from(short)),
            ("rounds_long".into(), f64::from(long)),
        ],
        ..Row::default()
    })
}

// ----- module load --------------------------------------------------------------------------

/// First launch (which loads the code object) minus a steady launch, host time including
/// the synchronize, for each kernel unit, in a fresh world.
fn module_load_case() -> iris::Result<Vec<Row>> {
    let rows = World::threads(1).heap_bytes(16 * MIB).run(|iris| {
        let n = 1024u64;
        let buf = iris.zeros::<f32x4>(n as usize)?;
        let buf_f32: DevicePtr<f32> = buf.device_ptr().cast();
        let sym = iris.symmetric::<f32>(4 * n as usize)?;
        let sym2 = iris.symmetric::<f32>(4 * n as usize)?;
        let flag = iris.symmetric::<u32>(64)?;
        let failed = iris.zeros::<u32>(1)?;
        let cfg = LaunchConfig::linear(4, BLOCK);
        // Warm the context with a kernel of another unit first.
        util::fill_hash::launch(iris, cfg, &buf, n, 1)?;
        iris.synchronize()?;
        type Op<'a> = Box<dyn Fn() -> iris::Result<()> + 'a>;
        let ops: [(&str, Op<'_>); 6] = [
            (
                "store_v4",
                Box::new(|| store_v4::launch(iris, cfg, &sym, n, 0, 3)) as Op<'_>,
            ),
            (
                "load_v4",
                Box::new(|| load_v4::launch(iris, cfg, &sym, &buf, n, 0)),
            ),
            (
                "copy_v4",
                Box::new(|| copy_v4::launch(iris, cfg, &sym, &sym2, n, 0, 0)),
            ),
            (
                "all_gather",
                Box::new(|| all_gather::launch(iris, cfg, &buf_f32, &sym, 4 * n, 0, 1)),
            ),
            (
                "all_gather_v4",
                Box::new(|| all_gather_v4::launch(iris, cfg, &buf, &sym, n, 0, 1)),
            ),
            (
                "ping_pong",
                Box::new(|| ping_pong::launch(iris, (1, 1), &flag, 0, 0, 0, 1, &failed)),
            ),
        ];
        let mut rows = Vec::new();
        for (name, op) in &ops {
            let t = Instant::now();
            op()?;
            iris.synchronize()?;
            let first = t.elapsed().as_secs_f64() * 1e3;
            let mut steady: Vec<f64> = Vec::new();
            for _ in 0..21 {
                let t = Instant::now();
                op()?;
                iris.synchronize()?;
                steady.push(t.elapsed().as_secs_f64() * 1e3);
            }
            let steady = median(&mut steady);
            rows.push(Row {
                case: "module_load".into(),
                kernel: (*name).into(),
                ranks: 1,
                ms: first - steady,
                launches: 1,
                correct: true,
                extra: vec![
                    ("first_launch_ms".into(), first),
                    ("steady_launch_ms".into(), steady),
                ],
                ..Row::default()
            });
        }
        Ok(rows)
    })?;
    Ok(rows.into_iter().next().unwrap_or_default())
}

// ----- output --------------------------------------------------------------------------------

fn json_str(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn json_num(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.6}")
    } else {
        "null".into()
    }
}

fn row_json(r: &Row) -> String {
    let mut s = format!(
        "{{\"case\": {}, \"kernel\": {}, \"ranks\": {}, \"size_bytes\": {}, \"bytes_moved\": {}, \"ms\": {}, \"launches\": {}, \"correct\": {}",
        json_str(&r.case),
        json_str(&r.kernel),
        r.ranks,
        r.size_bytes,
        json_num(r.bytes_moved),
        json_num(r.ms),
        r.launches,
        r.correct
    );
    if r.bytes_moved > 0.0 {
        let _ = write!(
            s,
            ", \"gbps\": {}, \"ceiling\": {}, \"ceiling_gbps\": {}, \"bound_ms\": {}, \"ratio\": {}",
            json_num(r.gbps()),
            json_str(&r.ceiling),
            json_num(r.ceiling_gbps),
            json_num(r.bound_ms()),
            json_num(r.ratio())
        );
    }
    for (k, v) in &r.extra {
        let _ = write!(s, ", {}: {}", json_str(k), json_num(*v));
    }
    s.push('}');
    s
}

fn human_bytes(b: usize) -> String {
    if b >= GIB && b % GIB == 0 {
        format!("{} GiB", b / GIB)
    } else if b >= MIB && b % MIB == 0 {
        format!("{} MiB", b / MIB)
    } else if b >= KIB && b % KIB == 0 {
        format!("{} KiB", b / KIB)
    } else {
        format!("{b} B")
    }
}

fn print_table(rows: &[Row]) {
    println!(
        "{:<11} {:<44} {:>5} {:>8} {:>11} {:>10} {:>12} {:>10} {:>7}  ok",
        "case", "kernel", "ranks", "size", "ms", "GB/s", "ceiling", "ceil GB/s", "ratio"
    );
    for r in rows {
        let (gbps, ceil, ratio) = if r.bytes_moved > 0.0 {
            (
                format!("{:.1}", r.gbps()),
                format!("{:.1}", r.ceiling_gbps),
                format!("{:.3}", r.ratio()),
            )
        } else {
            ("-".into(), "-".into(), "-".into())
        };
        let ms = if r.case == "ping_pong" {
            format!("{:.3} us", r.ms * 1e3)
        } else {
            format!("{:.4}", r.ms)
        };
        let mut kernel = r.kernel.clone();
        kernel.truncate(44);
        println!(
            "{:<11} {:<44} {:>5} {:>8} {:>11} {:>10} {:>12} {:>10} {:>7}  {}",
            r.case,
            kernel,
            r.ranks,
            if r.size_bytes > 0 {
                human_bytes(r.size_bytes)
            } else {
                "-".into()
            },
            ms,
            gbps,
            if r.ceiling.is_empty() {
                "-"
            } else {
                &r.ceiling
            },
            ceil,
            ratio,
            if r.correct { "yes" } else { "NO" }
        );
    }
}

fn dump_ptx(dir: &str) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let units: [&iris::abi::KernelUnit; 12] = [
        &store_v4::UNIT,
        &store_v4c::UNIT,
        &load_v4c::UNIT,
        &copy_v4c::UNIT,
        &all_gather_v4c::UNIT,
        &ping_pong_device::UNIT,
        &load_v4::UNIT,
        &copy_v4::UNIT,
        &all_gather::UNIT,
        &all_gather_v4::UNIT,
        &ping_pong::UNIT,
        &util::fill_hash::UNIT,
    ];
    for unit in units {
        for object in unit.code_objects.iter().filter(|o| o.target == "sm_90") {
            let name = unit.id.rsplit("::").next().unwrap_or(unit.id);
            let text = object.bytes.strip_suffix(b"\0").unwrap_or(object.bytes);
            std::fs::write(format!("{dir}/{name}.ptx"), text)?;
        }
    }
    Ok(())
}

fn main() -> std::process::ExitCode {
    let opts = match parse_options() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("gpu_bench: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    if let Some(dir) = &opts.dump_ptx {
        return match dump_ptx(dir) {
            Ok(()) => std::process::ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("gpu_bench: --dump-ptx {dir}: {e}");
                std::process::ExitCode::FAILURE
            }
        };
    }
    match run(&opts) {
        Ok(true) => std::process::ExitCode::SUCCESS,
        Ok(false) => {
            eprintln!("gpu_bench: a check failed (see the ok column)");
            std::process::ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("gpu_bench: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

fn run(opts: &Options) -> iris::Result<bool> {
    let probe = World::threads(1)
        .heap_bytes(MIB)
        .run(|iris| Ok(iris.device_info().clone()))?;
    let info = probe
        .into_iter()
        .next()
        .ok_or_else(|| iris::Error::InvalidConfig("no rank ran".into()))?;
    let plan = Plan::for_backend(info.backend, opts.max_gather);
    let wanted = |case: &str| {
        opts.only
            .as_ref()
            .is_none_or(|o| o.iter().any(|c| c == case))
    };
    eprintln!(
        "gpu_bench: {} ({}, {} multiprocessors, {:.0} GiB), grid-stride launches of {} blocks x {} threads",
        info.name,
        info.backend,
        info.multiprocessors,
        info.total_memory as f64 / GIB as f64,
        info.multiprocessors * BLOCKS_PER_SM,
        BLOCK
    );

    let path = opts
        .out
        .clone()
        .unwrap_or_else(|| match std::env::var("OUT") {
            Ok(dir) if !dir.is_empty() => format!("{dir}/bench-iris.json"),
            _ => "bench.json".into(),
        });
    let mut rows = Vec::new();
    let mut errors: Vec<String> = Vec::new();
    let t = Instant::now();
    // A case that fails is reported and skipped; the JSON is rewritten after every case,
    // so a run cut short keeps what it measured.
    let mut record = |rows: &mut Vec<Row>, name: &str, result: iris::Result<Vec<Row>>| {
        match result {
            Ok(r) => rows.extend(r),
            Err(e) => {
                eprintln!("gpu_bench: {name} failed: {e}");
                errors.push(format!("{name}: {e}"));
            }
        }
        eprintln!(
            "gpu_bench: {name} done ({:.1} s)",
            t.elapsed().as_secs_f64()
        );
        if let Err(e) = write_json(&path, &info, &plan, rows, &errors) {
            eprintln!("gpu_bench: {e}");
        }
    };
    // Module loads first, before anything else has loaded a code object in this process.
    if wanted("module_load") {
        record(&mut rows, "module loads", module_load_case());
    }
    if ["ceilings", "store", "load", "copy", "all_gather"]
        .iter()
        .any(|c| wanted(c))
    {
        record(&mut rows, "ceilings", ceilings(&plan));
    }
    let ceiling = |name: &str| {
        rows.iter()
            .find(|r| r.case == "ceiling" && r.kernel == name)
            .map_or(f64::NAN, Row::gbps)
    };
    let (memset_gbps, memcpy_gbps) = (ceiling("runtime memset"), ceiling("runtime memcpy_dtod"));
    eprintln!("gpu_bench: ceilings: memset {memset_gbps:.1} GB/s, copy {memcpy_gbps:.1} GB/s");
    if wanted("store") || wanted("load") || wanted("copy") {
        let result = two_rank_cases(&plan, memset_gbps, memcpy_gbps, &wanted);
        record(&mut rows, "two-rank cases", result);
    }
    if wanted("all_gather") {
        for &ranks in &plan.gather_ranks {
            let result = all_gather_case(&plan, ranks, memcpy_gbps);
            record(&mut rows, &format!("all-gather at {ranks} ranks"), result);
        }
    }
    if wanted("ping_pong") {
        let system = ping_pong_case(&plan, false).map(|r| vec![r]);
        record(&mut rows, "ping-pong", system);
        let device = ping_pong_case(&plan, true).map(|r| vec![r]);
        record(&mut rows, "ping-pong, device scope", device);
    }
    print_table(&rows);
    for e in &errors {
        println!("FAILED: {e}");
    }
    println!("JSON: {path}");
    Ok(errors.is_empty() && rows.iter().all(|r| r.correct))
}

/// Writes the rows measured so far (and the cases that failed) as JSON.
fn write_json(
    path: &str,
    info: &iris::DeviceInfo,
    plan: &Plan,
    rows: &[Row],
    errors: &[String],
) -> Result<(), String> {
    let mut json = String::from("{\n");
    let _ = writeln!(
        json,
        "  \"device\": {{\"name\": {}, \"backend\": {}, \"target\": {}, \"multiprocessors\": {}, \"total_memory\": {}}},",
        json_str(&info.name),
        json_str(info.backend.name()),
        json_str(&info.target),
        info.multiprocessors,
        info.total_memory
    );
    let _ = writeln!(
        json,
        "  \"config\": {{\"block\": {BLOCK}, \"blocks_per_sm\": {BLOCKS_PER_SM}, \"warmup\": {}, \"repeats\": {}}},",
        plan.warmup, plan.repeats
    );
    let errs: Vec<String> = errors.iter().map(|e| json_str(e)).collect();
    let _ = writeln!(json, "  \"errors\": [{}],", errs.join(", "));
    json.push_str("  \"rows\": [\n");
    for (i, r) in rows.iter().enumerate() {
        let sep = if i + 1 < rows.len() { "," } else { "" };
        let _ = writeln!(json, "    {}{sep}", row_json(r));
    }
    json.push_str("  ]\n}\n");
    std::fs::write(path, json).map_err(|e| format!("writing {path}: {e}"))
}
