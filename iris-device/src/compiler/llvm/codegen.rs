//! LLVM IR text -> optimised module -> object bytes (or PTX text), through llvm-sys.

use super::super::Target;
use std::path::Path;

/// What LLVM emitted for one target: an object file, or PTX text.
pub type Emitted = Vec<u8>;

/// Parses, optimises and emits `ir` for `target`.
pub fn codegen(
    ir: &str,
    target: Target,
    unit_name: &str,
    dump: Option<&Path>,
) -> Result<Emitted, String> {
    let _ = (ir, target, unit_name, dump);
    Err("codegen is not written yet".into())
}
