//! LLVM IR text -> optimised module -> object bytes (or PTX text), through llvm-sys.
//!
//! Per call: a fresh context, the IR parsed and verified (a verifier failure is a compiler
//! bug and comes back with the IR), a target machine for the target's triple and
//! processor (position-independent, `-O3`), `default<O3>`, then emission. With a dump
//! directory, the IR before and after optimisation and the assembly are written there.

mod dump;
mod ffi;

use super::super::Target;
use crate::abi::TargetKind;
use dump::Dumper;
use ffi::{cstring, take_message, Context, MemoryBuffer, Module, PassOptions, TargetMachine};
use llvm_sys::analysis::{LLVMVerifierFailureAction, LLVMVerifyModule};
use llvm_sys::core::{
    LLVMCloneModule, LLVMCreateMemoryBufferWithMemoryRangeCopy, LLVMPrintModuleToString,
};
use llvm_sys::error::{LLVMDisposeErrorMessage, LLVMGetErrorMessage};
use llvm_sys::ir_reader::LLVMParseIRInContext2;
use llvm_sys::target::{LLVMDisposeTargetData, LLVMSetModuleDataLayout};
use llvm_sys::target_machine::{
    LLVMCodeGenFileType, LLVMCodeGenOptLevel, LLVMCodeModel, LLVMCreateTargetDataLayout,
    LLVMCreateTargetMachine, LLVMGetTargetFromTriple, LLVMRelocMode,
    LLVMTargetMachineEmitToMemoryBuffer, LLVMTargetRef,
};
use llvm_sys::transforms::pass_builder::LLVMRunPasses;
use std::ffi::CStr;
use std::path::Path;
use std::ptr;

/// What LLVM emitted for one target: an object file, or PTX text.
pub type Emitted = Vec<u8>;

/// Parses, optimises and emits `ir` for `target`.
///
/// AMDGPU and CPU targets give an object file, NVPTX gives PTX text. With `dump`, writes
/// `<unit>.<target>.ll`, `.opt.ll` and `.s` into that directory (created if missing).
pub fn codegen(
    ir: &str,
    target: Target,
    unit_name: &str,
    dump: Option<&Path>,
) -> Result<Emitted, String> {
    ffi::init_targets();
    let dumper = dump
        .map(|dir| Dumper::new(dir, unit_name, target))
        .transpose()?;
    if let Some(d) = &dumper {
        d.write("ll", ir.as_bytes())?;
    }
    let ctx = Context::new();
    let module = parse(&ctx, ir)?;
    verify(&module, ir)?;
    let tm = target_machine(target)?;
    set_data_layout(&module, &tm);
    optimise(&module, &tm)?;
    if let Some(d) = &dumper {
        d.write("opt.ll", print_module(&module).as_bytes())?;
    }
    match target.kind() {
        TargetKind::Nvptx => {
            let ptx = emit(&tm, &module, LLVMCodeGenFileType::LLVMAssemblyFile)?;
            if let Some(d) = &dumper {
                d.write("s", &ptx)?;
            }
            Ok(ptx)
        }
        TargetKind::Amdgpu | TargetKind::Cpu => {
            if let Some(d) = &dumper {
                // Code generation changes the module: the assembly comes from a copy.
                // SAFETY: cloning a live module into the same context.
                let copy = Module(unsafe { LLVMCloneModule(module.0) });
                let asm = emit(&tm, &copy, LLVMCodeGenFileType::LLVMAssemblyFile)?;
                d.write("s", &asm)?;
            }
            emit(&tm, &module, LLVMCodeGenFileType::LLVMObjectFile)
        }
    }
}

/// The data layout string LLVM's target machine for `target` uses (for tests that check
/// the lowering's layouts).
pub fn target_data_layout(target: Target) -> Result<String, String> {
    ffi::init_targets();
    let tm = target_machine(target)?;
    // SAFETY: the target machine is alive; the layout and its string are released here.
    unsafe {
        let td = LLVMCreateTargetDataLayout(tm.0);
        let s = llvm_sys::target::LLVMCopyStringRepOfTargetData(td);
        LLVMDisposeTargetData(td);
        Ok(take_message(s))
    }
}

fn parse(ctx: &Context, ir: &str) -> Result<Module, String> {
    let name = cstring("iris", "buffer name")?;
    // SAFETY: the buffer copies `ir` and is released on return (the parser does not take
    // it); the message is released by take_message.
    unsafe {
        let buf = MemoryBuffer(LLVMCreateMemoryBufferWithMemoryRangeCopy(
            ir.as_ptr().cast(),
            ir.len(),
            name.as_ptr(),
        ));
        let mut module = ptr::null_mut();
        let mut msg = ptr::null_mut();
        if LLVMParseIRInContext2(ctx.0, buf.0, &mut module, &mut msg) != 0 {
            let text = take_message(msg);
            return Err(format!(
                "LLVM could not parse the generated IR (a compiler bug): {text}\n{}",
                numbered(ir)
            ));
        }
        take_message(msg);
        Ok(Module(module))
    }
}

fn verify(module: &Module, ir: &str) -> Result<(), String> {
    let mut msg = ptr::null_mut();
    // SAFETY: the module is alive; the message is released by take_message.
    let failed = unsafe {
        LLVMVerifyModule(
            module.0,
            LLVMVerifierFailureAction::LLVMReturnStatusAction,
            &mut msg,
        )
    } != 0;
    // SAFETY: `msg` is null or an LLVM message.
    let text = unsafe { take_message(msg) };
    if failed {
        return Err(format!(
            "the generated IR is invalid (a compiler bug): {text}\n{}",
            numbered(ir)
        ));
    }
    Ok(())
}

