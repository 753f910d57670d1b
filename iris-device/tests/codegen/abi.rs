//! The parameter ABI and code-object packaging, read back from the objects: AMDGPU
//! kernel-argument metadata and target notes, PTX `.param` lists, CPU exports.

use crate::common::ir::*;
use crate::common::tools::*;
use iris_device::abi::ParamKind;
use iris_device::compiler::kernel_ir::*;
use iris_device::compiler::{buildable, llvm, Target};

/// A kernel taking one parameter of each kind; its body uses them all.
pub fn every_param() -> (Unit, Vec<(Type, ParamKind)>) {
    let value = |ty: &Type| ParamKind::Value {
        size: ty.size().expect("size"),
        align: ty.align().expect("align"),
    };
    let tys: Vec<(Type, ParamKind)> = vec![
        (t::sym(t::f32()), ParamKind::Symmetric),
        (t::u32(), value(&t::u32())),
        (t::ptr(t::f32()), ParamKind::Pointer),
        (t::u64(), value(&t::u64())),
        (t::boolean(), value(&t::boolean())),
        (t::s(Scalar::F16), value(&t::s(Scalar::F16))),
        (t::vec("f32x4"), value(&t::vec("f32x4"))),
        (t::s(Scalar::I8), value(&t::s(Scalar::I8))),
        (t::f64(), value(&t::f64())),
        (t::sym(t::vec("u64x2")), ParamKind::Symmetric),
    ];
    let mut f = Func::kernel("every_param");
    let ps: Vec<Expr> = tys
        .iter()
        .enumerate()
        .map(|(i, (ty, _))| f.param(&format!("p{i}"), ty.clone()))
        .collect();
    // out: *mut f32; *out = sum of everything converted, so no parameter is unused.
    let out = f.param("out", t::ptr(t::f32()));
    let as_f32 = |e: Expr| cast(e, t::f32());
    let mut sum = as_f32(ps[1].clone());
    let terms = vec![
        deref(ps[2].clone()),
        as_f32(ps[3].clone()),
        as_f32(cast(ps[4].clone(), t::u32())),
        as_f32(ps[5].clone()),
        intr(Op::VecGet(2), vec![ps[6].clone()], t::f32()),
        as_f32(ps[7].clone()),
        as_f32(ps[8].clone()),
        intr(
            Op::RemoteLoad,
            vec![ps[0].clone(), int(1, t::u32())],
            t::f32(),
        ),
        as_f32(intr(
            Op::VecGet(1),
            vec![intr(
                Op::RemoteLoad,
                vec![ps[9].clone(), int(0, t::u32())],
                t::vec("u64x2"),
            )],
            t::u64(),
        )),
    ];
    for term in terms {
        sum = bin(BinaryOp::Add, sum, term);
    }
    let body = stmts(vec![s(assign(Place::Deref(out), sum))]);
    let mut kinds = tys;
    kinds.push((t::ptr(t::f32()), ParamKind::Pointer));
    (unit("every_param", vec![f.finish(body)]), kinds)
}

/// The slot sizes the ABI prescribes for these parameters.
fn slot_sizes(kinds: &[(Type, ParamKind)]) -> Vec<u32> {
    kinds
        .iter()
        .flat_map(|(_, k)| match k {
            ParamKind::Value { size, .. } => vec![*size],
            ParamKind::Pointer => vec![8],
            ParamKind::Symmetric => vec![8, 8, 8],
        })
        .collect()
}

#[test]
fn amdgpu_argument_metadata_matches_the_signature() {
    let (unit, kinds) = every_param();
    let expected = slot_sizes(&kinds);
    assert_eq!(expected, vec![8, 8, 8, 4, 8, 8, 1, 2, 16, 1, 8, 8, 8, 8, 8]);
    for target in buildable(&[Target::Gfx90a, Target::Gfx942, Target::Gfx950]) {
        let out = compile(&unit, target);
        let notes = notes(&out.object);
        assert_eq!(
            amdgpu_arg_sizes(&notes, "every_param"),
            expected,
            "{}:\n{notes}",
            target.name()
        );
        assert!(notes.contains(".max_flat_workgroup_size: 1024"), "{notes}");
    }
}

