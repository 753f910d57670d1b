//! Running one kernel launch on the host: blocks spread over worker threads, one call of
//! the kernel entry per GPU thread; a block whose threads must run together runs them as
//! fibers on its worker's thread.

use core::ffi::c_void;
use std::alloc::Layout;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};

use iris_device::abi::{CpuKernelEntry, CpuLaunchContext};

use super::barrier::no_barrier;
use super::clock::{now_ns, sleep_ns};
use super::fibers::FiberRunner;
use super::warp::{lone_ballot, lone_mma, lone_shuffle};

/// One launch, ready to run.
pub(crate) struct Grid<'a> {
    /// The kernel.
    pub entry: CpuKernelEntry,
    /// Blocks per grid.
    pub grid: [u32; 3],
    /// Threads per block.
    pub block: [u32; 3],
    /// Shared memory per block, bytes.
    pub shared_bytes: usize,
    /// Whether a block's threads must run concurrently (the kernel calls `sync_threads`
    /// or a warp operation).
    pub concurrent_block: bool,
    /// One pointer per argument slot.
    pub args: &'a [*mut c_void],
}

// SAFETY: the argument slots are only read while the grid runs, and outlive it; the
// rest of a `Grid` is plain data and a function pointer.
unsafe impl Sync for Grid<'_> {}

impl Grid<'_> {
    /// Runs every block to completion.
    pub(crate) fn run(&self, parallelism: usize) -> Result<(), String> {
        let total = self.grid.iter().map(|&d| u64::from(d)).product::<u64>();
        let threads = self.block.iter().map(|&d| d as usize).product::<usize>();
        if total == 0 || threads == 0 {
            return Ok(());
        }
        if self.concurrent_block {
            self.run_fibers(total, threads, parallelism)
        } else {
            self.run_loops(total, parallelism)
        }
    }

    fn context(&self, shared: *mut u8) -> CpuLaunchContext {
        CpuLaunchContext {
            thread_idx: [0; 3],
            block_idx: [0; 3],
            block_dim: self.block,
            grid_dim: self.grid,
            shared,
            barrier: no_barrier,
            barrier_state: std::ptr::null_mut(),
            now_ns,
            sleep_ns,
            warp: std::ptr::null_mut(),
            warp_shuffle: lone_shuffle,
            warp_ballot: lone_ballot,
            warp_mma: lone_mma,
        }
    }

    /// Blocks whose threads may run one after another: each worker runs whole blocks.
    fn run_loops(&self, total: u64, parallelism: usize) -> Result<(), String> {
        let next = AtomicU64::new(0);
        let workers = parallelism
            .max(1)
            .min(usize::try_from(total).unwrap_or(usize::MAX));
        let work = || {
            let Some(shared) = SharedMemory::new(self.shared_bytes) else {
                return false;
            };
            let mut ctx = self.context(shared.ptr());
            loop {
                let b = next.fetch_add(1, Ordering::Relaxed);
                if b >= total {
                    break;
                }
                shared.zero();
                ctx.block_idx = unflatten(b, self.grid);
                for z in 0..self.block[2] {
                    for y in 0..self.block[1] {
                        for x in 0..self.block[0] {
                            ctx.thread_idx = [x, y, z];
                            // SAFETY: the launch was validated against the kernel's spec
                            // by the caller of `Device::launch`.
                            unsafe { (self.entry)(&ctx, self.args.as_ptr()) };
                        }
                    }
                }
            }
            true
        };
        std::thread::scope(|s| {
            for _ in 1..workers {
                if let Err(err) = std::thread::Builder::new()
                    .name("iris-cpu-block".into())
                    .spawn_scoped(s, work)
                {
                    tracing::debug!(%err, "fewer CPU block workers");
                    break;
                }
            }
            if work() {
                Ok(())
            } else {
                Err(format!(
                    "cannot allocate {} bytes of shared memory",
                    self.shared_bytes
                ))
            }
        })
    }

    /// Blocks whose threads must run together: each worker runs whole blocks, a block's
    /// GPU threads as fibers on the worker's OS thread (see `fibers.rs`).
    fn run_fibers(&self, total: u64, threads: usize, parallelism: usize) -> Result<(), String> {
        let next = AtomicU64::new(0);
        let workers = parallelism
            .max(1)
            .min(usize::try_from(total).unwrap_or(usize::MAX));
        let work = || -> Result<(), String> {
            let shared = SharedMemory::new(self.shared_bytes).ok_or_else(|| {
                format!(
                    "cannot allocate {} bytes of shared memory",
                    self.shared_bytes
                )
            })?;
            let mut runner = FiberRunner::new(threads)?;
            let mut ctx = self.context(shared.ptr());
            loop {
                let b = next.fetch_add(1, Ordering::Relaxed);
                if b >= total {
                    return Ok(());
                }
                shared.zero();
                ctx.block_idx = unflatten(b, self.grid);
                // SAFETY: the launch was validated against the kernel's spec by the
                // caller of `Device::launch`; the shared memory is this worker's.
                unsafe { runner.run_block(self.entry, &ctx, self.args.as_ptr()) }?;
            }
        };
        std::thread::scope(|s| {
            let mut helpers = Vec::new();
            for _ in 1..workers {
                match std::thread::Builder::new()
                    .name("iris-cpu-block".into())
                    .spawn_scoped(s, work)
                {
                    Ok(h) => helpers.push(h),
                    Err(err) => {
                        tracing::debug!(%err, "fewer CPU block workers");
                        break;
                    }
                }
            }
            let mut result = work();
            for h in helpers {
                let outcome = h
                    .join()
                    .unwrap_or_else(|_| Err("a CPU block worker panicked".into()));
                result = result.and(outcome);
            }
            result
        })
    }
}

