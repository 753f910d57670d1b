//! Kernel entry points and the parameter ABI (`crate::abi`).
//!
//! Each parameter takes argument slots: a scalar or vector one slot of its type (`bool` as
//! a byte), a raw pointer one global pointer, a `Symmetric<T>` three (pointer, local base,
//! table), a struct one holding its `#[repr(C)]` bytes (NVIDIA: `byval` in the parameter
//! space; AMD: `byref` in the kernel-argument segment; read in place). GPU kernels take the
//! slots as parameters (`amdgpu_kernel` / `ptx_kernel`);
//! a CPU kernel is `void name(ptr ctx, ptr args)` and reads slot `i` through `args[i]`.
//! A unit that records trace events takes two more `i64` slots after the parameters'
//! (`crate::abi::trace`), which the entry passes to the body after the CPU's context.
//! The entry converts the slots to register values and calls the kernel's body.

use super::super::super::kernel_ir::{Function, Scalar, Type};
use super::arch::Arch;
use super::function::body_symbol;
use super::module::ATTR_KERNEL;
use super::types;
use crate::abi::TargetKind;
use crate::compiler::abi_facts::max_block_threads;
use std::fmt::Write;

/// How a parameter type is passed: the register type of each slot.
fn slot_types(ty: &Type, arch: Arch) -> Result<Vec<String>, String> {
    let g = arch.gptr().to_string();
    Ok(match ty {
        Type::Scalar(Scalar::Bool) => vec!["i8".to_string()],
        Type::Scalar(_) | Type::Vector(_) => vec![types::reg_ty(ty, arch)?],
        Type::Ptr { .. } => vec![g],
        Type::Symmetric(_) => vec![g.clone(), "i64".to_string(), g],
        // A struct's bytes: on GPUs in the kernel's parameter space, read where they are.
        Type::Struct(_) => {
            let t = types::reg_ty(ty, arch)?;
            let align = types::align_of(ty)?;
            vec![match arch.kind() {
                TargetKind::Nvptx => format!("ptr byval({t}) align {align}"),
                TargetKind::Amdgpu => format!("ptr addrspace(4) byref({t}) align {align}"),
                TargetKind::Cpu => t,
            }]
        }
        other => return Err(format!("a kernel parameter cannot have type `{other}`")),
    })
}

/// The entry point of kernel `func`.
/// Whether NVIDIA's block bound is `!nvvm.annotations` metadata (`maxntidx`) rather than
/// the `"nvvm.maxntid"` attribute: before LLVM 22 (LLVM 19 ignores the attribute).
pub(super) fn maxntid_as_metadata(arch: Arch) -> bool {
    arch.kind() == TargetKind::Nvptx && super::nvptx::nvptx_before_llvm22()
}

