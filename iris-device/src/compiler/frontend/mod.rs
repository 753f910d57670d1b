//! Rust tokens -> checked kernel IR.
//!
//! Signatures first (so calls between functions of a unit resolve), then each body:
//! names, types and the kernel subset are checked while the IR is built; literal types
//! are inferred and resolved at the end. Everything outside the subset is an error at
//! its span saying what is supported instead.

mod arrays;
mod atomics;
mod block;
mod body;
mod builder;
mod calls;
mod divergence;
mod element;
mod expr;
pub mod generics;
mod ids;
mod infer;
mod matching;
mod matrix;
mod memory;
mod methods;
mod operands;
mod registry;
mod resolve;
mod signals;
mod structs;
mod time;
mod types;
mod warp;
mod warpgroup;

pub use types::parse_type;

use super::kernel_ir::{Function, FunctionId, GenericArg, InstanceOf, Local, Type, Unit};
use super::CompileError;
use builder::{FnBuilder, Signature};
use generics::{GenericParam, ParamKind};
use registry::{Pending, Registry, Template};
use syn::spanned::Spanned;

/// One function of a unit as written.
#[derive(Clone, Debug)]
pub struct SourceFn {
    /// The function.
    pub item: syn::ItemFn,
    /// Marked `#[kernel]` (or the item of `#[iris::kernel]`).
    pub is_kernel: bool,
    /// For a generic kernel: `instances(T = [..], N = [..])` from its attribute.
    pub instances: Option<InstanceList>,
    /// A kernel's `max_threads = N` from its attribute.
    pub max_threads: Option<u32>,
}

impl SourceFn {
    /// A function without instance lists.
    pub fn new(item: syn::ItemFn, is_kernel: bool) -> Self {
        SourceFn {
            item,
            is_kernel,
            instances: None,
            max_threads: None,
        }
    }
}

/// The arguments a generic kernel is built for: `instances(T = [f32, bf16], N = [64, 128])`
/// (every combination of them) or `instances((f32, 4), (f16, 8))` (each tuple one
/// instance, its arguments in parameter order).
#[derive(Clone, Debug)]
pub struct InstanceList {
    /// Where the list is written.
    pub span: proc_macro2::Span,
    /// Each parameter named, with its arguments.
    pub params: Vec<(syn::Ident, Vec<syn::GenericArgument>)>,
    /// Or: each instance's arguments, in parameter order.
    pub tuples: Vec<(proc_macro2::Span, Vec<syn::GenericArgument>)>,
}

impl InstanceList {
    /// Parses the inside of `instances(..)`: `T = [f32, bf16], N = [64, 128]` or
    /// `(f32, 4), (f16, 8)`.
    pub fn parse(tokens: proc_macro2::TokenStream) -> syn::Result<InstanceList> {
        use syn::parse::Parser;
        let span = tokens.span();
        let usage = "write `instances(T = [f32, bf16], N = [64, 128])` (each generic parameter with the list of its arguments, every combination built) or `instances((f32, 4), (f16, 8))` (each instance's arguments in parameter order)";
        let exprs = syn::punctuated::Punctuated::<syn::Expr, syn::Token![,]>::parse_terminated
            .parse2(tokens.clone());
        let tuple_form = exprs.as_ref().is_ok_and(|list| {
            list.iter()
                .all(|e| matches!(e, syn::Expr::Tuple(_) | syn::Expr::Paren(_)))
        });
        if let (true, Ok(list)) = (tuple_form, exprs) {
            let mut out = Vec::new();
            for e in list {
                // `(f64)` is one instance of a one-parameter kernel.
                let elems: Vec<syn::Expr> = match &e {
                    syn::Expr::Tuple(t) => t.elems.iter().cloned().collect(),
                    syn::Expr::Paren(p) => vec![(*p.expr).clone()],
                    _ => Vec::new(),
                };
                let args = elems
                    .iter()
                    .map(|e| {
                        syn::parse2::<syn::GenericArgument>(quote::ToTokens::to_token_stream(e))
                    })
                    .collect::<syn::Result<Vec<_>>>()?;
                out.push((e.span(), args));
            }
            if !out.is_empty() {
                return Ok(InstanceList {
                    span,
                    params: Vec::new(),
                    tuples: out,
                });
            }
        }
        let entries =
            syn::punctuated::Punctuated::<syn::MetaNameValue, syn::Token![,]>::parse_terminated
                .parse2(tokens)
                .map_err(|e| syn::Error::new(e.span(), usage))?;
        let mut params: Vec<(syn::Ident, Vec<syn::GenericArgument>)> = Vec::new();
        for nv in entries {
            let Some(ident) = nv.path.get_ident().cloned() else {
                return Err(syn::Error::new(nv.path.span(), usage));
            };
            if params.iter().any(|(i, _)| *i == ident) {
                return Err(syn::Error::new(
                    ident.span(),
                    format!("`{ident}` is listed twice"),
                ));
            }
            let syn::Expr::Array(list) = &nv.value else {
                return Err(syn::Error::new(nv.value.span(), usage));
            };
            let args = list
                .elems
                .iter()
                .map(|e| syn::parse2::<syn::GenericArgument>(quote::ToTokens::to_token_stream(e)))
                .collect::<syn::Result<Vec<_>>>()?;
            params.push((ident, args));
        }
        Ok(InstanceList {
            span,
            params,
            tuples: Vec::new(),
        })
    }
}