/// One block's shared memory: zeroed, 16-byte aligned.
struct SharedMemory {
    ptr: NonNull<u8>,
    layout: Layout,
}

// SAFETY: plain memory; who writes it when is governed by the block's threads and barrier.
unsafe impl Send for SharedMemory {}
// SAFETY: as above.
unsafe impl Sync for SharedMemory {}

impl SharedMemory {
    fn new(bytes: usize) -> Option<Self> {
        let layout = Layout::from_size_align(bytes.max(16), 16).ok()?;
        // SAFETY: non-zero size.
        let ptr = NonNull::new(unsafe { std::alloc::alloc_zeroed(layout) })?;
        Some(Self { ptr, layout })
    }

    fn ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// Zeroes it; only called while no thread of the block runs.
    fn zero(&self) {
        // SAFETY: `layout.size()` bytes are allocated at `ptr`.
        unsafe { std::ptr::write_bytes(self.ptr.as_ptr(), 0, self.layout.size()) };
    }
}

impl Drop for SharedMemory {
    fn drop(&mut self) {
        // SAFETY: allocated with this layout in `new`.
        unsafe { std::alloc::dealloc(self.ptr.as_ptr(), self.layout) };
    }
}

/// Block `index` of a row-major (x fastest) grid.
fn unflatten(index: u64, grid: [u32; 3]) -> [u32; 3] {
    let (gx, gy) = (u64::from(grid[0]), u64::from(grid[1]));
    [
        (index % gx) as u32,
        ((index / gx) % gy) as u32,
        (index / (gx * gy)) as u32,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unflattens_x_fastest() {
        assert_eq!(unflatten(0, [2, 3, 4]), [0, 0, 0]);
        assert_eq!(unflatten(1, [2, 3, 4]), [1, 0, 0]);
        assert_eq!(unflatten(2, [2, 3, 4]), [0, 1, 0]);
        assert_eq!(unflatten(6, [2, 3, 4]), [0, 0, 1]);
        assert_eq!(unflatten(23, [2, 3, 4]), [1, 2, 3]);
    }
}
