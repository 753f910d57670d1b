//! A block whose threads must run together (it meets at `sync_threads` or exchanges values
//! within a warp) run as fibers on one OS thread: each GPU thread is a stackful coroutine
//! (corosensei), and the block's barriers, warp exchanges and device-side sleeps switch
//! between them, as HIP-CPU runs GPU threads as fibers.
//!
//! The callbacks the kernel calls (`CpuLaunchContext::barrier`, `warp_shuffle`,
//! `warp_ballot`, `sleep_ns`) find the running fiber through a thread-local pointer the
//! scheduler sets before resuming it. A barrier counts arrivals; the last to arrive opens
//! it and runs on, the others yield until they see it open. A warp exchange writes the
//! lane's value, meets the warp's lanes at a barrier, reads, and meets them again. A fiber
//! that sleeps (a device wait backing off) yields; when a whole round of the block's
//! fibers made no progress and one of them asked to sleep, the OS thread sleeps that long,
//! so that other blocks and ranks get the core. A fiber that returns leaves every barrier
//! it could still be waited at (a short last warp, threads that exit early).

use core::ffi::c_void;
use std::cell::Cell;
use std::sync::Mutex;

use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult, Yielder};
use iris_device::abi::{CpuKernelEntry, CpuLaunchContext};

use super::warp::WARP_LANES;
use crate::sync::lock;

/// Stack of one GPU thread (the OS teams used the same).
const FIBER_STACK_BYTES: usize = 512 * 1024;

/// Stacks kept for the next launch (making one maps memory).
static STACK_POOL: Mutex<Vec<DefaultStack>> = Mutex::new(Vec::new());

/// At most this many stacks are kept between launches.
const POOL_MAX: usize = 4096;

thread_local! {
    /// The fiber running on this OS thread, while one runs.
    static CURRENT: Cell<*const Seat> = const { Cell::new(std::ptr::null()) };
}

/// A barrier of fibers on one OS thread.
#[derive(Default)]
struct FiberBarrier {
    participants: Cell<usize>,
    arrived: Cell<usize>,
    generation: Cell<u64>,
}

impl FiberBarrier {
    fn reset(&self, participants: usize) {
        self.participants.set(participants);
        self.arrived.set(0);
    }

    /// Arrives, and yields until every participant has.
    fn wait(&self, seat: &Seat, at: Waits) {
        self.arrived.set(self.arrived.get() + 1);
        if self.arrived.get() >= self.participants.get() {
            self.open(seat.block());
            return;
        }
        let generation = self.generation.get();
        seat.waits.set(at);
        while self.generation.get() == generation {
            seat.suspend();
        }
        seat.waits.set(Waits::Nowhere);
    }

    /// A participant that returned: it no longer counts.
    fn leave(&self, block: &BlockState) {
        self.participants
            .set(self.participants.get().saturating_sub(1));
        if self.arrived.get() > 0 && self.arrived.get() >= self.participants.get() {
            self.open(block);
        }
    }

    fn open(&self, block: &BlockState) {
        self.arrived.set(0);
        self.generation.set(self.generation.get().wrapping_add(1));
        block.progress.set(true);
    }
}

/// One warp's exchange slots and barrier.
#[derive(Default)]
struct FiberWarp {
    slots: [Cell<u64>; WARP_LANES],
    /// Each lane's A and B fragments of an `mma`.
    mma_a: [Cell<[f32; 8]>; WARP_LANES],
    mma_b: [Cell<[f32; 8]>; WARP_LANES],
    lanes: Cell<usize>,
    barrier: FiberBarrier,
}

/// What the fibers of the block being run share.
#[derive(Default)]
struct BlockState {
    barrier: FiberBarrier,
    warps: Vec<FiberWarp>,
    /// Set when a barrier opened or a fiber returned during the current round.
    progress: Cell<bool>,
    /// The shortest sleep a fiber asked for during the current round (0: none).
    sleep_ns: Cell<u64>,
}

/// One GPU thread's place: its block, warp and lane, its coroutine's yielder, and where it
/// waits.
struct Seat {
    block: *const BlockState,
    warp: usize,
    lane: usize,
    yielder: Cell<*const Yielder<(), ()>>,
    waits: Cell<Waits>,
}

