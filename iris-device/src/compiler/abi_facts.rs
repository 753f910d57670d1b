//! What a kernel's `abi::KernelSpec` says beyond its parameters, computed here, where the
//! code is generated, so the macro that writes the spec and the lowering agree by
//! construction.

use super::kernel_ir::Function;
use super::llvm::cpu_shared_bytes;

/// The most threads per block every kernel is built for (AMD's
/// `amdgpu-flat-work-group-size` upper bound; NVIDIA and the CPU take as many).
pub const MAX_BLOCK_THREADS: u32 = 1024;

/// The facts of a kernel's spec that come from its code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KernelFacts {
    /// Bytes of block-shared memory its `shared_array`s take, laid out as the lowering lays
    /// them out (each array 16-byte aligned, in order).
    pub shared_bytes: u32,
    /// The most threads per block its code objects accept.
    pub max_block_threads: u32,
}

/// The facts of kernel `f` (the frontend has checked its shared arrays: sized elements,
/// at most 64 KiB each; anything else would read as `u32::MAX` bytes, which no device
/// launches).
pub fn kernel_facts(f: &Function) -> KernelFacts {
    let shared = cpu_shared_bytes(&f.shared_arrays).unwrap_or(u64::MAX);
    KernelFacts {
        shared_bytes: u32::try_from(shared).unwrap_or(u32::MAX),
        max_block_threads: max_block_threads(f),
    }
}

/// The most threads per block kernel `f` is built for: its `max_threads`, or
/// [`MAX_BLOCK_THREADS`].
pub fn max_block_threads(f: &Function) -> u32 {
    f.max_threads.unwrap_or(MAX_BLOCK_THREADS)
}
