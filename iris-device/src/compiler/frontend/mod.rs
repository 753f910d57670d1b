//! Rust tokens -> checked kernel IR.
//!
//! Signatures first (so calls between functions of a unit resolve), then each body:
//! names, types and the kernel subset are checked while the IR is built; literal types
//! are inferred and resolved at the end. Everything outside the subset is an error at
//! its span saying what is supported instead.

mod body;
mod builder;
mod calls;
mod expr;
mod infer;
mod methods;
mod resolve;
mod types;

pub use types::parse_type;

use super::kernel_ir::{Local, Type, Unit};
use super::CompileError;
use builder::{FnBuilder, Signature};
use syn::spanned::Spanned;

/// Builds and checks the kernel IR of a unit from its functions (`true` marks kernels).
/// Returns every error found (at most one per function).
pub fn build_unit(
    unit_name: &str,
    items: &[(syn::ItemFn, bool)],
) -> Result<Unit, Vec<CompileError>> {
    let mut errors = Vec::new();
    let mut sigs = Vec::new();
    for (item, is_kernel) in items {
        match signature(item, *is_kernel) {
            Ok(s) => {
                if sigs.iter().any(|o: &Signature| o.name == s.name) {
                    errors.push(CompileError::new(
                        s.span,
                        format!("`{}` is defined twice in this unit", s.name),
                    ));
                }
                sigs.push(s);
            }
            Err(e) => errors.push(e),
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    if !sigs.iter().any(|s| s.is_kernel) {
        let span = items
            .first()
            .map(|(i, _)| i.sig.ident.span())
            .unwrap_or_else(proc_macro2::Span::call_site);
        return Err(vec![CompileError::new(
            span,
            "no kernel in this unit: mark kernels with `#[kernel]`",
        )]);
    }
    let mut functions = Vec::new();
    for (index, (item, _)) in items.iter().enumerate() {
        let mut b = FnBuilder::new(&sigs, index);
        let built = b.block(&item.block).and_then(|body| {
            let ret = b.ret();
            if body.ty != Type::Never {
                b.infer.unify(&body.ty, &ret, item.block.span())?;
            }
            Ok(body)
        });
        match built {
            Ok(body) => {
                let infer = std::mem::take(&mut b.infer);
                let mut f = b.finish(body);
                resolve::resolve_function(&mut f, &infer);
                functions.push(f);
            }
            Err(e) => errors.push(e),
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    Ok(Unit {
        name: unit_name.to_string(),
        functions,
        peer_checks: false,
    })
}

fn signature(item: &syn::ItemFn, is_kernel: bool) -> Result<Signature, CompileError> {
    let sig = &item.sig;
    let what = if is_kernel {
        "kernels"
    } else {
        "device functions"
    };
    if !sig.generics.params.is_empty() {
        return Err(CompileError::new(
            sig.generics.span(),
            format!("generic {what} are not supported: write one kernel per element type"),
        ));
    }
    if let Some(a) = &sig.asyncness {
        return Err(CompileError::new(
            a.span(),
            format!("{what} cannot be `async`"),
        ));
    }
    if let Some(v) = &sig.variadic {
        return Err(CompileError::new(
            v.span(),
            format!("{what} cannot be variadic"),
        ));
    }
    if let Some(abi) = &sig.abi {
        return Err(CompileError::new(
            abi.span(),
            format!("{what} take no `extern` ABI: iris chooses the calling convention per target"),
        ));
    }
    let mut params = Vec::new();
    for input in &sig.inputs {
        match input {
            syn::FnArg::Receiver(r) => {
                return Err(CompileError::new(
                    r.span(),
                    format!("{what} cannot take `self`"),
                ));
            }
            syn::FnArg::Typed(pt) => {
                let syn::Pat::Ident(pi) = &*pt.pat else {
                    return Err(CompileError::new(
                        pt.pat.span(),
                        "parameters must be plain names",
                    ));
                };
                let ty = parse_type(&pt.ty)?;
                if ty == Type::Unit {
                    return Err(CompileError::new(
                        pt.ty.span(),
                        "a parameter cannot be `()`",
                    ));
                }
                params.push(Local {
                    name: pi.ident.to_string(),
                    ty,
                    mutable: pi.mutability.is_some(),
                    span: pi.ident.span(),
                });
            }
        }
    }
    let ret = match &sig.output {
        syn::ReturnType::Default => Type::Unit,
        syn::ReturnType::Type(_, t) => {
            let ty = parse_type(t)?;
            if is_kernel && ty != Type::Unit {
                return Err(CompileError::new(
                    t.span(),
                    "kernels return nothing: write results through pointer parameters",
                ));
            }
            if matches!(ty, Type::Symmetric(_)) {
                return Err(CompileError::new(
                    t.span(),
                    "device functions cannot return `Symmetric<T>`",
                ));
            }
            ty
        }
    };
    Ok(Signature {
        name: sig.ident.to_string(),
        is_kernel,
        params,
        ret,
        span: sig.ident.span(),
    })
}

#[cfg(test)]
mod tests;
