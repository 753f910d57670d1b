//! Kernel IR -> LLVM IR text for one target.
//!
//! Every function of the unit becomes an internal function over register values
//! (`__iris_fn_<name>`, inlined by LLVM); every kernel also gets an entry point under its
//! own name that receives the argument slots of `crate::abi` and calls it.
//!
//! - [`module`]: header, declarations, helpers, attributes, metadata.
//! - [`entry`]: kernel entry points and the parameter ABI.
//! - [`function`]: functions and statements; [`control`]: control flow; [`expr`],
//!   [`cast`]: operators and casts.
//! - [`memory`]: loads, stores, symmetric translation; [`peer_check`]: the translation's
//!   peer check in units built with peer checks; [`atomics`]: atomics and fences.
//! - [`intrinsics`]: device intrinsics; [`amdgpu`], [`nvptx`], [`cpu`], [`shared`]: the
//!   per-target parts; [`time`]: device time on each target; [`warp`]: warp operations.
//! - [`arrays`]: register arrays and the full unrolling of loops that index them.
//! - [`alignment`]: what the kernel's expressions prove about a pointer's alignment.
//! - [`helpers`], [`fmod`], [`softfloat`]: functions the module defines for itself.

mod alignment;
mod amdgpu;
mod arch;
mod arrays;
mod atomics;
mod builder;
mod bulk_copy;
mod cast;
mod control;
mod copy_async;
mod cpu;
mod entry;
mod expr;
mod fmod;
mod function;
mod helpers;
mod ids;
mod intrinsics;
mod matrix;
mod memory;
mod module;
mod nvptx;
mod peer_check;
mod shared;
mod signals;
mod softfloat;
mod tile_copy;
mod time;
mod trace;
mod types;
mod warp;
mod warpgroup;

use super::super::kernel_ir::{Type, Unit};
use super::super::Target;
use arch::Arch;
use module::ModuleCtx;

pub use shared::SHARED_ALIGN;

/// Lowers a checked unit to LLVM IR text for `target`.
pub fn lower_unit(unit: &Unit, target: Target) -> Result<String, String> {
    let arch = Arch { target };
    let mut m = ModuleCtx::new(arch, unit.peer_checks);
    m.trace = unit.trace_param();
    let mut functions = Vec::with_capacity(unit.functions.len() * 2);
    for (id, func) in unit.functions.iter().enumerate() {
        if func.is_kernel && func.ret != Type::Unit {
            return Err(format!(
                "kernel `{}` returns `{}`; kernels return nothing",
                func.name, func.ret
            ));
        }
        let text = function::lower_function(&mut m, unit, id)
            .map_err(|e| format!("in `{}`: {e}", func.name))?;
        functions.push(text);
        if func.is_kernel {
            functions.push(entry::kernel_entry(func, arch, m.trace)?);
            if let (Some(n), true) = (func.max_threads, entry::maxntid_as_metadata(arch)) {
                m.annotate_maxntid(&func.name, n);
            }
        }
    }
    Ok(m.finish(&unit.name, &functions))
}

/// Bytes of the CPU shared block a function's `shared_array`s take (each array aligned
/// to [`SHARED_ALIGN`], in order): the layout the CPU code objects use.
pub fn cpu_shared_bytes(arrays: &[super::super::kernel_ir::SharedArray]) -> Result<u64, String> {
    shared::cpu_layout(arrays).map(|(_, total)| total)
}

#[cfg(test)]
mod tests {
    use super::super::super::kernel_ir::*;
    use super::*;
    use proc_macro2::Span;

    fn e(kind: ExprKind, ty: Type) -> Expr {
        Expr {
            kind,
            ty,
            span: Span::call_site(),
        }
    }

