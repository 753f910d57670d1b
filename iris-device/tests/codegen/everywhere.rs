//! Every unit of the tests compiles for every target into a code object that needs
//! nothing from outside: no undefined symbols in AMD and CPU objects, no external
//! functions in PTX, no calls at all on the GPUs (device functions are inlined).

use crate::common::tools::*;
use crate::semantics::{casts_unit, float_ops_unit, int_ops_src, BLOCK, FLOW};
use crate::source::unit_from_source;
use iris_device::abi::TargetKind;
use iris_device::compiler::kernel_ir::{Scalar, Unit};
use iris_device::compiler::{buildable, ALL_TARGETS};

fn units() -> Vec<Unit> {
    use Scalar::*;
    let mut units = Vec::new();
    for s in [
        Bool, I8, I16, I32, I64, U8, U16, U32, U64, F16, BF16, F32, F64,
    ] {
        if s != Bool {
            units.push(casts_unit(s));
        }
    }
    for s in [F16, BF16, F32, F64] {
        units.push(float_ops_unit(s));
    }
    for (t, signed) in [("i8", true), ("u16", false), ("i32", true), ("u64", false)] {
        units.push(unit_from_source(
            &format!("int_ops_{t}"),
            &int_ops_src(t, signed),
        ));
    }
    units.push(unit_from_source("flow", FLOW));
    units.push(unit_from_source("block", BLOCK));
    units.push(unit_from_source("all_gather", crate::source::ALL_GATHER));
    units.push(crate::abi::every_param().0);
    units
}

#[test]
fn every_unit_compiles_everywhere_and_is_self_contained() {
    for unit in units() {
        for &target in &buildable(&ALL_TARGETS) {
            let out = compile(&unit, target);
            let what = format!("{} for {}", unit.name, target.name());
            match target.kind() {
                TargetKind::Nvptx => {
                    let p = ptx(&out);
                    assert!(!p.contains(".extern"), "{what}: external function in\n{p}");
                    assert!(!p.contains("call."), "{what}: a call in\n{p}");
                }
                TargetKind::Amdgpu => {
                    crate::abi::assert_undefined_only_null(&dyn_syms(&out.object));
                    let asm = disassemble(&out.object);
                    assert!(!asm.contains("s_swappc"), "{what}: a call in\n{asm}");
                }
                TargetKind::Cpu => {
                    crate::abi::assert_undefined_only_null(&dyn_syms(&out.object));
                }
            }
        }
    }
}
