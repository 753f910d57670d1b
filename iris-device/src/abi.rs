//! The contract between compiled kernels and the host runtime.
//!
//! `#[iris::kernel]` emits one [`KernelUnit`] per annotated function (or module): the code
//! object for every target it was compiled for and, per kernel, the layout of its
//! parameters. The runtime picks the code object for the device it runs on and passes
//! arguments as an array of pointers to argument slots, the `kernelParams` convention of
//! `cuLaunchKernel`/`hipModuleLaunchKernel`, which the CPU target shares.

use core::ffi::c_void;

/// Which family of device a code object is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TargetKind {
    /// AMD GPUs: an HSA code object (ELF shared object) for one `gfx` processor.
    Amdgpu,
    /// NVIDIA GPUs: PTX text (NUL-terminated) for one `sm_` architecture or newer.
    Nvptx,
    /// The host CPU: an ELF shared object exporting one [`CpuKernelEntry`] per kernel.
    Cpu,
}

/// One compiled code object of a kernel unit.
#[derive(Clone, Copy, Debug)]
pub struct CodeObject {
    /// The processor it was compiled for: `gfx90a`, `gfx942`, `gfx950`, `sm_80`, `sm_90`,
    /// or the host triple (`x86_64-unknown-linux-gnu`).
    pub target: &'static str,
    /// The device family.
    pub kind: TargetKind,
    /// The object's bytes.
    pub bytes: &'static [u8],
}

/// How one kernel parameter is passed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamKind {
    /// A scalar or vector passed by value: one slot of this size and alignment.
    Value {
        /// Size in bytes.
        size: u32,
        /// Alignment in bytes.
        align: u32,
    },
    /// A raw device pointer (`*const T` / `*mut T`): one 8-byte slot.
    Pointer,
    /// A `Symmetric<T>`: three 8-byte slots, the local pointer, the local base and the
    /// device address of the allocation's peer table (its entry 0; see [`peer_table`]).
    Symmetric,
}

impl ParamKind {
    /// How many argument slots (entries of the `kernelParams` array) this parameter takes.
    pub const fn slots(self) -> usize {
        match self {
            ParamKind::Symmetric => 3,
            _ => 1,
        }
    }
}

/// One kernel parameter, as declared.
#[derive(Clone, Copy, Debug)]
pub struct ParamSpec {
    /// The parameter's name in the Rust signature.
    pub name: &'static str,
    /// The Rust type as written (`*const f32`, `Symmetric<f32>`, `u64`).
    pub ty: &'static str,
    /// How it is passed.
    pub kind: ParamKind,
}

/// The most block-shared memory a kernel's `shared_array`s may take as static shared
/// memory (48 KiB, what CUDA allows without opting in). A GPU kernel whose arrays take
/// more gets them as dynamic shared memory of that size: the compiler places them in the
/// launch's dynamic block, and the runtime raises the kernel's limit when it loads it and
/// asks for the bytes at every launch ([`KernelSpec::dynamic_shared_bytes`]).
pub const STATIC_SHARED_LIMIT: u32 = 48 * 1024;

/// One kernel of a unit.
#[derive(Clone, Copy, Debug)]
pub struct KernelSpec {
    /// The symbol of the kernel in every code object of the unit.
    pub name: &'static str,
    /// Its parameters in order.
    pub params: &'static [ParamSpec],
    /// Bytes of block-shared memory its `shared_array`s take (per block): static up to
    /// [`STATIC_SHARED_LIMIT`], dynamic beyond it on GPUs.
    pub shared_bytes: u32,
    /// Whether the threads of a block must run at the same time: the kernel calls
    /// `sync_threads` or a warp operation. The CPU backend then runs a block's GPU threads
    /// as fibers on one OS thread, switching at barriers, warp exchanges and sleeps.
    pub concurrent_threads: bool,
    /// The most threads per block its code objects were built for.
    pub max_block_threads: u32,
    /// Whether its remote operations check the peer index against the world size (see
    /// [`peer_table`]): a launch then makes the host read the context's error word at
    /// the next synchronization.
    pub peer_checks: bool,
    /// Whether it waits on signals (`signal_wait_until`): a wait that gives up writes the
    /// context's fault record, so a launch makes the host read it at the next
    /// synchronization, as with peer checks.
    pub signal_waits: bool,
    /// Whether it may spin: one of its loops polls memory (an atomic load or
    /// compare-and-swap, the world's abort flag) or sleeps, as every signal wait, barrier
    /// wait and hand-written wait does. Its blocks may then stay resident while they
    /// wait, so on NVIDIA GPUs the runtime loads it with the largest shared-memory split
    /// (unless `IRIS_SHARED_CARVEOUT` asks another of every kernel): a multiprocessor a
    /// waiting block holds at a small split takes no block of a kernel that needs a large
    /// one, such as the GEMM a consumer waits for.
    pub spins: bool,
    /// Whether it records trace events (`trace_event`, built with the `trace-events`
    /// feature): a launch passes [`trace::HIDDEN_SLOTS`] more slots after the parameters'
    /// (see [`trace`]).
    pub trace_events: bool,
}

impl KernelSpec {
    /// Bytes of dynamic shared memory a GPU launch of this kernel must ask for: its
    /// `shared_bytes` when they exceed [`STATIC_SHARED_LIMIT`] (the compiler put its arrays
    /// there), else 0.
    pub const fn dynamic_shared_bytes(&self) -> u32 {
        if self.shared_bytes > STATIC_SHARED_LIMIT {
            self.shared_bytes
        } else {
            0
        }
    }
}

