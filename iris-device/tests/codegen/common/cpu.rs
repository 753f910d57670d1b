//! Running CPU code objects in the test process: load the shared object, build each
//! thread's launch context, call the kernel entry.

#![allow(dead_code)]

use iris_device::abi::{CpuKernelEntry, CpuLaunchContext};
use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Barrier;

/// A loaded CPU code object.
pub struct CpuModule {
    lib: libloading::Library,
    path: std::path::PathBuf,
}

impl CpuModule {
    /// Writes the shared object to a temporary file and loads it.
    pub fn load(so: &[u8]) -> Self {
        static N: AtomicU64 = AtomicU64::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let path =
            std::env::temp_dir().join(format!("iris-cpu-test-{}-{n}.so", std::process::id()));
        std::fs::write(&path, so).expect("write shared object");
        // SAFETY: the object is one the compiler under test produced; its initialisers
        // are LLVM's (none).
        let lib = unsafe { libloading::Library::new(&path) }
            .unwrap_or_else(|e| panic!("dlopen of the CPU code object failed: {e}"));
        CpuModule { lib, path }
    }

    /// Runs `kernel` over `grid` blocks of `block` threads (x only), the threads of a
    /// block concurrently, with `shared_bytes` of block-shared memory.
    pub fn launch(
        &self,
        kernel: &str,
        grid: u32,
        block: u32,
        shared_bytes: usize,
        args: &[*mut c_void],
    ) {
        // SAFETY: the symbol is a kernel entry of the CPU ABI.
        let entry: CpuKernelEntry = unsafe {
            *self
                .lib
                .get::<CpuKernelEntry>(kernel.as_bytes())
                .unwrap_or_else(|e| panic!("kernel {kernel} not exported: {e}"))
        };
        let args = SendPtr(args.as_ptr() as *mut c_void);
        for b in 0..grid {
            let mut shared = vec![0u128; shared_bytes.div_ceil(16).max(1)];
            let shared_ptr = SendPtr(shared.as_mut_ptr() as *mut c_void);
            let barrier = Barrier::new(block as usize);
            let barrier_ptr = SendPtr(&barrier as *const Barrier as *mut c_void);
            std::thread::scope(|s| {
                for t in 0..block {
                    let (args, shared_ptr, barrier_ptr) = (args, shared_ptr, barrier_ptr);
                    s.spawn(move || {
                        let ctx = CpuLaunchContext {
                            thread_idx: [t, 0, 0],
                            block_idx: [b, 0, 0],
                            block_dim: [block, 1, 1],
                            grid_dim: [grid, 1, 1],
                            shared: shared_ptr.get() as *mut u8,
                            barrier: wait,
                            barrier_state: barrier_ptr.get(),
                            now_ns,
                            sleep_ns,
                            warp: std::ptr::null_mut(),
                            warp_shuffle: no_warp_shuffle,
                            warp_ballot: no_warp_ballot,
                            warp_mma: no_warp_mma,
                        };
                        // SAFETY: the arguments match the kernel's slots (the caller's
                        // promise); the context lives for the call.
                        unsafe { entry(&ctx, args.get() as *const *mut c_void) };
                    });
                }
            });
        }
    }
}

impl Drop for CpuModule {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

#[derive(Clone, Copy)]
struct SendPtr(*mut c_void);

impl SendPtr {
    /// The pointer (a method, so closures capture the whole `Send` wrapper).
    fn get(self) -> *mut c_void {
        self.0
    }
}
// SAFETY: the pointees outlive the scoped threads and are used as the kernel ABI says.
unsafe impl Send for SendPtr {}
// SAFETY: as above.
unsafe impl Sync for SendPtr {}

unsafe extern "C" fn wait(state: *mut c_void) {
    // SAFETY: `state` is the block's `Barrier`, alive for the launch.
    unsafe { (*(state as *const Barrier)).wait() };
}

/// Nanoseconds since the first call in this process (the tests compare differences).
unsafe extern "C" fn now_ns() -> u64 {
    static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    START
        .get_or_init(std::time::Instant::now)
        .elapsed()
        .as_nanos() as u64
}

unsafe extern "C" fn sleep_ns(ns: u64) {
    std::thread::sleep(std::time::Duration::from_nanos(ns));
}

/// This harness runs no warp operations (the runtime's CPU backend does; tests/warp.rs).
unsafe extern "C" fn no_warp_shuffle(_warp: *mut c_void, _value: u64, _src: u32) -> u64 {
    panic!("warp operations run on the runtime's CPU backend, not in this harness")
}

unsafe extern "C" fn no_warp_ballot(_warp: *mut c_void, _predicate: u32) -> u64 {
    panic!("warp operations run on the runtime's CPU backend, not in this harness")
}

unsafe extern "C" fn no_warp_mma(_warp: *mut c_void, _a: *const f32, _b: *const f32, _c: *mut f32) {
    panic!("warp operations run on the runtime's CPU backend, not in this harness")
}

/// A pointer to an argument slot value.
pub fn arg<T>(v: &mut T) -> *mut c_void {
    v as *mut T as *mut c_void
}

/// The three slots of a `Symmetric<T>`: pointer, base, table.
pub struct SymSlots {
    pub ptr: u64,
    pub base: u64,
    pub table: u64,
}

impl SymSlots {
    /// Rank `me`'s view of an allocation whose copies start at `bases`.
    pub fn new(bases: &[u64], me: usize) -> (Self, Vec<u64>) {
        let table = bases.to_vec();
        let slots = SymSlots {
            ptr: bases[me],
            base: bases[me],
            table: 0,
        };
        (slots, table)
    }

    /// Pushes the three slots.
    pub fn push(&mut self, table: &mut [u64], args: &mut Vec<*mut c_void>) {
        self.table = table.as_mut_ptr() as u64;
        args.push(arg(&mut self.ptr));
        args.push(arg(&mut self.base));
        args.push(arg(&mut self.table));
    }
}
