//! 16-byte vectors stay single 16-byte memory instructions, locally and after translation
//! to a peer (`global_load_dwordx4` / `global_store_dwordx4`, `ld.global.v4` /
//! `st.global.v4`).

use crate::common::tools::*;
use crate::kernels;
use iris_device::abi::TargetKind;
use iris_device::compiler::{buildable, ALL_TARGETS};

fn check(unit: iris_device::compiler::kernel_ir::Unit) {
    for &target in &buildable(&ALL_TARGETS) {
        let out = compile(&unit, target);
        match target.kind() {
            TargetKind::Amdgpu => {
                let asm = disassemble(&out.object);
                assert!(
                    asm.contains("global_load_dwordx4"),
                    "{}: no 16-byte load:\n{asm}",
                    target.name()
                );
                assert!(
                    asm.contains("global_store_dwordx4"),
                    "{}: no 16-byte store:\n{asm}",
                    target.name()
                );
                for narrow in [
                    "global_load_dword ",
                    "global_store_dword ",
                    "flat_load",
                    "flat_store",
                ] {
                    assert!(
                        !asm.contains(narrow),
                        "{}: `{narrow}` in\n{asm}",
                        target.name()
                    );
                }
            }
            TargetKind::Nvptx => {
                let ptx = ptx(&out);
                assert!(ptx.contains("ld.global.v4"), "no ld.global.v4:\n{ptx}");
                assert!(ptx.contains("st.global.v4"), "no st.global.v4:\n{ptx}");
                for narrow in [
                    "ld.global.b32",
                    "st.global.b32",
                    "ld.global.f32",
                    "st.global.f32",
                    "\tld.v4",
                    "\tst.v4",
                ] {
                    assert!(!ptx.contains(narrow), "`{narrow}` in\n{ptx}");
                }
            }
            TargetKind::Cpu => {
                assert!(out.opt.contains("<4 x float>"), "{}", out.opt);
            }
        }
        // In the IR the vector access is one 16-byte aligned instruction.
        assert!(
            out.opt.contains("load <4 x float>") && out.opt.contains("align 16"),
            "{}:\n{}",
            target.name(),
            out.opt
        );
    }
}

#[test]
fn local_vector_copy_is_16_bytes() {
    check(kernels::vector_copy());
}

#[test]
fn translated_vector_store_is_16_bytes() {
    check(kernels::vector_put());
}

#[test]
fn translated_vector_load_is_16_bytes() {
    check(kernels::vector_get());
}
