//! Owned LLVM objects, disposed on drop.
//!
//! The macro compiles many kernels in one compiler process, so everything created here is
//! released: a context (which owns its modules' memory), a module, a target machine, pass
//! options, messages.

use super::api::{Handle, Llvm};
use std::ffi::{c_char, CStr, CString};

/// A C string for LLVM, or an error naming what contained a NUL byte.
pub(super) fn cstring(s: &str, what: &str) -> Result<CString, String> {
    CString::new(s).map_err(|_| format!("{what} contains a NUL byte"))
}

/// Takes ownership of an LLVM-allocated message and returns it as a `String`.
///
/// # Safety
/// `msg` must be null or a string LLVM allocated for `LLVMDisposeMessage`.
pub(super) unsafe fn take_message(llvm: &Llvm, msg: *mut c_char) -> String {
    if msg.is_null() {
        return String::new();
    }
    // SAFETY: the caller guarantees `msg` is a NUL-terminated LLVM message.
    let text = unsafe { CStr::from_ptr(msg) }
        .to_string_lossy()
        .into_owned();
    // SAFETY: allocated by LLVM for this function.
    unsafe { (llvm.LLVMDisposeMessage)(msg) };
    text
}

/// An LLVM context; disposing it frees every module still in it.
pub(super) struct Context(pub &'static Llvm, pub Handle);

impl Context {
    /// A fresh context.
    pub fn new(llvm: &'static Llvm) -> Self {
        // SAFETY: creates a new, independent context.
        Context(llvm, unsafe { (llvm.LLVMContextCreate)() })
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        // SAFETY: the context is owned here; modules are dropped before it (field order
        // and scoping at the use sites).
        unsafe { (self.0.LLVMContextDispose)(self.1) }
    }
}

/// A module owned by the caller (not yet handed to anything that takes ownership).
pub(super) struct Module(pub &'static Llvm, pub Handle);

impl Drop for Module {
    fn drop(&mut self) {
        if !self.1.is_null() {
            // SAFETY: the module is owned here and disposed once.
            unsafe { (self.0.LLVMDisposeModule)(self.1) }
        }
    }
}

/// A target machine.
pub(super) struct TargetMachine(pub &'static Llvm, pub Handle);

impl Drop for TargetMachine {
    fn drop(&mut self) {
        // SAFETY: owned here, disposed once.
        unsafe { (self.0.LLVMDisposeTargetMachine)(self.1) }
    }
}

/// Options of the new pass manager.
pub(super) struct PassOptions(pub &'static Llvm, pub Handle);

impl PassOptions {
    /// Default options.
    pub fn new(llvm: &'static Llvm) -> Self {
        // SAFETY: creates a new options object.
        PassOptions(llvm, unsafe { (llvm.LLVMCreatePassBuilderOptions)() })
    }
}

impl Drop for PassOptions {
    fn drop(&mut self) {
        // SAFETY: owned here, disposed once.
        unsafe { (self.0.LLVMDisposePassBuilderOptions)(self.1) }
    }
}

/// A memory buffer owned here (emitted code, or IR not yet handed to the parser).
pub(super) struct MemoryBuffer(pub &'static Llvm, pub Handle);

impl MemoryBuffer {
    /// A copy of the bytes.
    pub fn to_vec(&self) -> Vec<u8> {
        // SAFETY: the buffer is alive; start and size describe its contents.
        unsafe {
            let start = (self.0.LLVMGetBufferStart)(self.1) as *const u8;
            let len = (self.0.LLVMGetBufferSize)(self.1);
            if start.is_null() || len == 0 {
                return Vec::new();
            }
            std::slice::from_raw_parts(start, len).to_vec()
        }
    }

    /// Gives the buffer to a callee that disposes of it (LLVM 19 and 20's parser).
    pub fn hand_over(mut self) -> Handle {
        std::mem::replace(&mut self.1, std::ptr::null_mut())
    }
}

impl Drop for MemoryBuffer {
    fn drop(&mut self) {
        if !self.1.is_null() {
            // SAFETY: owned here, disposed once.
            unsafe { (self.0.LLVMDisposeMemoryBuffer)(self.1) }
        }
    }
}
