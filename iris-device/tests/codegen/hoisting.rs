//! The peer table is read once, outside the loop, when the peer does not change
//! (`!invariant.load` lets LLVM hoist it).

use crate::common::loops::*;
use crate::common::tools::*;
use crate::kernels;
use iris_device::abi::TargetKind;
use iris_device::compiler::{buildable, ALL_TARGETS};

#[test]
fn table_load_is_hoisted_out_of_the_loop() {
    let unit = kernels::fill_peer();
    for &target in &buildable(&ALL_TARGETS) {
        let out = compile(&unit, target);
        let name = target.name();
        // The optimised IR reads the table once, and no loop reads it.
        let table_loads = out
            .opt
            .lines()
            .filter(|l| l.contains("!invariant.load"))
            .count();
        assert_eq!(
            table_loads, 1,
            "{name}: {table_loads} table loads:\n{}",
            out.opt
        );
        let ir_loops = ir_loops(&out.opt);
        assert!(
            !ir_loops.is_empty(),
            "{name}: no loop found in\n{}",
            out.opt
        );
        for body in &ir_loops {
            assert!(
                body.iter()
                    .any(|l| l.trim_start().starts_with("store ") && l.contains("float")),
                "{name}: a loop without the store"
            );
            assert!(
                !body.iter().any(|l| l.contains("load ")),
                "{name}: a load inside the loop:\n{}",
                body.join("\n")
            );
        }
        // So does the machine code.
        match target.kind() {
            TargetKind::Nvptx => {
                let ptx = ptx(&out);
                let loops = ptx_loops(&ptx);
                assert!(!loops.is_empty(), "no loop in\n{ptx}");
                for body in loops {
                    assert!(
                        body.iter().any(|l| l.contains("st.global")),
                        "{}",
                        body.join("\n")
                    );
                    assert!(
                        !body.iter().any(|l| l.contains("ld.")),
                        "a load in the loop:\n{}",
                        body.join("\n")
                    );
                }
            }
            TargetKind::Amdgpu => {
                let asm = disassemble(&out.object);
                let loops = objdump_loops(&asm);
                assert!(!loops.is_empty(), "{name}: no loop in\n{asm}");
                for body in loops {
                    assert!(
                        body.iter().any(|l| l.contains("global_store")),
                        "{}",
                        body.join("\n")
                    );
                    assert!(
                        !body.iter().any(|l| l.contains("_load")),
                        "{name}: a load in the loop:\n{}",
                        body.join("\n")
                    );
                }
            }
            TargetKind::Cpu => {}
        }
    }
}
