//! What the lowering needs to know about a target: address spaces, data layout, scopes.

use super::super::super::kernel_ir::MemScope;
use super::super::super::Target;
use crate::abi::TargetKind;

/// The target being lowered for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Arch {
    /// The compilation target.
    pub target: Target,
}

impl Arch {
    /// The device family.
    pub fn kind(self) -> TargetKind {
        self.target.kind()
    }

    /// AMD or NVIDIA.
    pub fn is_gpu(self) -> bool {
        self.kind() != TargetKind::Cpu
    }

    /// The type of a pointer known to point to global memory.
    pub fn gptr(self) -> &'static str {
        if self.is_gpu() {
            "ptr addrspace(1)"
        } else {
            "ptr"
        }
    }

    /// The type of a pointer to a local variable's stack slot.
    pub fn private_ptr(self) -> &'static str {
        match self.kind() {
            TargetKind::Amdgpu => "ptr addrspace(5)",
            _ => "ptr",
        }
    }

    /// The suffix of an `alloca` (AMDGPU allocates in address space 5).
    pub fn alloca_suffix(self) -> &'static str {
        match self.kind() {
            TargetKind::Amdgpu => ", addrspace(5)",
            _ => "",
        }
    }

    /// LLVM's data layout for the target: LLVM 22's (checked against the target machine in
    /// tests), or what an older LLVM's target machine says (its defaults differ in
    /// address spaces the lowering does not use; code generation sets the target
    /// machine's layout on the module either way).
    pub fn datalayout(self) -> std::borrow::Cow<'static, str> {
        if crate::compiler::llvm::LLVM_MAJOR != 22 {
            if let Ok(layout) = crate::compiler::llvm::target_data_layout(self.target) {
                return layout.into();
            }
        }
        match self.kind() {
            TargetKind::Amdgpu => "e-m:e-p:64:64-p1:64:64-p2:32:32-p3:32:32-p4:64:64-p5:32:32-p6:32:32-p7:160:256:256:32-p8:128:128:128:48-p9:192:256:256:32-i64:64-v16:16-v24:32-v32:32-v48:64-v96:128-v192:256-v256:256-v512:512-v1024:1024-v2048:2048-n32:64-S32-A5-G1-ni:7:8:9",
            TargetKind::Nvptx => "e-p6:32:32-i64:64-i128:128-i256:256-v16:16-v32:32-n16:32:64",
            TargetKind::Cpu => host_datalayout(),
        }
        .into()
    }

    /// The `syncscope("..")` clause for a scope, with a leading space; empty for the
    /// system scope (LLVM's default, which has no name) and on the CPU.
    pub fn syncscope(self, scope: MemScope) -> &'static str {
        match (self.kind(), scope) {
            (_, MemScope::System) | (TargetKind::Cpu, _) => "",
            (TargetKind::Amdgpu, MemScope::Block) => " syncscope(\"workgroup\")",
            (TargetKind::Amdgpu, MemScope::Device) => " syncscope(\"agent\")",
            (TargetKind::Nvptx, MemScope::Block) => " syncscope(\"block\")",
            (TargetKind::Nvptx, MemScope::Device) => " syncscope(\"device\")",
        }
    }
}

fn host_datalayout() -> &'static str {
    if cfg!(target_arch = "aarch64") {
        "e-m:e-p270:32:32-p271:32:32-p272:64:64-i8:8:32-i16:16:32-i64:64-i128:128-n32:64-S128-Fn32"
    } else {
        "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128"
    }
}
