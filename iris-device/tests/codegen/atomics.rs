//! Atomics keep their ordering and scope: system scope is `.sys` in PTX and LLVM's system
//! scope on AMD (no `agent`), device scope is `.gpu` / `agent`. On NVIDIA every
//! read-modify-write is inline `atom.<sem>.<scope>.global.<op>`.

use crate::common::ir::*;
use crate::common::tools::*;
use iris_device::abi::TargetKind;
use iris_device::compiler::kernel_ir::*;
use iris_device::compiler::{buildable, Target, ALL_TARGETS};

/// A kernel `name(p: Symmetric<elem>, v: elem, peer: u32)` whose body is one intrinsic.
fn atomic_kernel(name: &str, elem: Type, op: Op) -> Function {
    let mut f = Func::kernel(name);
    let p = f.param("p", t::sym(elem.clone()));
    let v = f.param("v", elem.clone());
    let peer = f.param("peer", t::u32());
    let (args, ty) = match &op {
        Op::AtomicRmw { .. } => (vec![p, v, peer], elem),
        Op::AtomicCas { .. } => (vec![p, v.clone(), v, peer], elem),
        Op::AtomicLoad { .. } => (vec![p, peer], elem),
        Op::AtomicStore { .. } => (vec![p, v, peer], t::unit()),
        Op::Fence { .. } => (vec![], t::unit()),
        other => panic!("{other:?}"),
    };
    // Keep the result alive: store it back locally.
    let call = intr(op, args, ty.clone());
    let body = if ty == Type::Unit {
        stmts(vec![s(call)])
    } else {
        let out = f.param("out", t::ptr(ty.clone()));
        stmts(vec![s(assign(Place::Deref(out), call))])
    };
    f.finish(body)
}

fn rmw(op: RmwOp, order: MemOrder, scope: MemScope) -> Op {
    Op::AtomicRmw { op, order, scope }
}

fn only(name: &str, f: Function) -> Unit {
    unit(name, vec![f])
}

#[test]
fn system_scope_is_system_and_device_scope_is_device() {
    let sys = only(
        "sys_add",
        atomic_kernel(
            "sys_add",
            t::u32(),
            rmw(RmwOp::Add, MemOrder::Release, MemScope::System),
        ),
    );
    let dev = only(
        "dev_add",
        atomic_kernel(
            "dev_add",
            t::u32(),
            rmw(RmwOp::Add, MemOrder::Release, MemScope::Device),
        ),
    );
    for &target in &buildable(&ALL_TARGETS) {
        let s = compile(&sys, target);
        let d = compile(&dev, target);
        match target.kind() {
            TargetKind::Nvptx => {
                let (sp, dp) = (ptx(&s), ptx(&d));
                assert!(sp.contains("atom.release.sys.global.add.u32"), "{sp}");
                assert!(dp.contains("atom.release.gpu.global.add.u32"), "{dp}");
                for p in [&sp, &dp] {
                    assert!(
                        !p.contains("atom.global"),
                        "an atom without ordering and scope:\n{p}"
                    );
                }
            }
            TargetKind::Amdgpu => {
                let line = |ir: &str| {
                    ir.lines()
                        .find(|l| l.contains("atomicrmw add"))
                        .unwrap_or_else(|| panic!("no atomicrmw in\n{ir}"))
                        .to_string()
                };
                let (sl, dl) = (line(&s.opt), line(&d.opt));
                assert!(
                    !sl.contains("syncscope"),
                    "system scope has no syncscope: {sl}"
                );
                assert!(sl.contains(" release"), "{sl}");
                assert!(dl.contains("syncscope(\"agent\") release"), "{dl}");
                let (sa, da) = (disassemble(&s.object), disassemble(&d.object));
                assert!(sa.contains("global_atomic_add"), "{sa}");
                assert!(da.contains("global_atomic_add"), "{da}");
                if target == Target::Gfx942 || target == Target::Gfx950 {
                    // The release writes back L2 to system scope (sc0 sc1) for the system
                    // atomic, only to device scope (sc1) for the device one; the system
                    // atomic itself carries sc1 (system coherence).
                    assert!(sa.contains("buffer_wbl2 sc0 sc1"), "{sa}");
                    assert!(
                        da.contains("buffer_wbl2 sc1") && !da.contains("buffer_wbl2 sc0 sc1"),
                        "{da}"
                    );
                    let atomic = |a: &str| {
                        a.lines()
                            .filter(|l| l.contains("global_atomic_add"))
                            .map(str::to_string)
                            .collect::<Vec<_>>()
                    };
                    assert!(atomic(&sa).iter().all(|l| l.contains("sc1")), "{sa}");
                    assert!(atomic(&da).iter().all(|l| !l.contains("sc1")), "{da}");
                }
            }
            TargetKind::Cpu => {
                assert!(s.opt.contains("atomicrmw add") && !s.opt.contains("syncscope"));
                assert!(!d.opt.contains("syncscope"), "the CPU has one scope");
            }
        }
    }
}