fn target_machine(target: Target) -> Result<TargetMachine, String> {
    let triple = cstring(target.triple(), "triple")?;
    let cpu = cstring(target.cpu(), "cpu")?;
    let features = cstring(target.features(), "features")?;
    let mut t: LLVMTargetRef = ptr::null_mut();
    let mut err = ptr::null_mut();
    // SAFETY: valid C strings; the error message is released by take_message.
    unsafe {
        if LLVMGetTargetFromTriple(triple.as_ptr(), &mut t, &mut err) != 0 {
            return Err(format!(
                "LLVM has no target for `{}`: {}",
                target.triple(),
                take_message(err)
            ));
        }
        take_message(err);
        let tm = LLVMCreateTargetMachine(
            t,
            triple.as_ptr(),
            cpu.as_ptr(),
            features.as_ptr(),
            LLVMCodeGenOptLevel::LLVMCodeGenLevelAggressive,
            LLVMRelocMode::LLVMRelocPIC,
            LLVMCodeModel::LLVMCodeModelDefault,
        );
        if tm.is_null() {
            return Err(format!(
                "LLVM could not create a target machine for `{}` / `{}`",
                target.triple(),
                target.cpu()
            ));
        }
        Ok(TargetMachine(tm))
    }
}

fn set_data_layout(module: &Module, tm: &TargetMachine) {
    // SAFETY: both alive; the module copies the layout, which is then released.
    unsafe {
        let td = LLVMCreateTargetDataLayout(tm.0);
        LLVMSetModuleDataLayout(module.0, td);
        LLVMDisposeTargetData(td);
    }
}

fn optimise(module: &Module, tm: &TargetMachine) -> Result<(), String> {
    // After inlining, generic pointers that LLVM can trace to block-shared or global
    // memory get their address space back, and the checks made on them (fragment loads
    // test for shared memory and alignment) fold. A lone `instcombine` checks that one
    // run reached a fixpoint and aborts the process when it did not (some loop nests
    // need two): `no-verify-fixpoint` keeps the result and goes on.
    let passes = cstring(
        "default<O3>,function(infer-address-spaces,instcombine<no-verify-fixpoint>,simplifycfg)",
        "pipeline",
    )?;
    let opts = PassOptions::new();
    // SAFETY: module, target machine and options are alive; an error is released here.
    unsafe {
        let err = LLVMRunPasses(module.0, passes.as_ptr(), tm.0, opts.0);
        if !err.is_null() {
            let msg = LLVMGetErrorMessage(err);
            let text = CStr::from_ptr(msg).to_string_lossy().into_owned();
            LLVMDisposeErrorMessage(msg);
            return Err(format!("the optimisation pipeline failed: {text}"));
        }
    }
    Ok(())
}

fn emit(tm: &TargetMachine, module: &Module, kind: LLVMCodeGenFileType) -> Result<Vec<u8>, String> {
    let mut err = ptr::null_mut();
    let mut buf = ptr::null_mut();
    // SAFETY: alive target machine and module; the buffer and message are released.
    unsafe {
        if LLVMTargetMachineEmitToMemoryBuffer(tm.0, module.0, kind, &mut err, &mut buf) != 0 {
            return Err(format!("code generation failed: {}", take_message(err)));
        }
        take_message(err);
        if buf.is_null() {
            return Err("code generation produced nothing".into());
        }
        Ok(MemoryBuffer(buf).to_vec())
    }
}

fn print_module(module: &Module) -> String {
    // SAFETY: alive module; the string is released by take_message.
    unsafe { take_message(LLVMPrintModuleToString(module.0)) }
}

/// The IR with line numbers, for error messages.
fn numbered(ir: &str) -> String {
    ir.lines()
        .enumerate()
        .map(|(i, l)| format!("{:5} {l}\n", i + 1))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unparsable_ir_is_an_error_with_the_ir() {
        let err = codegen("this is not IR", Target::Sm90, "bad", None).unwrap_err();
        assert!(err.contains("could not parse"), "{err}");
        assert!(err.contains("1 this is not IR"), "{err}");
    }

    #[test]
    fn invalid_ir_is_a_verifier_error() {
        // Parses, but the block has no terminator.
        let ir = "define void @f() {\nentry:\n  %x = add i32 1, 2\n}\n";
        let err = codegen(ir, Target::Cpu, "bad", None).unwrap_err();
        assert!(
            err.contains("could not parse") || err.contains("invalid"),
            "{err}"
        );
        let ir = "define i32 @f(i32 %a) {\nentry:\n  br label %next\nnext:\n  ret i32 %b\nother:\n  %b = add i32 %a, 1\n  br label %next\n}\n";
        let err = codegen(ir, Target::Cpu, "bad", None).unwrap_err();
        assert!(err.contains("invalid") && err.contains("dominate"), "{err}");
    }

    #[test]
    fn dumps_ir_optimised_ir_and_assembly() {
        let dir = std::env::temp_dir().join(format!("iris-dump-test-{}", std::process::id()));
        let ir = "define void @f() {\n  ret void\n}\n";
        for target in [Target::Gfx942, Target::Sm80, Target::Cpu] {
            let out = codegen(ir, target, "unit.name", Some(&dir)).unwrap();
            assert!(!out.is_empty());
            for ext in ["ll", "opt.ll", "s"] {
                let path = dir.join(format!("unit_name.{}.{ext}", target.name()));
                let text = std::fs::read_to_string(&path).unwrap();
                assert!(!text.is_empty(), "{}", path.display());
            }
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