/// Builds and checks the kernel IR of a unit from its functions (`true` marks kernels).
/// Returns every error found (at most one per function).
pub fn build_unit(
    unit_name: &str,
    items: &[(syn::ItemFn, bool)],
) -> Result<Unit, Vec<CompileError>> {
    let sources: Vec<SourceFn> = items
        .iter()
        .map(|(item, k)| SourceFn::new(item.clone(), *k))
        .collect();
    build_unit_from(unit_name, &sources)
}

/// Builds and checks the kernel IR of a unit, generic kernels instantiated for their
/// instance lists (or every type their bound allows) and generic device functions for
/// the calls that need them. Returns every error found (at most one per function).
pub fn build_unit_from(unit_name: &str, items: &[SourceFn]) -> Result<Unit, Vec<CompileError>> {
    build_unit_with_consts(unit_name, items, &[])
}

/// [`build_unit_from`] with the `const` items of the unit's module, which its functions
/// may name (`const N: u32 = 32;`: each use is the constant's expression at its type).
pub fn build_unit_with_consts(
    unit_name: &str,
    items: &[SourceFn],
    consts: &[syn::ItemConst],
) -> Result<Unit, Vec<CompileError>> {
    build_unit_in_module(unit_name, items, consts, &[])
}

/// [`build_unit_with_consts`] with the struct items of the unit's module too, which its
/// functions may use as values (`#[derive(Clone, Copy)] struct S { x: f32 }`).
pub fn build_unit_in_module(
    unit_name: &str,
    items: &[SourceFn],
    consts: &[syn::ItemConst],
    structs: &[syn::ItemStruct],
) -> Result<Unit, Vec<CompileError>> {
    structs::with_structs(structs, || build_unit_checked(unit_name, items, consts))
}

fn build_unit_checked(
    unit_name: &str,
    items: &[SourceFn],
    consts: &[syn::ItemConst],
) -> Result<Unit, Vec<CompileError>> {
    let mut errors = Vec::new();
    let mut registry = Registry::default();
    if let Err(e) = registry.add_consts(consts) {
        return Err(vec![e]);
    }
    let mut plain = Vec::new();
    for source in items {
        let item = &source.item;
        let params = match generics::generic_params(&item.sig) {
            Ok(p) => p,
            Err(e) => {
                errors.push(e);
                continue;
            }
        };
        if params.is_empty() {
            if let Some(list) = &source.instances {
                errors.push(CompileError::new(
                    list.span,
                    format!(
                        "`instances(..)` is for generic kernels; `{}` has no generic parameters",
                        item.sig.ident
                    ),
                ));
                continue;
            }
            plain.push((item.clone(), source.is_kernel, None));
        } else if source.is_kernel {
            match kernel_instances(item, &params, source.instances.as_ref()) {
                Ok(list) => {
                    for args in list {
                        let instance = generics::instantiate(item, &params, &args);
                        let of = InstanceOf {
                            generic: item.sig.ident.to_string(),
                            args,
                        };
                        plain.push((instance, true, Some(of)));
                    }
                }
                Err(e) => errors.push(e),
            }
        } else {
            if let Some(list) = &source.instances {
                errors.push(CompileError::new(
                    list.span,
                    "generic device functions are instantiated for the calls that use them: `instances(..)` is for kernels",
                ));
                continue;
            }
            let declared = item
                .sig
                .inputs
                .iter()
                .filter_map(|a| match a {
                    syn::FnArg::Typed(pt) => Some((*pt.ty).clone()),
                    syn::FnArg::Receiver(_) => None,
                })
                .collect();
            if let Err(e) = registry.add_template(Template {
                item: item.clone(),
                params,
                declared,
            }) {
                errors.push(e);
            }
        }
    }
    for (item, is_kernel, instance_of) in plain {
        let added = signature(&item, is_kernel)
            .and_then(|sig| registry.add(sig, Pending { item, instance_of }));
        if let Err(e) = added {
            errors.push(e);
        }
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    if !registry.has_kernel() {
        let span = items
            .first()
            .map(|s| s.item.sig.ident.span())
            .unwrap_or_else(proc_macro2::Span::call_site);
        return Err(vec![CompileError::new(
            span,
            "no kernel in this unit: mark kernels with `#[kernel]`",
        )]);
    }
    let mut functions = Vec::new();
    let mut queue: Vec<Pending> = registry.take_pending();
    let mut index = 0;
    while index < queue.len() {
        let pending = &queue[index];
        let item = &pending.item;
        let mut b = FnBuilder::new(&registry, index);
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
                f.instance_of = pending.instance_of.clone();
                resolve::resolve_function(&mut f, &infer);
                functions.push(f);
            }
            Err(e) => errors.push(e),
        }
        queue.extend(registry.take_pending());
        index += 1;
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    if let Some(e) = recursion(&functions) {
        return Err(vec![e]);
    }
    inherit_callee_needs(&mut functions);
    let mut split = divergence::check(&functions);
    if !split.is_empty() {
        // Instances of one generic function report the same place once.
        let mut seen = std::collections::HashSet::new();
        split.retain(|e| seen.insert(format!("{:?}{}", e.span, e.message)));
        return Err(split);
    }
    set_max_threads(&mut functions, items);
    Ok(Unit {
        name: unit_name.to_string(),
        functions,
        peer_checks: false,
        trace_events: false,
    })
}