/// Every atomic operation, ordering and scope: compiles everywhere; the PTX names each.
#[test]
fn every_atomic_compiles_and_ptx_keeps_order_and_scope() {
    use MemOrder::*;
    use MemScope::*;
    let cases: Vec<(Function, &str)> = vec![
        (
            atomic_kernel(
                "add_u64_relaxed_block",
                t::u64(),
                rmw(RmwOp::Add, Relaxed, Block),
            ),
            "atom.relaxed.cta.global.add.u64",
        ),
        (
            atomic_kernel(
                "add_f32_acqrel_sys",
                t::f32(),
                rmw(RmwOp::Add, AcqRel, System),
            ),
            "atom.acq_rel.sys.global.add.f32",
        ),
        (
            atomic_kernel(
                "add_f64_acquire_dev",
                t::f64(),
                rmw(RmwOp::Add, Acquire, Device),
            ),
            "atom.acquire.gpu.global.add.f64",
        ),
        (
            atomic_kernel(
                "sub_i32_seqcst_sys",
                t::i32(),
                rmw(RmwOp::Sub, SeqCst, System),
            ),
            "fence.sc.sys;\n\tatom.acq_rel.sys.global.add.u32",
        ),
        (
            atomic_kernel(
                "sub_f32_release_sys",
                t::f32(),
                rmw(RmwOp::Sub, Release, System),
            ),
            "atom.release.sys.global.add.f32",
        ),
        (
            atomic_kernel("and_u32", t::u32(), rmw(RmwOp::And, AcqRel, System)),
            "atom.acq_rel.sys.global.and.b32",
        ),
        (
            atomic_kernel("or_u64", t::u64(), rmw(RmwOp::Or, Relaxed, Device)),
            "atom.relaxed.gpu.global.or.b64",
        ),
        (
            atomic_kernel("xor_i64", t::i64(), rmw(RmwOp::Xor, Acquire, Block)),
            "atom.acquire.cta.global.xor.b64",
        ),
        (
            atomic_kernel("min_i32", t::i32(), rmw(RmwOp::Min, Relaxed, System)),
            "atom.relaxed.sys.global.min.s32",
        ),
        (
            atomic_kernel("min_u64", t::u64(), rmw(RmwOp::Min, Relaxed, System)),
            "atom.relaxed.sys.global.min.u64",
        ),
        (
            atomic_kernel("max_i64", t::i64(), rmw(RmwOp::Max, Release, Device)),
            "atom.release.gpu.global.max.s64",
        ),
        (
            atomic_kernel("max_u32", t::u32(), rmw(RmwOp::Max, Release, Device)),
            "atom.release.gpu.global.max.u32",
        ),
        (
            atomic_kernel("xchg_u32", t::u32(), rmw(RmwOp::Xchg, SeqCst, Device)),
            "fence.sc.gpu;\n\tatom.acq_rel.gpu.global.exch.b32",
        ),
        (
            atomic_kernel("xchg_f64", t::f64(), rmw(RmwOp::Xchg, Relaxed, System)),
            "atom.relaxed.sys.global.exch.b64",
        ),
        (
            atomic_kernel(
                "cas_u32_acqrel_sys",
                t::u32(),
                Op::AtomicCas {
                    order: AcqRel,
                    scope: System,
                },
            ),
            "atom.acq_rel.sys.global.cas.b32",
        ),
        (
            atomic_kernel(
                "cas_i64_acquire_block",
                t::i64(),
                Op::AtomicCas {
                    order: Acquire,
                    scope: Block,
                },
            ),
            "atom.acquire.cta.global.cas.b64",
        ),
        (
            atomic_kernel(
                "load_acquire_sys",
                t::u32(),
                Op::AtomicLoad {
                    order: Acquire,
                    scope: System,
                },
            ),
            "ld.acquire.sys.global",
        ),
        (
            atomic_kernel(
                "load_relaxed_dev",
                t::u64(),
                Op::AtomicLoad {
                    order: Relaxed,
                    scope: Device,
                },
            ),
            "ld.relaxed.gpu.global",
        ),
        (
            atomic_kernel(
                "store_release_sys",
                t::u32(),
                Op::AtomicStore {
                    order: Release,
                    scope: System,
                },
            ),
            "st.release.sys.global",
        ),
        (
            atomic_kernel(
                "store_relaxed_block",
                t::f32(),
                Op::AtomicStore {
                    order: Relaxed,
                    scope: Block,
                },
            ),
            "st.relaxed.cta.global",
        ),
        (
            atomic_kernel(
                "fence_seqcst_sys",
                t::u32(),
                Op::Fence {
                    order: SeqCst,
                    scope: System,
                },
            ),
            "fence.sc.sys",
        ),
        (
            atomic_kernel(
                "fence_acqrel_sys",
                t::u32(),
                Op::Fence {
                    order: AcqRel,
                    scope: System,
                },
            ),
            "fence.acq_rel.sys",
        ),
        (
            atomic_kernel(
                "fence_release_dev",
                t::u32(),
                Op::Fence {
                    order: Release,
                    scope: Device,
                },
            ),
            "fence.acq_rel.gpu",
        ),
        (
            atomic_kernel(
                "fence_acquire_block",
                t::u32(),
                Op::Fence {
                    order: Acquire,
                    scope: Block,
                },
            ),
            "fence.acq_rel.cta",
        ),
    ];
    for (f, expected) in cases {
        let name = f.name.clone();
        let u = only(&name, f);
        for &target in &buildable(&ALL_TARGETS) {
            let out = compile(&u, target);
            if target.kind() == TargetKind::Nvptx {
                let p = ptx(&out);
                for expected in nvptx_form(expected) {
                    assert!(
                        p.contains(&expected),
                        "{name} on {}: no `{expected}` in\n{p}",
                        target.name()
                    );
                }
                assert!(
                    !p.contains("atom.global"),
                    "{name}: an atom without ordering and scope:\n{p}"
                );
            }
        }
    }
}

