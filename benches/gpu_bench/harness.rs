//! What every case shares: sizes, the plan for a backend, result rows, timing with events,
//! the runtime's own copies and sets, poisoning and checking on the device.

use iris::driver::{self as backend, Device, MemoryKind, Stream};
use iris::prelude::*;
use iris::{BackendKind, DevicePtr, Iris, LaunchConfig};
use rand::Rng;
use std::sync::Arc;
use std::time::Duration;

use crate::kernels::*;

pub(crate) const KIB: usize = 1 << 10;
pub(crate) const MIB: usize = 1 << 20;
pub(crate) const GIB: usize = 1 << 30;
/// Threads per block of the grid-stride kernels.
pub(crate) const BLOCK: u32 = 256;
/// Resident blocks per multiprocessor the grid-stride kernels are launched with.
pub(crate) const BLOCKS_PER_SM: u32 = 8;

/// Sizes and repeat counts for the backend found.
pub(crate) struct Plan {
    pub(crate) gpu: bool,
    pub(crate) bw_bytes: usize,
    pub(crate) gather_sizes: Vec<usize>,
    pub(crate) gather_ranks: Vec<usize>,
    pub(crate) warmup: usize,
    pub(crate) repeats: usize,
    pub(crate) ping_rounds: (u32, u32),
    pub(crate) spin_limit: u32,
}

impl Plan {
    pub(crate) fn for_backend(kind: BackendKind, max_gather: Option<usize>) -> Self {
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
pub(crate) struct Row {
    pub(crate) case: String,
    pub(crate) kernel: String,
    pub(crate) ranks: usize,
    /// Bytes per rank (the message size).
    pub(crate) size_bytes: usize,
    /// Bytes read plus written through device memory, all ranks together.
    pub(crate) bytes_moved: f64,
    /// Median device milliseconds of one operation.
    pub(crate) ms: f64,
    /// The ceiling it is compared with, and that ceiling's bandwidth (GB/s).
    pub(crate) ceiling: String,
    pub(crate) ceiling_gbps: f64,
    /// Launches per timed sample (back to back).
    pub(crate) launches: usize,
    pub(crate) correct: bool,
    pub(crate) extra: Vec<(String, f64)>,
}

impl Row {
    pub(crate) fn gbps(&self) -> f64 {
        self.bytes_moved / (self.ms * 1e-3) / 1e9
    }
    pub(crate) fn bound_ms(&self) -> f64 {
        self.bytes_moved / (self.ceiling_gbps * 1e9) * 1e3
    }
    pub(crate) fn ratio(&self) -> f64 {
        self.bound_ms() / self.ms
    }
}

pub(crate) fn median(v: &mut [f64]) -> f64 {
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

pub(crate) fn random_seed() -> u32 {
    rand::rng().random::<u32>() | 1
}

/// Grid of a grid-stride launch over `n` items: enough blocks to fill every
/// multiprocessor, no more than the items need.
pub(crate) fn grid_for(iris: &Iris, n: u64) -> LaunchConfig {
    let full = iris.device_info().multiprocessors.max(1) * BLOCKS_PER_SM;
    let needed = n.div_ceil(u64::from(BLOCK)).max(1);
    LaunchConfig::linear(needed.min(u64::from(full)) as u32, BLOCK)
}

/// Grid of a chunked launch over `n` vectors: one block per chunk of `UNROLL * BLOCK`
/// vectors (no grid-stride), as Triton launches one program per block of elements.
pub(crate) fn chunk_grid(n: u64) -> LaunchConfig {
    let blocks = n.div_ceil(UNROLL * u64::from(BLOCK)).max(1);
    LaunchConfig::linear(u32::try_from(blocks).unwrap_or(u32::MAX), BLOCK)
}

/// Median device milliseconds of `op`, timed with events on the rank's stream after
/// `warmup` untimed calls; each sample runs `op` `launches` times back to back.
pub(crate) fn time_events(
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
pub(crate) struct Runtime {
    pub(crate) device: Arc<dyn Device>,
    pub(crate) stream: Box<dyn Stream>,
    pub(crate) timeout: Duration,
    pub(crate) a: u64,
    pub(crate) b: u64,
}

impl Runtime {
    pub(crate) fn new(iris: &Iris, bytes: usize) -> iris::Result<Self> {
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
    pub(crate) fn time(
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
pub(crate) fn check(iris: &Iris, data: DevicePtr<f32x4>, n: u64, seed: u32) -> iris::Result<bool> {
    let bad = iris.zeros::<u32>(1)?;
    util::check_hash::launch(iris, grid_for(iris, n), &data, n, seed, &bad)?;
    Ok(bad.to_vec()?[0] == 0)
}

/// Overwrites `n` vectors at `data` with values no check accepts for any other seed.
pub(crate) fn poison(iris: &Iris, data: &DevicePtr<f32x4>, n: u64, seed: u32) -> iris::Result<()> {
    util::fill_hash::launch(iris, grid_for(iris, n), data, n, !seed)?;
    iris.synchronize()
}

// ----- ceilings ----------------------------------------------------------------------------
