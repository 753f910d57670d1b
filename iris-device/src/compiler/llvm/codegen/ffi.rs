//! Owned LLVM objects (disposed on drop) and target initialisation.
//!
//! The macro compiles many kernels in one compiler process, so everything created here is
//! released: a context (which owns its modules' memory), a module, a target machine, pass
//! options, messages.

use llvm_sys::core::{
    LLVMContextCreate, LLVMContextDispose, LLVMDisposeMemoryBuffer, LLVMDisposeMessage,
    LLVMDisposeModule, LLVMGetBufferSize, LLVMGetBufferStart,
};
use llvm_sys::prelude::{LLVMContextRef, LLVMMemoryBufferRef, LLVMModuleRef};
use llvm_sys::target_machine::{LLVMDisposeTargetMachine, LLVMTargetMachineRef};
use llvm_sys::transforms::pass_builder::{
    LLVMCreatePassBuilderOptions, LLVMDisposePassBuilderOptions, LLVMPassBuilderOptionsRef,
};
use std::ffi::{c_char, CStr, CString};
use std::sync::Once;

/// Registers the AMDGPU, NVPTX and host targets with LLVM, once per process.
pub(super) fn init_targets() {
    static INIT: Once = Once::new();
    INIT.call_once(|| {
        // SAFETY: LLVM's target registration functions take no arguments and only fill
        // LLVM's global target registry; `Once` runs them once.
        unsafe {
            use llvm_sys::target::*;
            LLVMInitializeAMDGPUTargetInfo();
            LLVMInitializeAMDGPUTarget();
            LLVMInitializeAMDGPUTargetMC();
            LLVMInitializeAMDGPUAsmPrinter();
            LLVMInitializeNVPTXTargetInfo();
            LLVMInitializeNVPTXTarget();
            LLVMInitializeNVPTXTargetMC();
            LLVMInitializeNVPTXAsmPrinter();
            #[cfg(target_arch = "x86_64")]
            {
                LLVMInitializeX86TargetInfo();
                LLVMInitializeX86Target();
                LLVMInitializeX86TargetMC();
                LLVMInitializeX86AsmPrinter();
            }
            #[cfg(target_arch = "aarch64")]
            {
                LLVMInitializeAArch64TargetInfo();
                LLVMInitializeAArch64Target();
                LLVMInitializeAArch64TargetMC();
                LLVMInitializeAArch64AsmPrinter();
            }
        }
    });
}

/// A C string for LLVM, or an error naming what contained a NUL byte.
pub(super) fn cstring(s: &str, what: &str) -> Result<CString, String> {
    CString::new(s).map_err(|_| format!("{what} contains a NUL byte"))
}

/// Takes ownership of an LLVM-allocated message and returns it as a `String`.
///
/// # Safety
/// `msg` must be null or a string LLVM allocated for `LLVMDisposeMessage`.
pub(super) unsafe fn take_message(msg: *mut c_char) -> String {
    if msg.is_null() {
        return String::new();
    }
    // SAFETY: the caller guarantees `msg` is a NUL-terminated LLVM message.
    let text = unsafe { CStr::from_ptr(msg) }
        .to_string_lossy()
        .into_owned();
    // SAFETY: allocated by LLVM for this function.
    unsafe { LLVMDisposeMessage(msg) };
    text
}

/// An LLVM context; disposing it frees every module still in it.
pub(super) struct Context(pub LLVMContextRef);

impl Context {
    /// A fresh context.
    pub fn new() -> Self {
        // SAFETY: creates a new, independent context.
        Context(unsafe { LLVMContextCreate() })
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        // SAFETY: the context is owned here; modules are dropped before it (field order
        // and scoping at the use sites).
        unsafe { LLVMContextDispose(self.0) }
    }
}

/// A module owned by the caller (not yet handed to anything that takes ownership).
pub(super) struct Module(pub LLVMModuleRef);

impl Drop for Module {
    fn drop(&mut self) {
        if !self.0.is_null() {
            // SAFETY: the module is owned here and disposed once.
            unsafe { LLVMDisposeModule(self.0) }
        }
    }
}

/// A target machine.
pub(super) struct TargetMachine(pub LLVMTargetMachineRef);

impl Drop for TargetMachine {
    fn drop(&mut self) {
        // SAFETY: owned here, disposed once.
        unsafe { LLVMDisposeTargetMachine(self.0) }
    }
}

/// Options of the new pass manager.
pub(super) struct PassOptions(pub LLVMPassBuilderOptionsRef);

impl PassOptions {
    /// Default options.
    pub fn new() -> Self {
        // SAFETY: creates a new options object.
        PassOptions(unsafe { LLVMCreatePassBuilderOptions() })
    }
}

impl Drop for PassOptions {
    fn drop(&mut self) {
        // SAFETY: owned here, disposed once.
        unsafe { LLVMDisposePassBuilderOptions(self.0) }
    }
}

/// A memory buffer LLVM filled (emitted code).
pub(super) struct MemoryBuffer(pub LLVMMemoryBufferRef);

impl MemoryBuffer {
    /// A copy of the bytes.
    pub fn to_vec(&self) -> Vec<u8> {
        // SAFETY: the buffer is alive; start and size describe its contents.
        unsafe {
            let start = LLVMGetBufferStart(self.0) as *const u8;
            let len = LLVMGetBufferSize(self.0);
            if start.is_null() || len == 0 {
                return Vec::new();
            }
            std::slice::from_raw_parts(start, len).to_vec()
        }
    }
}

impl Drop for MemoryBuffer {
    fn drop(&mut self) {
        // SAFETY: owned here, disposed once.
        unsafe { LLVMDisposeMemoryBuffer(self.0) }
    }
}
