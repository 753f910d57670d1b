//! The kernel compiler: Rust tokens -> kernel IR -> LLVM IR -> code objects.
//!
//! - [`frontend`]: `syn` items to a checked [`kernel_ir::Unit`], errors with spans.
//! - [`kernel_ir`]: the typed tree.
//! - [`llvm`]: kernel IR to LLVM IR text per target, then LLVM 19 to 22 (optimise, emit).
//! - [`code_object`]: object files to loadable code objects (`ld.lld -shared`).
//!
//! [`compile_unit`] runs the whole pipeline for every target in `IRIS_TARGETS`.

mod abi_facts;
pub mod code_object;
mod diagnostics;
pub mod frontend;
pub mod kernel_ir;
pub mod llvm;
mod targets;

pub use abi_facts::{kernel_facts, KernelFacts, MAX_BLOCK_THREADS};
pub use diagnostics::CompileError;
pub use targets::{buildable, targets_from_env, Target, ALL_TARGETS};

use std::path::PathBuf;

/// One kernel unit compiled for a set of targets.
#[derive(Debug)]
pub struct CompiledUnit {
    /// The checked kernel IR.
    pub ir: kernel_ir::Unit,
    /// One code object per target, in the order of the targets asked for.
    pub objects: Vec<(Target, Vec<u8>)>,
    /// The targets asked for that the build's LLVM cannot compile, each with the reason.
    pub left_out: Vec<(Target, &'static str)>,
}

/// Compiles checked kernel IR for each target: lower, optimise, emit, link.
///
/// With `dump` set, writes each target's LLVM IR before and after optimisation and its
/// assembly there (see `IRIS_DUMP`).
pub fn compile_ir(
    ir: kernel_ir::Unit,
    targets: &[Target],
    dump: Option<PathBuf>,
) -> Result<CompiledUnit, CompileError> {
    let span = ir_span(&ir);
    // Lowering is cheap and needs the IR (which holds spans, so it stays on this thread);
    // LLVM and the linker are the cost, and run for every target at once.
    let mut lowered = Vec::with_capacity(targets.len());
    let warpgroup = ir.functions.iter().any(|f| f.uses_warpgroup_mma);
    let mut left_out = Vec::new();
    for target in targets.iter().map(|t| t.for_unit(warpgroup)) {
        if let Some(reason) = target.left_out_by_llvm() {
            left_out.push((target, reason));
            continue;
        }
        let text = llvm::lower_unit(&ir, target).map_err(|e| CompileError::new(span, e))?;
        lowered.push((target, text));
    }
    let name = ir.name.clone();
    let results: Vec<Result<(Target, Vec<u8>), String>> = std::thread::scope(|scope| {
        let handles: Vec<_> = lowered
            .iter()
            .map(|(target, text)| {
                let (target, name, dump) = (*target, &name, dump.as_deref());
                scope.spawn(move || {
                    let emitted = llvm::codegen(text, target, name, dump)
                        .map_err(|e| format!("LLVM failed for {}: {e}", target.name()))?;
                    let object = code_object::package(target, &emitted)
                        .map_err(|e| format!("packaging for {} failed: {e}", target.name()))?;
                    Ok((target, object))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("the code generator panicked".to_string()))
            })
            .collect()
    });
    let objects = results
        .into_iter()
        .collect::<Result<Vec<_>, String>>()
        .map_err(|e| CompileError::new(span, e))?;
    Ok(CompiledUnit {
        ir,
        objects,
        left_out,
    })
}

/// Parses, checks and compiles Rust functions as one unit.
///
/// `items` are the unit's functions with a flag saying which are kernels.
pub fn compile_unit(
    unit_name: &str,
    items: &[(syn::ItemFn, bool)],
    targets: &[Target],
    dump: Option<PathBuf>,
) -> Result<CompiledUnit, Vec<CompileError>> {
    let ir = frontend::build_unit(unit_name, items)?;
    compile_ir(ir, targets, dump).map_err(|e| vec![e])
}

/// Whether `IRIS_PEER_CHECKS` builds every kernel with peer checks: `1`, `true`, `yes`
/// or `on` turn them on; unset, empty, `0`, `false`, `no` or `off` leave them off;
/// anything else is an error.
pub fn peer_checks_from_env() -> Result<bool, String> {
    match std::env::var("IRIS_PEER_CHECKS") {
        Ok(v) => parse_switch(&v).ok_or_else(|| {
            format!("IRIS_PEER_CHECKS={v:?} is invalid: use 1 (peer checks on) or 0 (off)")
        }),
        Err(_) => Ok(false),
    }
}

fn parse_switch(value: &str) -> Option<bool> {
    match value.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Some(true),
        "" | "0" | "false" | "no" | "off" => Some(false),
        _ => None,
    }
}

/// The directory named by `IRIS_DUMP`, if set.
pub fn dump_dir_from_env() -> Option<PathBuf> {
    std::env::var_os("IRIS_DUMP")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

fn ir_span(ir: &kernel_ir::Unit) -> proc_macro2::Span {
    ir.functions
        .first()
        .map(|f| f.span)
        .unwrap_or_else(proc_macro2::Span::call_site)
}

#[cfg(test)]
mod tests {
    use super::parse_switch;

    #[test]
    fn switches_read_like_booleans() {
        for on in ["1", "true", "ON", " yes "] {
            assert_eq!(parse_switch(on), Some(true), "{on}");
        }
        for off in ["", "0", "false", "Off", "no"] {
            assert_eq!(parse_switch(off), Some(false), "{off}");
        }
        assert_eq!(parse_switch("2"), None);
    }
}
