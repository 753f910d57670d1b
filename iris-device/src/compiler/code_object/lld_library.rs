//! lld's ELF linker in this process (lld_library.cpp, built by iris-device's build script
//! when the LLVM it found has lld's libraries, and loaded beside that LLVM): the same links
//! as the `ld.lld` command without starting a process per code object, which took most of
//! an AMD or CPU compilation (about 25 of 40 ms). lld keeps global state, so links run one
//! at a time; without the shim, or when lld reports that it cannot run again in this
//! process (after a crash it recovered from), the caller falls back to the `ld.lld`
//! command.

use std::ffi::{c_char, c_int, CStr, CString};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// One link at a time: lld's drivers keep process-wide state.
static LINKER: Mutex<()> = Mutex::new(());
/// Cleared when lld said it cannot be run again in this process.
static USABLE: AtomicBool = AtomicBool::new(true);

/// What an in-process link gave.
pub(super) enum Outcome {
    /// Linked: the output file is written.
    Linked,
    /// lld reported errors (its messages).
    Failed(String),
    /// lld cannot run in this process (any more): use the command.
    Unavailable,
}

/// Runs `ld.lld args..` in this process.
pub(super) fn link(args: &[String]) -> Outcome {
    if !USABLE.load(Ordering::Acquire) {
        return Outcome::Unavailable;
    }
    let Some(iris_lld_elf_link) = crate::compiler::llvm::lld_in_process() else {
        return Outcome::Unavailable;
    };
    let argv: Vec<CString> = match std::iter::once("ld.lld".to_string())
        .chain(args.iter().cloned())
        .map(CString::new)
        .collect::<Result<_, _>>()
    {
        Ok(v) => v,
        Err(_) => return Outcome::Failed("a linker argument contains a NUL byte".into()),
    };
    let ptrs: Vec<*const c_char> = argv.iter().map(|a| a.as_ptr()).collect();
    let mut messages = vec![0 as c_char; 16 * 1024];
    let mut again: c_int = 1;
    let code = {
        let _one = LINKER.lock().unwrap_or_else(|e| e.into_inner());
        // SAFETY: the shim's function (lld_library.cpp); `ptrs` points at NUL-terminated
        // strings that outlive the call; `messages` is writable for its length; lld runs
        // one link at a time (the lock).
        unsafe {
            iris_lld_elf_link(
                ptrs.as_ptr(),
                ptrs.len(),
                messages.as_mut_ptr(),
                messages.len(),
                &mut again,
            )
        }
    };
    if again == 0 {
        USABLE.store(false, Ordering::Release);
    }
    // SAFETY: the shim always NUL-terminates `messages` (it is never empty).
    let text = unsafe { CStr::from_ptr(messages.as_ptr()) }
        .to_string_lossy()
        .trim()
        .to_string();
    match code {
        0 => Outcome::Linked,
        _ if again == 0 && text.is_empty() => Outcome::Unavailable,
        _ => Outcome::Failed(text),
    }
}