pub(super) fn kernel_entry(func: &Function, arch: Arch, trace: bool) -> Result<String, String> {
    let mut body = String::new();
    let mut params = Vec::new();
    let mut args = Vec::new();
    let mut slot = 0usize;
    let cpu = arch.kind() == TargetKind::Cpu;
    if cpu {
        params.push("ptr %launch.ctx".to_string());
        params.push("ptr %launch.args".to_string());
        args.push("ptr %launch.ctx".to_string());
    }
    for (i, p) in func.params().iter().enumerate() {
        let slots = slot_types(&p.ty, arch)
            .map_err(|e| format!("parameter `{}` of kernel `{}`: {e}", p.name, func.name))?;
        let mut vals = Vec::new();
        let base = param_name(&p.name, i);
        for (k, st) in slots.iter().enumerate() {
            let name = match (slots.len(), k) {
                (1, _) => format!("%{base}"),
                (_, 0) => format!("%{base}.ptr"),
                (_, 1) => format!("%{base}.base"),
                _ => format!("%{base}.table"),
            };
            if cpu {
                let align = slot_align(&p.ty, st)?;
                load_cpu_slot(&mut body, slot, &name, st, align);
            } else {
                params.push(format!("{st} {name}"));
            }
            vals.push(name);
            slot += 1;
        }
        let reg = types::reg_ty(&p.ty, arch)?;
        let value = match &p.ty {
            Type::Scalar(Scalar::Bool) => {
                let _ = writeln!(body, "  %v.{i} = icmp ne i8 {}, 0", vals[0]);
                format!("%v.{i}")
            }
            Type::Ptr { .. } if arch.is_gpu() => {
                let _ = writeln!(
                    body,
                    "  %v.{i} = addrspacecast {} {} to ptr",
                    arch.gptr(),
                    vals[0]
                );
                format!("%v.{i}")
            }
            Type::Struct(_) if arch.is_gpu() => {
                let align = types::align_of(&p.ty)?;
                let space = if arch.kind() == TargetKind::Amdgpu {
                    "ptr addrspace(4)"
                } else {
                    "ptr"
                };
                let _ = writeln!(
                    body,
                    "  %v.{i} = load {reg}, {space} {}, align {align}",
                    vals[0]
                );
                format!("%v.{i}")
            }
            Type::Symmetric(_) => {
                let mut acc = "poison".to_string();
                for (k, (v, st)) in vals.iter().zip(&slots).enumerate() {
                    let _ = writeln!(
                        body,
                        "  %v.{i}.{k} = insertvalue {reg} {acc}, {st} {v}, {k}"
                    );
                    acc = format!("%v.{i}.{k}");
                }
                acc
            }
            _ => vals[0].clone(),
        };
        args.push(format!("{reg} {value}"));
    }
    if trace {
        // The trace's two hidden arguments follow the parameters' slots (`crate::abi::trace`).
        let mut hidden = Vec::new();
        for name in ["%trace.ring", "%trace.launch"] {
            if cpu {
                load_cpu_slot(&mut body, slot, name, "i64", 8);
            } else {
                params.push(format!("i64 {name}"));
            }
            hidden.push(format!("i64 {name}"));
            slot += 1;
        }
        let at = usize::from(cpu);
        args.splice(at..at, hidden);
    }
    let cc = match arch.kind() {
        TargetKind::Amdgpu => "amdgpu_kernel ",
        TargetKind::Nvptx => "ptx_kernel ",
        TargetKind::Cpu => "",
    };
    // The most threads per block the code is built for: AMD's default bound (the
    // targets' maximum) or the kernel's `max_threads`; NVIDIA's `.maxntid` only for the
    // latter (ptxas then budgets registers for that block size).
    let max = max_block_threads(func);
    let bound = match (arch.kind(), func.max_threads) {
        (TargetKind::Amdgpu, _) => format!(" \"amdgpu-flat-work-group-size\"=\"1,{max}\""),
        (TargetKind::Nvptx, Some(n)) if !maxntid_as_metadata(arch) => {
            format!(" \"nvvm.maxntid\"=\"{n}\"")
        }
        _ => String::new(),
    };
    Ok(format!(
        "define {cc}void {}({}){bound} {ATTR_KERNEL} {{\nentry:\n{body}  call void {}({})\n  ret void\n}}\n",
        types::global_name(&func.name),
        params.join(", "),
        body_symbol(&func.name),
        args.join(", ")
    ))
}

/// A CPU entry's load of slot `slot` (a `ty` at `args[slot]`) into `name`.
fn load_cpu_slot(body: &mut String, slot: usize, name: &str, ty: &str, align: u32) {
    let _ = writeln!(
        body,
        "  %slot.{slot} = getelementptr ptr, ptr %launch.args, i64 {slot}"
    );
    let _ = writeln!(
        body,
        "  %slot.{slot}.p = load ptr, ptr %slot.{slot}, align 8"
    );
    let _ = writeln!(
        body,
        "  {name} = load {ty}, ptr %slot.{slot}.p, align {align}"
    );
}

/// The LLVM name of parameter `i` (its Rust name where that is a plain identifier).
fn param_name(name: &str, i: usize) -> String {
    let plain = types::ident_part(name);
    if plain == name && !plain.is_empty() {
        plain
    } else {
        format!("{plain}.{i}")
    }
}

/// Alignment of a CPU argument slot's value: the slot holds a value of the Rust type.
fn slot_align(ty: &Type, slot_ty: &str) -> Result<u32, String> {
    Ok(match ty {
        Type::Symmetric(_) | Type::Ptr { .. } => 8,
        Type::Scalar(Scalar::Bool) => 1,
        _ => types::align_of(ty).map_err(|e| format!("{e} (slot `{slot_ty}`)"))?,
    })
}
