//! Block-shared arrays (`shared_array::<T, N>()`): address-space-3 globals on GPUs (or
//! slices of the launch's dynamic block, past 48 KiB), slices of the launch context's
//! `shared` block on the CPU (both blocks laid out by [`cpu_layout`]).

use super::super::super::kernel_ir::Intrinsic;
use super::super::super::kernel_ir::SharedArray;
use super::builder::FnBuilder;
use super::cpu::SHARED_OFFSET;
use super::intrinsics::not_in_family;
use super::types;
use crate::abi::{TargetKind, STATIC_SHARED_LIMIT};

/// The launch's dynamic shared block (GPU), where a kernel's arrays go when they exceed
/// [`STATIC_SHARED_LIMIT`].
pub(super) const DYNAMIC_SHARED: &str = "@__iris_dynamic_shared";

/// Alignment of every shared array (in the CPU block, and on AMD).
pub const SHARED_ALIGN: u64 = 16;

/// Alignment of NVIDIA shared arrays and of the dynamic block: 1024 bytes, what a
/// 128-byte-swizzled warpgroup tile needs (see `warpgroup.rs`).
pub(super) const NVPTX_SHARED_ALIGN: u64 = 1024;

/// Arrays of at least this many bytes start on a multiple of it in a shared block: the
/// alignment of NVIDIA's static shared arrays, what a 128-byte-swizzled warpgroup tile
/// needs (see `warpgroup.rs`).
const LARGE_ARRAY: u64 = NVPTX_SHARED_ALIGN;

/// The byte offset of each of `arrays` in a shared block laid out by the compiler (the
/// CPU's block, and a GPU launch's dynamic block), and the total size: arrays of
/// [`LARGE_ARRAY`] bytes or more first, in their order, each on a multiple of it, then the
/// others in theirs, each on a multiple of [`SHARED_ALIGN`]. So a small array declared
/// before the tiles does not move them off the 1024-byte boundary a warpgroup tile needs
/// (and large arrays, usually whole kilobytes, need no padding between them).
pub(super) fn cpu_layout(arrays: &[SharedArray]) -> Result<(Vec<u64>, u64), String> {
    let mut sizes = Vec::with_capacity(arrays.len());
    for a in arrays {
        let size = a
            .elem
            .size()
            .ok_or_else(|| format!("shared array of `{}`", a.elem))?;
        sizes.push(u64::from(size) * a.len);
    }
    let mut offsets = vec![0u64; arrays.len()];
    let mut end = 0u64;
    for large in [true, false] {
        for (i, &size) in sizes.iter().enumerate() {
            if (size >= LARGE_ARRAY) != large {
                continue;
            }
            let align = if large { LARGE_ARRAY } else { SHARED_ALIGN };
            let start = end.div_ceil(align) * align;
            offsets[i] = start;
            end = start + size;
        }
    }
    Ok((offsets, end))
}

