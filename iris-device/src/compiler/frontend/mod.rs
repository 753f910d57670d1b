//! Rust tokens -> checked kernel IR.

use super::kernel_ir::Unit;
use super::CompileError;

/// Builds and checks the kernel IR of a unit from its functions (`true` marks kernels).
pub fn build_unit(
    unit_name: &str,
    items: &[(syn::ItemFn, bool)],
) -> Result<Unit, Vec<CompileError>> {
    let _ = (unit_name, items);
    Err(vec![CompileError::new(
        proc_macro2::Span::call_site(),
        "frontend is not written yet",
    )])
}