/// Where a fiber is suspended.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Waits {
    /// Running, sleeping or done.
    Nowhere,
    /// At `sync_threads`.
    Block,
    /// At a warp operation (its warp's barrier).
    Warp,
}

impl Seat {
    fn block(&self) -> &BlockState {
        // SAFETY: the block state outlives every fiber of the block (`run_block`).
        unsafe { &*self.block }
    }

    /// Gives the OS thread back to the scheduler (a barrier not yet open, or a sleep: the
    /// block's state says which).
    fn suspend(&self) {
        let yielder = self.yielder.get();
        // SAFETY: set by the fiber's body before the kernel runs, and valid while it runs
        // (this is called from the kernel, on the fiber's stack).
        unsafe { (*yielder).suspend(()) };
    }
}

/// The seat of the fiber running on this thread.
fn current<'a>() -> Option<&'a Seat> {
    let seat = CURRENT.with(Cell::get);
    // SAFETY: set by the scheduler to a seat that outlives the resumed fiber, and reset
    // to null after it yields or returns.
    unsafe { seat.as_ref() }
}

/// `sync_threads` for a fiber.
pub(crate) unsafe extern "C" fn fiber_barrier(_state: *mut c_void) {
    if let Some(seat) = current() {
        seat.block().barrier.wait(seat, Waits::Block);
    }
}

/// A warp shuffle among fibers.
pub(crate) unsafe extern "C" fn fiber_shuffle(_seat: *mut c_void, value: u64, src: u32) -> u64 {
    let Some(seat) = current() else {
        return value;
    };
    let warp = &seat.block().warps[seat.warp];
    warp.slots[seat.lane].set(value);
    warp.barrier.wait(seat, Waits::Warp);
    let src = src as usize;
    let got = if src < warp.lanes.get() {
        warp.slots[src].get()
    } else {
        value
    };
    warp.barrier.wait(seat, Waits::Warp);
    got
}

/// A warp ballot among fibers.
pub(crate) unsafe extern "C" fn fiber_ballot(_seat: *mut c_void, predicate: u32) -> u64 {
    let Some(seat) = current() else {
        return u64::from(predicate != 0);
    };
    let warp = &seat.block().warps[seat.warp];
    warp.slots[seat.lane].set(u64::from(predicate != 0));
    warp.barrier.wait(seat, Waits::Warp);
    let bits = (0..warp.lanes.get()).fold(0u64, |bits, i| bits | ((warp.slots[i].get() & 1) << i));
    warp.barrier.wait(seat, Waits::Warp);
    bits
}

/// A warp `mma` among fibers: the lanes leave their fragments, meet, each computes its part
/// of the tile from all of them, and they meet again before the fragments are reused.
pub(crate) unsafe extern "C" fn fiber_mma(
    seat: *mut c_void,
    a: *const f32,
    b: *const f32,
    c: *mut f32,
) {
    let Some(fiber) = current() else {
        // SAFETY: forwarded.
        return unsafe { super::warp::lone_mma(seat, a, b, c) };
    };
    let warp = &fiber.block().warps[fiber.warp];
    // SAFETY: the kernel passes 8 `f32` at each (the ABI).
    let (a, b, c) = unsafe {
        (
            *(a as *const [f32; 8]),
            *(b as *const [f32; 8]),
            &mut *(c as *mut [f32; 8]),
        )
    };
    warp.mma_a[fiber.lane].set(a);
    warp.mma_b[fiber.lane].set(b);
    warp.barrier.wait(fiber, Waits::Warp);
    let lanes = warp.lanes.get();
    let get = |side: &[Cell<[f32; 8]>; WARP_LANES], l: usize| {
        if l < lanes {
            side[l].get()
        } else {
            [0.0; 8]
        }
    };
    super::warp::mma_lane(
        fiber.lane,
        |l| get(&warp.mma_a, l),
        |l| get(&warp.mma_b, l),
        c,
    );
    warp.barrier.wait(fiber, Waits::Warp);
}

