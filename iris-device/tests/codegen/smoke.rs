//! Every target compiles the all-gather kernel, serially and from concurrent threads with
//! the same result: after lowering (which reads the unit, whose spans are not `Sync`),
//! LLVM and the linker may run for several targets in parallel.

use crate::common::tools::*;
use crate::kernels;
use iris_device::compiler::{buildable, code_object, llvm, ALL_TARGETS};

#[test]
fn all_gather_compiles_for_every_target() {
    let unit = kernels::all_gather();
    for out in compile_all(&unit) {
        assert!(!out.object.is_empty(), "{}", out.target.name());
    }
}

#[test]
fn concurrent_compilation_gives_the_same_objects() {
    let unit = kernels::all_gather();
    let serial: Vec<Vec<u8>> = buildable(&ALL_TARGETS)
        .iter()
        .map(|&t| compile(&unit, t).object)
        .collect();
    let lowered: Vec<String> = buildable(&ALL_TARGETS)
        .iter()
        .map(|&t| llvm::lower_unit(&unit, t).expect("lower"))
        .collect();
    let parallel: Vec<Vec<u8>> = std::thread::scope(|s| {
        let handles: Vec<_> = buildable(&ALL_TARGETS)
            .iter()
            .zip(&lowered)
            .map(|(&t, ir)| {
                s.spawn(move || {
                    let emitted = llvm::codegen(ir, t, "all_gather", None).expect("codegen");
                    code_object::package(t, &emitted).expect("package")
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("thread"))
            .collect()
    });
    for ((t, a), b) in buildable(&ALL_TARGETS).iter().zip(&serial).zip(&parallel) {
        assert!(
            a == b,
            "{}: objects differ between serial and concurrent builds",
            t.name()
        );
    }
}