/// What LLVM 22's PTX `expected` is with this LLVM: itself, or before 22 for loads and
/// stores (`ld.acquire.sys.global`), the relaxed access (`ld.volatile.global`) and for an
/// ordering its fence (`fence.acq_rel.sys`).
fn nvptx_form(expected: &str) -> Vec<String> {
    let parts: Vec<&str> = expected.split('.').collect();
    if nvptx_like_llvm22() || !matches!(parts[0], "ld" | "st") {
        return vec![expected.to_string()];
    }
    let mut forms = vec![format!("{}.volatile.global", parts[0])];
    if parts[1] != "relaxed" {
        forms.push(format!("fence.acq_rel.{}", parts[2]));
    }
    forms
}

/// Atomic loads and stores of every scalar width compile everywhere.
#[test]
fn atomic_loads_and_stores_of_every_scalar() {
    use MemOrder::*;
    use MemScope::*;
    for sc in [
        Scalar::Bool,
        Scalar::I8,
        Scalar::U16,
        Scalar::F16,
        Scalar::BF16,
        Scalar::I32,
        Scalar::F32,
        Scalar::U64,
        Scalar::F64,
    ] {
        let name = format!("ldst_{}", sc.name());
        let mut f = Func::kernel(&name);
        let p = f.param("p", t::sym(t::s(sc)));
        let peer = f.param("peer", t::u32());
        let load = intr(
            Op::AtomicLoad {
                order: Acquire,
                scope: System,
            },
            vec![p.clone(), peer.clone()],
            t::s(sc),
        );
        let store = intr(
            Op::AtomicStore {
                order: Release,
                scope: Device,
            },
            vec![p, load, peer],
            t::unit(),
        );
        let u = only(&name, f.finish(stmts(vec![s(store)])));
        for &target in &buildable(&ALL_TARGETS) {
            compile(&u, target);
        }
    }
}