/// `nanosleep` for a fiber: yields (the scheduler sleeps the OS thread when no fiber of
/// the block can move); elsewhere the OS thread sleeps.
pub(crate) unsafe extern "C" fn fiber_sleep(ns: u64) {
    match current() {
        Some(seat) => {
            let block = seat.block();
            let asked = block.sleep_ns.get();
            let ns = ns.max(1);
            block
                .sleep_ns
                .set(if asked == 0 { ns } else { asked.min(ns) });
            seat.suspend();
        }
        // SAFETY: a plain sleep.
        None => unsafe { super::clock::sleep_ns(ns) },
    }
}

/// Runs blocks of `threads` fibers each, one block at a time, on the calling OS thread.
pub(crate) struct FiberRunner {
    threads: usize,
    stacks: Vec<DefaultStack>,
    seats: Vec<Seat>,
    contexts: Vec<CpuLaunchContext>,
    state: Box<BlockState>,
}

impl FiberRunner {
    /// A runner for blocks of `threads` threads, taking stacks from the pool.
    pub(crate) fn new(threads: usize) -> Result<Self, String> {
        let mut stacks = {
            let mut pool = lock(&STACK_POOL);
            let keep = pool.len().saturating_sub(threads);
            pool.split_off(keep)
        };
        while stacks.len() < threads {
            let stack = DefaultStack::new(FIBER_STACK_BYTES).map_err(|e| {
                format!("cannot map the stacks of a block's {threads} threads: {e}")
            })?;
            stacks.push(stack);
        }
        let mut state = Box::<BlockState>::default();
        state.warps = (0..threads.div_ceil(WARP_LANES))
            .map(|_| FiberWarp::default())
            .collect();
        let block: *const BlockState = &*state;
        let seats = (0..threads)
            .map(|t| Seat {
                block,
                warp: t / WARP_LANES,
                lane: t % WARP_LANES,
                yielder: Cell::new(std::ptr::null()),
                waits: Cell::new(Waits::Nowhere),
            })
            .collect();
        Ok(Self {
            threads,
            stacks,
            seats,
            contexts: Vec::with_capacity(threads),
            state,
        })
    }

    /// Runs one block: every thread's call of `entry` with its context made from
    /// `template` (its `thread_idx` set), to completion.
    ///
    /// # Safety
    /// `entry` is a kernel entry of the CPU ABI, `args` match its parameters and outlive
    /// the call, and `template`'s shared memory belongs to this block alone.
    pub(crate) unsafe fn run_block(
        &mut self,
        entry: CpuKernelEntry,
        template: &CpuLaunchContext,
        args: *const *mut c_void,
    ) -> Result<(), String> {
        let threads = self.threads;
        let state = &*self.state;
        state.barrier.reset(threads);
        state.progress.set(false);
        state.sleep_ns.set(0);
        for (w, warp) in state.warps.iter().enumerate() {
            let lanes = (threads - w * WARP_LANES).min(WARP_LANES);
            warp.lanes.set(lanes);
            warp.barrier.reset(lanes);
        }
        let [bx, by, _] = template.block_dim.map(|d| d as usize);
        self.contexts.clear();
        for t in 0..threads {
            self.contexts.push(CpuLaunchContext {
                thread_idx: [
                    (t % bx) as u32,
                    ((t / bx) % by) as u32,
                    (t / (bx * by)) as u32,
                ],
                barrier: fiber_barrier,
                barrier_state: std::ptr::null_mut(),
                warp: std::ptr::null_mut(),
                warp_shuffle: fiber_shuffle,
                warp_ballot: fiber_ballot,
                warp_mma: fiber_mma,
                sleep_ns: fiber_sleep,
                ..*template
            });
        }
        let mut fibers: Vec<Option<Coroutine<(), (), (), DefaultStack>>> = Vec::new();
        for t in 0..threads {
            let stack = match self.stacks.pop() {
                Some(stack) => stack,
                None => DefaultStack::new(FIBER_STACK_BYTES)
                    .map_err(|e| format!("cannot map a GPU thread's stack: {e}"))?,
            };
            let seat: *const Seat = &self.seats[t];
            let ctx: *const CpuLaunchContext = &self.contexts[t];
            fibers.push(Some(Coroutine::with_stack(
                stack,
                move |yielder: &Yielder<(), ()>, ()| {
                    // SAFETY: the seat and the context outlive the fiber (this call).
                    unsafe { (*seat).yielder.set(yielder) };
                    // SAFETY: the caller's promise; the context is this thread's.
                    unsafe { entry(ctx, args) };
                },
            )));
        }
        let mut live = threads;
        while live > 0 {
            state.progress.set(false);
            state.sleep_ns.set(0);
            for (t, slot) in fibers.iter_mut().enumerate() {
                let Some(fiber) = slot else { continue };
                CURRENT.with(|c| c.set(&self.seats[t]));
                let result = fiber.resume(());
                CURRENT.with(|c| c.set(std::ptr::null()));
                if let CoroutineResult::Return(()) = result {
                    if let Some(done) = slot.take() {
                        self.stacks.push(done.into_stack());
                    }
                    live -= 1;
                    state.progress.set(true);
                    state.barrier.leave(state);
                    state.warps[self.seats[t].warp].barrier.leave(state);
                }
            }
            let sleep = state.sleep_ns.get();
            if live > 0 && !state.progress.get() {
                if sleep == 0 {
                    // Every live fiber waits at a barrier that cannot open: the block
                    // would wait forever. The suspended fibers are left as they are (their
                    // frames cannot be unwound), with their stacks.
                    let report = self.deadlock(&fibers);
                    std::mem::forget(fibers);
                    return Err(report);
                }
                std::thread::sleep(std::time::Duration::from_nanos(sleep));
            }
        }
        Ok(())
    }

