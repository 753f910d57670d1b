//! LLVM IR text -> optimised module -> object bytes (or PTX text), through LLVM's C API
//! (the shared library of the LLVM the build found: `api`).
//!
//! Per call: a fresh context, the IR parsed and verified (a verifier failure is a compiler
//! bug and comes back with the IR), a target machine for the target's triple and
//! processor (position-independent, `-O3`), `default<O3>`, then emission. With a dump
//! directory, the IR before and after optimisation and the assembly are written there.
//! NVIDIA before LLVM 22: the address-space tests LLVM 22 folds are folded on the
//! optimised text, which is optimised again (`known_spaces`).

mod api;
mod dump;
mod ffi;
mod known_spaces;

pub use api::{
    LldLink, BINDIR as LLVM_BINDIR, LIBRARY as LLVM_LIBRARY, MAJOR as LLVM_MAJOR,
    VERSION as LLVM_VERSION,
};

/// lld's link function in this process, when the build made the shim and it loaded.
pub fn lld_in_process() -> Option<LldLink> {
    api::llvm().ok()?.lld_link
}

use super::super::Target;
use crate::abi::TargetKind;
use api::Llvm;
use dump::Dumper;
use ffi::{cstring, take_message, Context, MemoryBuffer, Module, PassOptions, TargetMachine};
use std::ffi::{c_int, CStr};
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
    if let Some(why) = target.left_out_by_llvm() {
        // LLVM would abort the process (instruction selection), not return an error.
        return Err(why.to_string());
    }
    let llvm = api::llvm()?;
    let dumper = dump
        .map(|dir| Dumper::new(dir, unit_name, target))
        .transpose()?;
    if let Some(d) = &dumper {
        d.write("ll", ir.as_bytes())?;
    }
    let ctx = Context::new(llvm);
    let mut module = parse(&ctx, ir)?;
    verify(&module, ir)?;
    let tm = target_machine(llvm, target)?;
    set_data_layout(&module, &tm);
    optimise(&module, &tm)?;
    if target.kind() == TargetKind::Nvptx && api::MAJOR < 22 {
        let (folded, count) = known_spaces::fold_known_spaces(&print_module(&module));
        if count > 0 {
            let again = parse(&ctx, &folded)?;
            verify(&again, &folded)?;
            set_data_layout(&again, &tm);
            optimise(&again, &tm)?;
            module = again;
        }
    }
    if let Some(d) = &dumper {
        d.write("opt.ll", print_module(&module).as_bytes())?;
    }
    match target.kind() {
        TargetKind::Nvptx => {
            let ptx = emit(&tm, &module, api::ASSEMBLY_FILE)?;
            if let Some(d) = &dumper {
                d.write("s", &ptx)?;
            }
            Ok(ptx)
        }
        TargetKind::Amdgpu | TargetKind::Cpu => {
            if let Some(d) = &dumper {
                // Code generation changes the module: the assembly comes from a copy.
                // SAFETY: cloning a live module into the same context.
                let copy = Module(llvm, unsafe { (llvm.LLVMCloneModule)(module.1) });
                let asm = emit(&tm, &copy, api::ASSEMBLY_FILE)?;
                d.write("s", &asm)?;
            }
            emit(&tm, &module, api::OBJECT_FILE)
        }
    }
}

/// The data layout string LLVM's target machine for `target` uses (for tests that check
/// the lowering's layouts).
pub fn target_data_layout(target: Target) -> Result<String, String> {
    let llvm = api::llvm()?;
    let tm = target_machine(llvm, target)?;
    // SAFETY: the target machine is alive; the layout and its string are released here.
    unsafe {
        let td = (llvm.LLVMCreateTargetDataLayout)(tm.1);
        let s = (llvm.LLVMCopyStringRepOfTargetData)(td);
        (llvm.LLVMDisposeTargetData)(td);
        Ok(take_message(llvm, s))
    }
}