    /// `kernel k(p: Symmetric<u32>, flag: bool) { <body> }`.
    fn kernel(body: Vec<Stmt>, ret: Type) -> Unit {
        let local = |name: &str, ty: Type| Local {
            name: name.into(),
            ty,
            mutable: false,
            span: Span::call_site(),
        };
        Unit {
            name: "u".into(),
            functions: vec![Function {
                name: "k".into(),
                is_kernel: true,
                inline_always: false,
                param_count: 2,
                ret,
                locals: vec![
                    local("p", Type::Symmetric(Box::new(Type::Scalar(Scalar::U32)))),
                    local("flag", Type::Scalar(Scalar::Bool)),
                ],
                body: Block {
                    stmts: body,
                    tail: None,
                    ty: Type::Unit,
                },
                shared_arrays: vec![],
                uses_block_barrier: false,
                uses_warp: false,
                uses_warpgroup_mma: false,
                waits_on_signals: false,
                max_threads: None,
                span: Span::call_site(),
                instance_of: None,
            }],
            peer_checks: false,
            trace_events: false,
        }
    }

    fn atomic_add(scope: MemScope) -> Stmt {
        let p = e(
            ExprKind::Local(0),
            Type::Symmetric(Box::new(Type::Scalar(Scalar::U32))),
        );
        let one = e(ExprKind::Int(1), Type::Scalar(Scalar::U32));
        let peer = e(ExprKind::Int(0), Type::Scalar(Scalar::U32));
        Stmt::Expr(e(
            ExprKind::Intrinsic(Intrinsic::AtomicRmw {
                op: RmwOp::Add,
                order: MemOrder::Release,
                scope,
                sym: Box::new(p),
                value: Box::new(one),
                peer: Box::new(peer),
            }),
            Type::Scalar(Scalar::U32),
        ))
    }

    #[test]
    fn entry_points_follow_each_targets_convention() {
        let unit = kernel(vec![], Type::Unit);
        let amd = lower_unit(&unit, Target::Gfx942).unwrap();
        assert!(amd.contains("define amdgpu_kernel void @\"k\"(ptr addrspace(1) %p.ptr, i64 %p.base, ptr addrspace(1) %p.table, i8 %flag)"), "{amd}");
        assert!(amd.contains("\"amdgpu-flat-work-group-size\"=\"1,1024\""));
        assert!(amd.contains("!{i32 1, !\"amdhsa_code_object_version\", i32 500}"));
        assert!(amd.contains("target triple = \"amdgcn-amd-amdhsa\""));
        let ptx = lower_unit(&unit, Target::Sm90).unwrap();
        assert!(ptx.contains("define ptx_kernel void @\"k\"(ptr addrspace(1) %p.ptr, i64 %p.base, ptr addrspace(1) %p.table, i8 %flag)"), "{ptx}");
        let cpu = lower_unit(&unit, Target::Cpu).unwrap();
        assert!(
            cpu.contains("define void @\"k\"(ptr %launch.ctx, ptr %launch.args)"),
            "{cpu}"
        );
        // Four slots, each read through its pointer in `args`.
        for slot in 0..4 {
            assert!(cpu.contains(&format!("getelementptr ptr, ptr %launch.args, i64 {slot}")));
        }
        assert!(!cpu.contains("i64 4\n"));
        // The body is internal and takes register values (bool as i1).
        assert!(amd.contains("define internal void @\"__iris_fn_k\"({ ptr addrspace(1), i64, ptr addrspace(1) } %p0, i1 %p1)"), "{amd}");
        assert!(
            cpu.contains(
                "define internal void @\"__iris_fn_k\"(ptr %ctx, { ptr, i64, ptr } %p0, i1 %p1)"
            ),
            "{cpu}"
        );
    }

    #[test]
    fn scopes_are_named_per_target() {
        let line = |target, scope| {
            let ir = lower_unit(&kernel(vec![atomic_add(scope)], Type::Unit), target).unwrap();
            ir.lines()
                .find(|l| l.contains("atomicrmw") || l.contains("atom."))
                .unwrap()
                .to_string()
        };
        assert!(line(Target::Gfx90a, MemScope::Device).contains("syncscope(\"agent\") release"));
        assert!(line(Target::Gfx90a, MemScope::Block).contains("syncscope(\"workgroup\") release"));
        assert!(!line(Target::Gfx90a, MemScope::System).contains("syncscope"));
        assert!(line(Target::Sm80, MemScope::System).contains("atom.release.sys.global.add.u32"));
        assert!(line(Target::Sm80, MemScope::Device).contains("atom.release.gpu.global.add.u32"));
        assert!(line(Target::Sm80, MemScope::Block).contains("atom.release.cta.global.add.u32"));
        assert!(!line(Target::Cpu, MemScope::Block).contains("syncscope"));
    }