impl FnBuilder<'_> {
    /// `sync_threads()`, `fence(..)`, `shared_array::<T, N>()`, asynchronous copies (in
    /// `copy_async.rs`) and bulk copies (in `bulk_copy.rs`).
    pub(super) fn lower_block(&mut self, op: &Intrinsic) -> Result<String, String> {
        match op {
            Intrinsic::SyncThreads => {
                match self.arch().kind() {
                    TargetKind::Amdgpu => self.amdgpu_barrier(),
                    TargetKind::Nvptx => self.ptx_barrier(),
                    TargetKind::Cpu => self.cpu_barrier()?,
                }
                Ok(String::new())
            }
            Intrinsic::Fence { order, scope } => Ok(self.fence(*order, *scope)),
            Intrinsic::SharedArray { index } => self.shared_array(*index),
            Intrinsic::CopyAsync { dst, src } => self.copy_async(dst, src),
            Intrinsic::CopyAsyncCommit => {
                self.copy_async_commit();
                Ok(String::new())
            }
            Intrinsic::CopyAsyncWait { pending } => {
                self.copy_async_wait(*pending);
                Ok(String::new())
            }
            Intrinsic::BulkBarrierInit { barrier } => self.bulk_barrier_init(barrier),
            Intrinsic::BulkExpect { barrier, bytes } => self.bulk_expect(barrier, bytes),
            Intrinsic::CopyBulk { dst, src, barrier } => self.copy_bulk(dst, src, barrier),
            Intrinsic::BulkWait { barrier, parity } => self.bulk_wait(barrier, parity),
            Intrinsic::CopyTile {
                dst,
                map,
                col,
                row,
                barrier,
            } => self.copy_tile(dst, map, col, row, barrier),
            other => Err(not_in_family(other)),
        }
    }

    /// The symbol of a GPU shared array of the current function.
    fn shared_symbol(&self, index: usize) -> String {
        types::global_name(&format!("__iris_shared_{}_{index}", self.func.name))
    }

    /// The alignment in bytes of shared array `index` on a GPU: the target's for static
    /// arrays; in the dynamic block, the block's or the largest power of two dividing the
    /// array's offset, whichever is smaller.
    pub(super) fn shared_array_align(&self, index: usize) -> Result<u64, String> {
        let block = self.gpu_shared_align();
        if !self.dynamic_shared()? {
            return Ok(block);
        }
        let (offsets, _) = cpu_layout(&self.func.shared_arrays)?;
        Ok(match offsets.get(index).copied() {
            Some(0) => block,
            Some(at) => (1u64 << at.trailing_zeros()).min(block),
            None => 1,
        })
    }

    /// Whether the current function's shared arrays live in the launch's dynamic shared
    /// block: a GPU kernel whose arrays exceed [`STATIC_SHARED_LIMIT`].
    fn dynamic_shared(&self) -> Result<bool, String> {
        if !self.arch().is_gpu() || !self.func.is_kernel {
            return Ok(false);
        }
        let (_, total) = cpu_layout(&self.func.shared_arrays)?;
        Ok(total > u64::from(STATIC_SHARED_LIMIT))
    }

    /// Defines the GPU globals of the current function's shared arrays (or, for dynamic
    /// shared memory, declares the launch's block, which the arrays are laid out in as on
    /// the CPU).
    pub fn define_shared_arrays(&mut self) -> Result<(), String> {
        if !self.arch().is_gpu() {
            return Ok(());
        }
        let align = self.gpu_shared_align();
        if self.dynamic_shared()? {
            self.m.dynamic_shared(align);
            return Ok(());
        }
        let func = self.func;
        for (i, a) in func.shared_arrays.iter().enumerate() {
            let et = self.mem_ty(&a.elem)?;
            let sym = self.shared_symbol(i);
            self.m.global(format!(
                "{sym} = internal addrspace(3) global [{} x {et}] undef, align {align}",
                a.len
            ));
        }
        Ok(())
    }

    /// The alignment of this target's GPU shared arrays.
    pub(super) fn gpu_shared_align(&self) -> u64 {
        if self.arch().kind() == TargetKind::Nvptx {
            NVPTX_SHARED_ALIGN
        } else {
            SHARED_ALIGN
        }
    }

    /// A generic pointer to the first element of shared array `index`.
    pub fn shared_array(&mut self, index: usize) -> Result<String, String> {
        let func = self.func;
        if index >= func.shared_arrays.len() {
            return Err(format!(
                "shared array #{index} of `{}` does not exist",
                func.name
            ));
        }
        if self.dynamic_shared()? {
            let (offsets, _) = cpu_layout(&func.shared_arrays)?;
            let at = self.def(&format!(
                "getelementptr inbounds i8, ptr addrspace(3) {DYNAMIC_SHARED}, i64 {}",
                offsets[index]
            ));
            return Ok(self.def(&format!("addrspacecast ptr addrspace(3) {at} to ptr")));
        }
        if self.arch().is_gpu() {
            let sym = self.shared_symbol(index);
            return Ok(self.def(&format!("addrspacecast ptr addrspace(3) {sym} to ptr")));
        }
        if !func.is_kernel {
            // The CPU block's shared memory is laid out per kernel (the kernel's own arrays
            // from offset 0); a device function's arrays would alias them.
            return Err(format!(
                "`shared_array` in device function `{}` is not supported on the CPU target: \
                 declare the array in the kernel and pass the pointer",
                func.name
            ));
        }
        let (offsets, _) = cpu_layout(&func.shared_arrays)?;
        let base = self.cpu_ctx_field("ptr", SHARED_OFFSET, 8)?;
        Ok(self.def(&format!(
            "getelementptr inbounds i8, ptr {base}, i64 {}",
            offsets[index]
        )))
    }
}