#[test]
fn ptx_params_match_the_signature() {
    let (unit, kinds) = every_param();
    let expected = slot_sizes(&kinds);
    for target in [Target::Sm80, Target::Sm90] {
        let out = compile(&unit, target);
        let ptx = ptx(&out);
        let params = ptx_params(&ptx, "every_param");
        let sizes: Vec<u32> = params.iter().map(|p| ptx_param_size(p)).collect();
        assert_eq!(sizes, expected, "{params:#?}");
        assert!(ptx.contains(&format!(".target {}", target.name())), "{ptx}");
    }
}

/// The size in bytes of one PTX `.param` declaration.
fn ptx_param_size(decl: &str) -> u32 {
    if let Some(n) = decl.split('[').nth(1) {
        return n.trim_end_matches(']').parse().expect("array size");
    }
    for (ty, size) in [("64", 8), ("32", 4), ("16", 2), ("8", 1)] {
        if decl
            .split_whitespace()
            .nth(1)
            .is_some_and(|t| t.ends_with(ty))
        {
            return size;
        }
    }
    panic!("unknown parameter {decl}")
}

#[test]
fn amdgpu_code_objects_name_their_processor() {
    let unit = crate::kernels::all_gather();
    for target in buildable(&[Target::Gfx90a, Target::Gfx942, Target::Gfx950]) {
        let out = compile(&unit, target);
        let notes = notes(&out.object);
        let want = format!("amdhsa.target:   amdgcn-amd-amdhsa--{}", target.name());
        assert!(notes.contains(&want), "no `{want}` in\n{notes}");
        assert!(notes.contains(".symbol:         all_gather.kd"), "{notes}");
        assert_eq!(&out.object[..4], b"\x7fELF");
    }
}

#[test]
fn cpu_object_exports_the_kernel_and_needs_nothing() {
    let unit = crate::kernels::all_gather();
    let out = compile(&unit, Target::Cpu);
    let syms = dyn_syms(&out.object);
    assert!(
        syms.lines().any(|l| l.contains("FUNC")
            && l.contains("GLOBAL")
            && l.contains("DEFAULT")
            && l.trim_end().ends_with(" all_gather")),
        "{syms}"
    );
    assert_undefined_only_null(&syms);
    let dynamic = run_tool("llvm-readelf", &["-d"], &out.object);
    assert!(!dynamic.contains("NEEDED"), "{dynamic}");
}

/// No symbol is undefined except the null symbol at index 0.
pub fn assert_undefined_only_null(dyn_syms: &str) {
    let undefined: Vec<&str> = dyn_syms
        .lines()
        .filter(|l| l.contains(" UND ") && !l.trim_start().starts_with("0:"))
        .collect();
    assert!(undefined.is_empty(), "undefined symbols: {undefined:#?}");
}

#[test]
fn ptx_is_nul_terminated_text() {
    let unit = crate::kernels::all_gather();
    let out = compile(&unit, Target::Sm90);
    assert_eq!(out.object.last(), Some(&0));
    assert_eq!(out.object.iter().filter(|&&b| b == 0).count(), 1);
    assert!(ptx(&out).contains(".visible .entry all_gather("));
}

#[test]
fn lowered_data_layouts_are_llvms() {
    for target in iris_device::compiler::ALL_TARGETS {
        let ir = llvm::lower_unit(&crate::kernels::all_gather(), target).expect("lower");
        let want = llvm::target_data_layout(target).expect("layout");
        assert!(
            ir.contains(&format!("target datalayout = \"{want}\"")),
            "{}: LLVM's layout is {want}",
            target.name()
        );
    }
}