    #[test]
    fn peer_checks_guard_the_translation_only_when_asked() {
        let plain = kernel(vec![atomic_add(MemScope::System)], Type::Unit);
        let mut checked = plain.clone();
        checked.peer_checks = true;
        for target in [Target::Gfx942, Target::Sm90, Target::Cpu] {
            let on = lower_unit(&checked, target).unwrap();
            let off = lower_unit(&plain, target).unwrap();
            let cas = if target == Target::Sm90 {
                "atom.relaxed.sys.global.cas.b64"
            } else {
                "cmpxchg"
            };
            for part in [
                "icmp ult i64",
                "@llvm.expect.i1",
                "i64 -32",
                "select i1",
                cas,
            ] {
                assert!(on.contains(part), "{target:?} lacks `{part}`:\n{on}");
                assert!(!off.contains(part), "{target:?} has `{part}`:\n{off}");
            }
        }
    }

    #[test]
    fn kernels_return_nothing() {
        let err = lower_unit(&kernel(vec![], Type::Scalar(Scalar::U32)), Target::Cpu).unwrap_err();
        assert!(err.contains("returns `u32`"), "{err}");
    }

    #[test]
    fn unresolved_types_and_stray_jumps_are_errors_not_panics() {
        let int_var = Stmt::Expr(e(ExprKind::Int(1), Type::IntVar(0)));
        let err = lower_unit(&kernel(vec![int_var], Type::Unit), Target::Gfx942).unwrap_err();
        assert!(err.contains("in `k`"), "{err}");
        let brk = Stmt::Expr(e(ExprKind::Break, Type::Never));
        let err = lower_unit(&kernel(vec![brk], Type::Unit), Target::Sm90).unwrap_err();
        assert!(err.contains("`break` outside a loop"), "{err}");
        let bad_param = {
            let mut u = kernel(vec![], Type::Unit);
            u.functions[0].locals[1].ty = Type::Unit;
            u
        };
        let err = lower_unit(&bad_param, Target::Cpu).unwrap_err();
        assert!(err.contains("parameter `flag`"), "{err}");
    }

    #[test]
    fn cpu_shared_layout_aligns_each_array_to_16() {
        let arrays = [
            SharedArray {
                elem: Type::Scalar(Scalar::U8),
                len: 3,
            },
            SharedArray {
                elem: Type::Scalar(Scalar::F64),
                len: 2,
            },
        ];
        assert_eq!(cpu_shared_bytes(&arrays).unwrap(), 32);
        assert_eq!(shared::cpu_layout(&arrays).unwrap().0, vec![0, 16]);
    }

    /// A small array declared before large ones (a kernel's one status word, then its
    /// warpgroup tiles) does not move them off 1024-byte boundaries: large arrays go first.
    #[test]
    fn shared_layout_keeps_large_arrays_on_1024_byte_boundaries() {
        let array = |elem: Scalar, len: u64| SharedArray {
            elem: Type::Scalar(elem),
            len,
        };
        let arrays = [
            array(Scalar::U32, 1),
            array(Scalar::U16, 32768),
            array(Scalar::U16, 65536),
            array(Scalar::U8, 3),
            array(Scalar::U8, 1500),
            array(Scalar::F64, 2),
        ];
        let (offsets, total) = shared::cpu_layout(&arrays).unwrap();
        // The large ones in order from 0 (64 KiB, 128 KiB, 1500 bytes: ending at 198108),
        // then the small ones in order, each on the next multiple of 16.
        assert_eq!(offsets, vec![198112, 0, 65536, 198128, 196608, 198144]);
        assert_eq!(total, 198160);
        for (i, a) in arrays.iter().enumerate() {
            if u64::from(a.elem.size().unwrap()) * a.len >= 1024 {
                assert_eq!(offsets[i] % 1024, 0, "array {i} at {}", offsets[i]);
            }
        }
    }
}