impl KernelSpec {
    /// How many argument slots its parameters take (what a caller binds).
    pub fn slot_count(&self) -> usize {
        self.params.iter().map(|p| p.kind.slots()).sum()
    }

    /// How many argument slots a launch passes: the parameters' and, for a kernel that
    /// records trace events, the trace's hidden ones.
    pub fn launch_slot_count(&self) -> usize {
        self.slot_count()
            + if self.trace_events {
                trace::HIDDEN_SLOTS
            } else {
                0
            }
    }
}

pub mod peer_table;
pub mod trace;

/// Every kernel unit linked into the program: each `#[iris::kernel]` and
/// `#[iris::kernels]` item registers its [`KernelUnit`] here, and a context loads them all
/// on its device when it is made (see `iris::Iris`), so that no launch loads a module
/// later (loading one waits for the device's running kernels on CUDA, and a kernel that
/// waits for another rank would make that a deadlock).
#[linkme::distributed_slice]
pub static KERNEL_UNITS: [&'static KernelUnit];

#[doc(hidden)]
pub use linkme as __linkme;

/// Everything one `#[iris::kernel]` item compiled to.
#[derive(Clone, Copy, Debug)]
pub struct KernelUnit {
    /// A name unique within the program (module path and item name).
    pub id: &'static str,
    /// The kernels the unit exports.
    pub kernels: &'static [KernelSpec],
    /// One code object per compiled target.
    pub code_objects: &'static [CodeObject],
    /// Targets asked for that the compiler's LLVM could not build, with the reason.
    pub left_out: &'static [LeftOut],
}

/// A target a kernel unit has no code object for because the compiler could not build it.
#[derive(Clone, Copy, Debug)]
pub struct LeftOut {
    /// The target's name (`gfx950`).
    pub target: &'static str,
    /// Why.
    pub reason: &'static str,
}

impl KernelUnit {
    /// The code objects of one device family.
    pub fn objects_of(&self, kind: TargetKind) -> impl Iterator<Item = &CodeObject> {
        self.code_objects.iter().filter(move |o| o.kind == kind)
    }

    /// Why the unit has no code object for `target`, when the compiler left it out.
    pub fn left_out_reason(&self, target: &str) -> Option<&'static str> {
        self.left_out
            .iter()
            .find(|l| l.target == target)
            .map(|l| l.reason)
    }

    /// The names of all targets the unit was compiled for, for error messages.
    pub fn target_names(&self) -> Vec<&'static str> {
        self.code_objects.iter().map(|o| o.target).collect()
    }
}

/// What the CPU target's kernels read their coordinates from, one per GPU thread.
#[repr(C)]
#[derive(Debug)]
pub struct CpuLaunchContext {
    /// `threadIdx` x, y, z.
    pub thread_idx: [u32; 3],
    /// `blockIdx` x, y, z.
    pub block_idx: [u32; 3],
    /// `blockDim` x, y, z.
    pub block_dim: [u32; 3],
    /// `gridDim` x, y, z.
    pub grid_dim: [u32; 3],
    /// The block's shared memory (at least `shared_bytes`, 16-byte aligned).
    pub shared: *mut u8,
    /// Called for `sync_threads`: returns once every thread of the block has called it.
    pub barrier: unsafe extern "C" fn(state: *mut c_void),
    /// Passed to `barrier`.
    pub barrier_state: *mut c_void,
    /// `global_timer_ns()` and `clock64()`: nanoseconds of a clock that never goes back
    /// and that every rank of the machine shares (the runtime's is `CLOCK_MONOTONIC`).
    pub now_ns: unsafe extern "C" fn() -> u64,
    /// `nanosleep(ns)`: suspends the calling thread for about `ns` nanoseconds.
    pub sleep_ns: unsafe extern "C" fn(ns: u64),
    /// This thread's seat in its warp (32 consecutive threads of the block), passed to
    /// `warp_shuffle` and `warp_ballot`; null when the kernel makes no warp operation.
    pub warp: *mut c_void,
    /// A shuffle: every lane of the warp passes its `value`; each gets the value of
    /// `src_lane` (its own value when that lane has no thread). Returns once every lane
    /// of the warp has called it.
    pub warp_shuffle: unsafe extern "C" fn(warp: *mut c_void, value: u64, src_lane: u32) -> u64,
    /// A ballot: every lane passes its `predicate` (0 or 1); each gets bit `i` set for
    /// every lane `i` that passed 1.
    pub warp_ballot: unsafe extern "C" fn(warp: *mut c_void, predicate: u32) -> u64,
    /// A warp's `mma`: every lane passes its A and B fragments (8 values each, as `f32`)
    /// and its accumulator (8 `f32`, updated in place) in NVIDIA's `m16n8k16` layout, twice
    /// over (a 16 x 16 tile); the tile product is computed once the warp's lanes have all
    /// called it, each lane adding its part to its accumulator in `k` order.
    pub warp_mma:
        unsafe extern "C" fn(warp: *mut c_void, a: *const f32, b: *const f32, c: *mut f32),
}

/// The signature of a kernel in a CPU code object: one call runs one GPU thread.
/// `args` has one pointer per argument slot, as `cuLaunchKernel`'s `kernelParams`.
pub type CpuKernelEntry =
    unsafe extern "C" fn(ctx: *const CpuLaunchContext, args: *const *mut c_void);
