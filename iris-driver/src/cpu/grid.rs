//! Running one kernel launch on the host: blocks spread over worker threads, one call of
//! the kernel entry per GPU thread.

use core::ffi::c_void;
use std::alloc::Layout;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Barrier, Condvar, Mutex};

use iris_device::abi::{CpuKernelEntry, CpuLaunchContext};

use super::barrier::{block_barrier, no_barrier, BlockBarrier};
use super::clock::{now_ns, sleep_ns};
use super::warp::{lone_ballot, lone_shuffle, warp_ballot, warp_shuffle, Warp, WarpSeat};
use crate::sync::lock;

/// Stack size of the threads that run a block's GPU threads concurrently.
const TEAM_STACK_BYTES: usize = 512 * 1024;

/// At most this many OS threads run blocks of a barrier kernel at once.
const MAX_TEAM_THREADS: usize = 4096;

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
            self.run_teams(total, threads, parallelism)
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

    /// Blocks whose threads run concurrently: teams of one OS thread per GPU thread, each
    /// team running whole blocks one after another.
    fn run_teams(&self, total: u64, threads: usize, parallelism: usize) -> Result<(), String> {
        let teams = parallelism
            .max(1)
            .min((MAX_TEAM_THREADS / threads).max(1))
            .min(usize::try_from(total).unwrap_or(usize::MAX));
        let next = AtomicU64::new(0);
        let gate = Gate::default();
        let mut team_state = Vec::with_capacity(teams);
        for _ in 0..teams {
            let shared = SharedMemory::new(self.shared_bytes).ok_or_else(|| {
                format!(
                    "cannot allocate {} bytes of shared memory",
                    self.shared_bytes
                )
            })?;
            team_state.push(Team {
                shared,
                warps: Warp::for_block(threads),
                barrier: BlockBarrier::new(threads),
                sync: Barrier::new(threads),
                current: AtomicU64::new(0),
            });
        }
        std::thread::scope(|s| {
            let mut spawned = Ok(());
            'spawn: for team in &team_state {
                for t in 0..threads {
                    let (gate, next) = (&gate, &next);
                    let body = move || {
                        if gate.wait() {
                            self.team_thread(team, t, total, next);
                        }
                    };
                    if let Err(err) = std::thread::Builder::new()
                        .name("iris-cpu-thread".into())
                        .stack_size(TEAM_STACK_BYTES)
                        .spawn_scoped(s, body)
                    {
                        spawned = Err(format!(
                            "cannot start the {threads} threads of a block (the kernel uses the block barrier): {err}"
                        ));
                        break 'spawn;
                    }
                }
            }
            gate.open(spawned.is_ok());
            spawned
        })
    }

    fn team_thread(&self, team: &Team, t: usize, total: u64, next: &AtomicU64) {
        let mut ctx = self.context(team.shared.ptr());
        ctx.barrier = block_barrier;
        ctx.barrier_state = &team.barrier as *const BlockBarrier as *mut c_void;
        let warp = &team.warps[t / super::warp::WARP_LANES];
        let seat = WarpSeat {
            warp,
            lane: t % super::warp::WARP_LANES,
        };
        ctx.warp = &seat as *const WarpSeat as *mut c_void;
        ctx.warp_shuffle = warp_shuffle;
        ctx.warp_ballot = warp_ballot;
        let [bx, by, _] = self.block.map(|d| d as usize);
        ctx.thread_idx = [
            (t % bx) as u32,
            ((t / bx) % by) as u32,
            (t / (bx * by)) as u32,
        ];
        let threads = self.block.iter().map(|&d| d as usize).product::<usize>();
        loop {
            if t == 0 {
                let b = next.fetch_add(1, Ordering::Relaxed);
                team.current.store(b, Ordering::Relaxed);
                if b < total {
                    team.shared.zero();
                    team.barrier.reset(threads);
                    Warp::reset(&team.warps, threads);
                }
            }
            team.sync.wait();
            let b = team.current.load(Ordering::Relaxed);
            if b >= total {
                break;
            }
            ctx.block_idx = unflatten(b, self.grid);
            // SAFETY: the launch was validated against the kernel's spec by the caller of
            // `Device::launch`; the barrier and shared memory outlive the call.
            unsafe { (self.entry)(&ctx, self.args.as_ptr()) };
            team.barrier.leave();
            warp.leave();
            team.sync.wait();
        }
    }
}

/// The threads running one block at a time.
struct Team {
    shared: SharedMemory,
    warps: Vec<Warp>,
    barrier: BlockBarrier,
    sync: Barrier,
    current: AtomicU64,
}

/// Holds spawned threads until all of a launch's threads exist (or tells them to quit).
#[derive(Default)]
struct Gate {
    state: Mutex<Option<bool>>,
    cv: Condvar,
}

impl Gate {
    fn open(&self, go: bool) {
        *lock(&self.state) = Some(go);
        self.cv.notify_all();
    }

    fn wait(&self) -> bool {
        let mut s = lock(&self.state);
        loop {
            if let Some(go) = *s {
                return go;
            }
            s = match self.cv.wait(s) {
                Ok(g) => g,
                Err(poisoned) => poisoned.into_inner(),
            };
        }
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