/// Each kernel (and each instance of a generic one) takes its source's `max_threads`.
fn set_max_threads(functions: &mut [Function], items: &[SourceFn]) {
    for f in functions.iter_mut().filter(|f| f.is_kernel) {
        let source = f
            .instance_of
            .as_ref()
            .map_or(f.name.as_str(), |i| i.generic.as_str());
        f.max_threads = items
            .iter()
            .find(|s| s.is_kernel && s.item.sig.ident == source)
            .and_then(|s| s.max_threads);
    }
}

/// What a function's device functions need, its callers need too: one that meets at a
/// block barrier or exchanges values within a warp needs its threads to run together (the
/// CPU backend runs a block's threads concurrently only for kernels that say so), and one
/// that waits on a signal may write the fault record the host reads. The flags flow from
/// callees to callers. The call graph has no cycles (checked before).
fn inherit_callee_needs(functions: &mut [Function]) {
    let callees: Vec<Vec<FunctionId>> = functions.iter().map(Function::callees).collect();
    let mut changed = true;
    while changed {
        changed = false;
        for (i, calls) in callees.iter().enumerate() {
            for &c in calls {
                let (barrier, warp, waits) = (
                    functions[c].uses_block_barrier,
                    functions[c].uses_warp,
                    functions[c].waits_on_signals,
                );
                let f = &mut functions[i];
                if (barrier && !f.uses_block_barrier)
                    || (warp && !f.uses_warp)
                    || (waits && !f.waits_on_signals)
                {
                    f.uses_block_barrier |= barrier;
                    f.uses_warp |= warp;
                    f.waits_on_signals |= waits;
                    changed = true;
                }
            }
        }
    }
}