    /// What the block's live fibers wait at, when none can go on.
    fn deadlock(&self, fibers: &[Option<Coroutine<(), (), (), DefaultStack>>]) -> String {
        let mut at_block = Vec::new();
        let mut at_warp = Vec::new();
        for (t, fiber) in fibers.iter().enumerate() {
            if fiber.is_none() {
                continue;
            }
            match self.seats[t].waits.get() {
                Waits::Block => at_block.push(t),
                Waits::Warp => at_warp.push(t),
                Waits::Nowhere => {}
            }
        }
        format!(
            "the block's threads wait for each other forever: {} at `sync_threads`, {} at a warp operation (a warp operation or a barrier inside a branch that not every thread of the warp or block takes)",
            describe_threads(&at_block),
            describe_threads(&at_warp)
        )
    }
}

/// `threads 0..15, 32` for a sorted list of thread indices, `none` for an empty one.
fn describe_threads(threads: &[usize]) -> String {
    if threads.is_empty() {
        return "no thread".into();
    }
    let mut parts = Vec::new();
    let mut i = 0;
    while i < threads.len() {
        let start = threads[i];
        while i + 1 < threads.len() && threads[i + 1] == threads[i] + 1 {
            i += 1;
        }
        parts.push(if threads[i] == start {
            start.to_string()
        } else {
            format!("{start}..={}", threads[i])
        });
        i += 1;
    }
    format!("threads {}", parts.join(", "))
}