fn parse(ctx: &Context, ir: &str) -> Result<Module, String> {
    let llvm = ctx.0;
    let name = cstring("iris", "buffer name")?;
    // SAFETY: the buffer copies `ir`; LLVMParseIRInContext2 leaves it to us (released on
    // return), LLVMParseIRInContext (before LLVM 21) takes it; the message is released by
    // take_message.
    unsafe {
        let buf = MemoryBuffer(
            llvm,
            (llvm.LLVMCreateMemoryBufferWithMemoryRangeCopy)(
                ir.as_ptr().cast(),
                ir.len(),
                name.as_ptr(),
            ),
        );
        let mut module = ptr::null_mut();
        let mut msg = ptr::null_mut();
        let failed = match llvm.LLVMParseIRInContext2 {
            Some(parse2) => parse2(ctx.1, buf.1, &mut module, &mut msg),
            None => (llvm.LLVMParseIRInContext)(ctx.1, buf.hand_over(), &mut module, &mut msg),
        };
        if failed != 0 {
            let text = take_message(llvm, msg);
            return Err(format!(
                "LLVM could not parse the generated IR (a compiler bug): {text}\n{}",
                numbered(ir)
            ));
        }
        take_message(llvm, msg);
        Ok(Module(llvm, module))
    }
}

fn verify(module: &Module, ir: &str) -> Result<(), String> {
    let mut msg = ptr::null_mut();
    let llvm = module.0;
    // SAFETY: the module is alive; the message is released by take_message.
    let failed = unsafe { (llvm.LLVMVerifyModule)(module.1, api::RETURN_STATUS, &mut msg) } != 0;
    // SAFETY: `msg` is null or an LLVM message.
    let text = unsafe { take_message(llvm, msg) };
    if failed {
        return Err(format!(
            "the generated IR is invalid (a compiler bug): {text}\n{}",
            numbered(ir)
        ));
    }
    Ok(())
}

fn target_machine(llvm: &'static Llvm, target: Target) -> Result<TargetMachine, String> {
    let triple = cstring(target.triple(), "triple")?;
    let cpu = cstring(target.cpu(), "cpu")?;
    let features = cstring(target.features(), "features")?;
    let mut t = ptr::null_mut();
    let mut err = ptr::null_mut();
    // SAFETY: valid C strings; the error message is released by take_message.
    unsafe {
        if (llvm.LLVMGetTargetFromTriple)(triple.as_ptr(), &mut t, &mut err) != 0 {
            return Err(format!(
                "LLVM has no target for `{}`: {}",
                target.triple(),
                take_message(llvm, err)
            ));
        }
        take_message(llvm, err);
        let tm = (llvm.LLVMCreateTargetMachine)(
            t,
            triple.as_ptr(),
            cpu.as_ptr(),
            features.as_ptr(),
            api::OPT_AGGRESSIVE,
            api::RELOC_PIC,
            api::CODE_MODEL_DEFAULT,
        );
        if tm.is_null() {
            return Err(format!(
                "LLVM could not create a target machine for `{}` / `{}`",
                target.triple(),
                target.cpu()
            ));
        }
        Ok(TargetMachine(llvm, tm))
    }
}

fn set_data_layout(module: &Module, tm: &TargetMachine) {
    let llvm = tm.0;
    // SAFETY: both alive; the module copies the layout, which is then released.
    unsafe {
        let td = (llvm.LLVMCreateTargetDataLayout)(tm.1);
        (llvm.LLVMSetModuleDataLayout)(module.1, td);
        (llvm.LLVMDisposeTargetData)(td);
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
    let llvm = tm.0;
    let opts = PassOptions::new(llvm);
    // SAFETY: module, target machine and options are alive; an error is released here.
    unsafe {
        let err = (llvm.LLVMRunPasses)(module.1, passes.as_ptr(), tm.1, opts.1);
        if !err.is_null() {
            let msg = (llvm.LLVMGetErrorMessage)(err);
            let text = CStr::from_ptr(msg).to_string_lossy().into_owned();
            (llvm.LLVMDisposeErrorMessage)(msg);
            return Err(format!("the optimisation pipeline failed: {text}"));
        }
    }
    Ok(())
}

fn emit(tm: &TargetMachine, module: &Module, kind: c_int) -> Result<Vec<u8>, String> {
    let llvm = tm.0;
    let mut err = ptr::null_mut();
    let mut buf = ptr::null_mut();
    // SAFETY: alive target machine and module; the buffer and message are released.
    unsafe {
        if (llvm.LLVMTargetMachineEmitToMemoryBuffer)(tm.1, module.1, kind, &mut err, &mut buf) != 0
        {
            return Err(format!(
                "code generation failed: {}",
                take_message(llvm, err)
            ));
        }
        take_message(llvm, err);
        if buf.is_null() {
            return Err("code generation produced nothing".into());
        }
        Ok(MemoryBuffer(llvm, buf).to_vec())
    }
}

fn print_module(module: &Module) -> String {
    // SAFETY: alive module; the string is released by take_message.
    unsafe { take_message(module.0, (module.0.LLVMPrintModuleToString)(module.1)) }
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