/// The argument lists a generic kernel is built for.
fn kernel_instances(
    item: &syn::ItemFn,
    params: &[GenericParam],
    list: Option<&InstanceList>,
) -> Result<Vec<Vec<GenericArg>>, CompileError> {
    let name = &item.sig.ident;
    if let Some(list) = list.filter(|l| !l.tuples.is_empty()) {
        let mut all = Vec::new();
        for (span, args) in &list.tuples {
            if args.len() != params.len() {
                return Err(CompileError::new(
                    *span,
                    format!(
                        "`{name}` has {} generic parameter(s); this instance gives {}",
                        params.len(),
                        args.len()
                    ),
                ));
            }
            let parsed = params
                .iter()
                .zip(args)
                .map(|(p, a)| generics::parse_arg(p, a))
                .collect::<Result<Vec<_>, _>>()?;
            if all.contains(&parsed) {
                return Err(CompileError::new(*span, "this instance is listed twice"));
            }
            all.push(parsed);
        }
        if all.len() > generics::MAX_KERNEL_INSTANCES {
            return Err(CompileError::new(
                list.span,
                format!(
                    "at most {} instances of one kernel",
                    generics::MAX_KERNEL_INSTANCES
                ),
            ));
        }
        return Ok(all);
    }
    if let Some(list) = list {
        for (ident, _) in &list.params {
            if !params.iter().any(|p| *ident == p.name) {
                return Err(CompileError::new(
                    ident.span(),
                    format!("`{name}` has no generic parameter `{ident}`"),
                ));
            }
        }
    }
    let mut per_param = Vec::new();
    for p in params {
        let listed = list.and_then(|l| l.params.iter().find(|(i, _)| *i == p.name));
        let args = match (listed, p.kind) {
            (Some((_, values)), _) => {
                if values.is_empty() {
                    return Err(CompileError::new(
                        list.map(|l| l.span).unwrap_or(p.span),
                        format!("`instances(..)` lists no argument for `{}`", p.name),
                    ));
                }
                values
                    .iter()
                    .map(|v| generics::parse_arg(p, v))
                    .collect::<Result<Vec<_>, _>>()?
            }
            (None, ParamKind::Type(bound)) => bound.types().into_iter().map(GenericArg::Type).collect(),
            (None, ParamKind::Const(_)) => {
                return Err(CompileError::new(
                    p.span,
                    format!(
                        "const parameter `{}` of kernel `{name}` needs its values: list them in the kernel's attribute, `instances({} = [..])`",
                        p.name, p.name
                    ),
                ))
            }
        };
        per_param.push(args);
    }
    let all = generics::combinations(&per_param);
    if all.len() > generics::MAX_KERNEL_INSTANCES {
        return Err(CompileError::new(
            list.map(|l| l.span).unwrap_or(item.sig.ident.span()),
            format!(
                "`{name}` would be built {} times (each for every target); at most {} instances: list fewer in `instances(..)`",
                all.len(),
                generics::MAX_KERNEL_INSTANCES
            ),
        ));
    }
    Ok(all)
}

/// A call cycle between device functions, as an error at the first function in it.
fn recursion(functions: &[super::kernel_ir::Function]) -> Option<CompileError> {
    let callees: Vec<Vec<FunctionId>> = functions.iter().map(|f| f.callees()).collect();
    // Depth-first search with colours: 0 new, 1 on the path, 2 done.
    fn visit(
        at: FunctionId,
        callees: &[Vec<FunctionId>],
        colour: &mut [u8],
        path: &mut Vec<FunctionId>,
    ) -> Option<Vec<FunctionId>> {
        colour[at] = 1;
        path.push(at);
        for &next in &callees[at] {
            if next >= colour.len() {
                continue;
            }
            if colour[next] == 1 {
                let start = path.iter().position(|&p| p == next).unwrap_or(0);
                let mut cycle = path[start..].to_vec();
                cycle.push(next);
                return Some(cycle);
            }
            if colour[next] == 0 {
                if let Some(c) = visit(next, callees, colour, path) {
                    return Some(c);
                }
            }
        }
        path.pop();
        colour[at] = 2;
        None
    }
    let mut colour = vec![0u8; functions.len()];
    for start in 0..functions.len() {
        if colour[start] == 0 {
            let mut path = Vec::new();
            if let Some(cycle) = visit(start, &callees, &mut colour, &mut path) {
                let names: Vec<&str> = cycle.iter().map(|&i| functions[i].name.as_str()).collect();
                return Some(CompileError::new(
                    functions[cycle[0]].span,
                    format!(
                        "recursion is not supported in kernels: {} (GPU threads have small fixed stacks): write it as a loop, or as several functions that do not call back",
                        names.join(" -> ")
                    ),
                ));
            }
        }
    }
    None
}

pub(crate) fn signature(item: &syn::ItemFn, is_kernel: bool) -> Result<Signature, CompileError> {
    let sig = &item.sig;
    let what = if is_kernel {
        "kernels"
    } else {
        "device functions"
    };
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
                if is_kernel && matches!(ty, Type::Struct(_)) {
                    if let Err(why) = structs::kernel_parameter(&ty) {
                        return Err(CompileError::new(pt.ty.span(), why));
                    }
                }
                if is_kernel && matches!(ty, Type::Array { .. }) {
                    return Err(CompileError::new(
                        pt.ty.span(),
                        "kernels take arrays through pointers (`*const T` and a length); arrays by value are for device functions",
                    ));
                }
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
        inline_always: item.attrs.iter().any(is_inline_always),
        span: sig.ident.span(),
    })
}

/// `#[inline(always)]`.
fn is_inline_always(attr: &syn::Attribute) -> bool {
    attr.path().is_ident("inline")
        && attr
            .parse_args::<syn::Ident>()
            .is_ok_and(|word| word == "always")
}

#[cfg(test)]
mod tests;