impl Drop for FiberRunner {
    fn drop(&mut self) {
        let mut pool = lock(&STACK_POOL);
        let room = POOL_MAX.saturating_sub(pool.len());
        pool.extend(self.stacks.drain(..).take(room));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A context for blocks of `threads` threads (x only).
    fn template(threads: u32) -> CpuLaunchContext {
        CpuLaunchContext {
            thread_idx: [0; 3],
            block_idx: [0; 3],
            block_dim: [threads, 1, 1],
            grid_dim: [1, 1, 1],
            shared: std::ptr::null_mut(),
            barrier: fiber_barrier,
            barrier_state: std::ptr::null_mut(),
            now_ns: super::super::clock::now_ns,
            sleep_ns: fiber_sleep,
            warp: std::ptr::null_mut(),
            warp_shuffle: fiber_shuffle,
            warp_ballot: fiber_ballot,
            warp_mma: fiber_mma,
        }
    }

    /// Each thread sleeps, meets the block, takes lane + 1's value and votes; writes both.
    unsafe extern "C" fn exchange(ctx: *const CpuLaunchContext, args: *const *mut c_void) {
        // SAFETY: the runner passes a live context and the test's one argument slot.
        unsafe {
            let ctx = &*ctx;
            let out = *(*args as *const *mut u64);
            let t = ctx.thread_idx[0] as usize;
            (ctx.sleep_ns)(1000);
            (ctx.barrier)(ctx.barrier_state);
            let lane = (t % WARP_LANES) as u32;
            let down = (ctx.warp_shuffle)(ctx.warp, t as u64 * 10, lane + 1);
            let ballot = (ctx.warp_ballot)(ctx.warp, u32::from(t % 3 == 0));
            *out.add(2 * t) = down;
            *out.add(2 * t + 1) = ballot;
        }
    }

    /// Thread 3 returns at once; the others meet twice and count.
    unsafe extern "C" fn early_exit(ctx: *const CpuLaunchContext, args: *const *mut c_void) {
        // SAFETY: as above.
        unsafe {
            let ctx = &*ctx;
            let out = *(*args as *const *mut u64);
            if ctx.thread_idx[0] == 3 {
                return;
            }
            (ctx.barrier)(ctx.barrier_state);
            *out += 1;
            (ctx.barrier)(ctx.barrier_state);
            *out.add(1) = *out;
        }
    }

    #[test]
    fn a_block_of_fibers_meets_exchanges_and_votes_in_a_short_warp() {
        let threads = 40usize;
        let mut out = vec![0u64; 2 * threads];
        let mut slot = out.as_mut_ptr();
        let args = [&mut slot as *mut *mut u64 as *mut c_void];
        let mut runner = FiberRunner::new(threads).unwrap();
        // SAFETY: the entry reads one argument slot holding `out`, long enough.
        unsafe { runner.run_block(exchange, &template(threads as u32), args.as_ptr()) }.unwrap();
        for t in 0..threads {
            let (warp, lane) = (t / WARP_LANES, t % WARP_LANES);
            let lanes = (threads - warp * WARP_LANES).min(WARP_LANES);
            let down = if lane + 1 < lanes {
                (t as u64 + 1) * 10
            } else {
                t as u64 * 10
            };
            let ballot = (0..lanes)
                .filter(|l| (warp * WARP_LANES + l) % 3 == 0)
                .fold(0u64, |b, l| b | 1 << l);
            assert_eq!(out[2 * t], down, "thread {t}");
            assert_eq!(out[2 * t + 1], ballot, "thread {t}");
        }
    }

    /// Lanes 0..16 of each warp shuffle; the others meet the block at a barrier.
    unsafe extern "C" fn split(ctx: *const CpuLaunchContext, _args: *const *mut c_void) {
        // SAFETY: the runner passes a live context.
        unsafe {
            let ctx = &*ctx;
            if ctx.thread_idx[0] % 32 < 16 {
                (ctx.warp_shuffle)(ctx.warp, 1, 0);
            } else {
                (ctx.barrier)(ctx.barrier_state);
            }
        }
    }

    #[test]
    fn a_block_that_would_wait_forever_is_an_error_naming_the_threads() {
        let mut runner = FiberRunner::new(64).unwrap();
        // SAFETY: the entry reads no argument.
        let err = unsafe { runner.run_block(split, &template(64), std::ptr::null()) }
            .expect_err("a split warp must not hang");
        assert!(
            err.contains("threads 16..=31, 48..=63 at `sync_threads`")
                && err.contains("threads 0..=15, 32..=47 at a warp operation"),
            "{err}"
        );
    }

    #[test]
    fn a_thread_that_returns_early_does_not_hold_the_barrier() {
        let mut out = vec![0u64; 2];
        let mut slot = out.as_mut_ptr();
        let args = [&mut slot as *mut *mut u64 as *mut c_void];
        let mut runner = FiberRunner::new(8).unwrap();
        for _ in 0..3 {
            out.iter_mut().for_each(|v| *v = 0);
            // SAFETY: as above.
            unsafe { runner.run_block(early_exit, &template(8), args.as_ptr()) }.unwrap();
            assert_eq!(out, vec![7, 7]);
        }
    }
}
