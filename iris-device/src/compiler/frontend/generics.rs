//! Generic kernels and device functions, monomorphized before they are checked.
//!
//! A generic function is a template: each instance is the function with its type and
//! const parameters replaced by concrete types and literals (on the syntax tree), under a
//! mangled name (`all_gather__f32`, `tile__bf16__64`), then checked and lowered as any
//! other function. Kernels are instantiated for the arguments their attribute lists
//! (`instances(T = [f32, bf16])`, or every type the bound allows); device functions for the
//! arguments each call site names or implies.

use super::super::kernel_ir::{GenericArg, Scalar, Type, Vector};
use super::super::CompileError;
use super::types::parse_type;
use proc_macro2::Span;
use std::collections::HashMap;
use syn::spanned::Spanned;
use syn::visit_mut::VisitMut;

/// At most this many instances of one kernel (each is compiled for every target).
pub const MAX_KERNEL_INSTANCES: usize = 64;

/// One trait of the prelude a type parameter may be bounded by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trait {
    /// `Element`: the twelve numeric types.
    Element,
    /// `DeviceValue`: every scalar and vector a kernel can move through memory.
    DeviceValue,
    /// `AtomicValue`: the 32/64-bit integers, `f32`, `f64`.
    AtomicValue,
    /// `AtomicBits`: the 32/64-bit integers.
    AtomicBits,
    /// `MmaElement`: what the matrix units multiply, `bf16` and `f16`.
    MmaElement,
}

impl Trait {
    const ALL: [Trait; 5] = [
        Trait::Element,
        Trait::DeviceValue,
        Trait::AtomicValue,
        Trait::AtomicBits,
        Trait::MmaElement,
    ];

    fn from_name(name: &str) -> Option<Trait> {
        Trait::ALL.into_iter().find(|t| t.name() == name)
    }

    fn name(self) -> &'static str {
        match self {
            Trait::Element => "Element",
            Trait::DeviceValue => "DeviceValue",
            Trait::AtomicValue => "AtomicValue",
            Trait::AtomicBits => "AtomicBits",
            Trait::MmaElement => "MmaElement",
        }
    }

    fn allows(self, ty: &Type) -> bool {
        use Scalar::*;
        match (self, ty) {
            (Trait::DeviceValue, Type::Vector(_)) => true,
            (Trait::DeviceValue, Type::Scalar(Bool)) => true,
            (_, Type::Scalar(s)) => match self {
                Trait::Element | Trait::DeviceValue => *s != Bool,
                Trait::AtomicValue => matches!(s, I32 | I64 | U32 | U64 | F32 | F64),
                Trait::AtomicBits => matches!(s, I32 | I64 | U32 | U64),
                Trait::MmaElement => matches!(s, BF16 | F16),
            },
            _ => false,
        }
    }

    fn bit(self) -> u8 {
        1 << Trait::ALL.iter().position(|t| *t == self).unwrap_or(0)
    }
}

/// What a type parameter is bounded by (one trait of the prelude, or several: `T:
/// Element + AtomicValue`), and so which types it may stand for: those every trait
/// allows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bound {
    traits: u8,
}

impl Bound {
    /// The bound of one trait.
    pub fn of(t: Trait) -> Bound {
        Bound { traits: t.bit() }
    }

    /// This bound and `t`.
    fn and(self, t: Trait) -> Bound {
        Bound {
            traits: self.traits | t.bit(),
        }
    }

    fn traits(self) -> impl Iterator<Item = Trait> {
        Trait::ALL
            .into_iter()
            .filter(move |t| self.traits & t.bit() != 0)
    }

    /// Every type the bound allows, in a fixed order (empty when its traits share none).
    pub fn types(self) -> Vec<Type> {
        use Scalar::*;
        let mut all: Vec<Type> = [
            I8, I16, I32, I64, U8, U16, U32, U64, F16, BF16, F32, F64, Bool,
        ]
        .iter()
        .map(|s| Type::Scalar(*s))
        .collect();
        for name in ["f32x4", "i32x4", "u32x4", "f64x2", "i64x2", "u64x2"] {
            all.extend(Vector::from_name(name).map(Type::Vector));
        }
        all.retain(|ty| self.allows(ty));
        all
    }

    fn allows(self, ty: &Type) -> bool {
        self.traits().all(|t| t.allows(ty))
    }

    /// `Element` or `Element + AtomicValue`.
    fn name(self) -> String {
        self.traits()
            .map(Trait::name)
            .collect::<Vec<_>>()
            .join(" + ")
    }
}

/// One generic parameter of a function.
#[derive(Clone, Debug)]
pub struct GenericParam {
    /// Its name (`T`, `N`).
    pub name: String,
    /// A type parameter and its bound, or a const parameter and its type.
    pub kind: ParamKind,
    /// Where it is declared.
    pub span: Span,
}

/// Type or const.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamKind {
    /// `T: Bound`.
    Type(Bound),
    /// `const N: ty` of an integer type.
    Const(Scalar),
}

/// The generic parameters of a function; empty for a plain one.
pub fn generic_params(sig: &syn::Signature) -> Result<Vec<GenericParam>, CompileError> {
    let g = &sig.generics;
    if let Some(w) = &g.where_clause {
        return Err(CompileError::new(
            w.span(),
            "`where` clauses are not supported in kernels: write the bound inline (`T: Element`)",
        ));
    }
    let mut params = Vec::new();
    for p in &g.params {
        match p {
            syn::GenericParam::Lifetime(l) => {
                return Err(CompileError::new(
                    l.span(),
                    "lifetime parameters are not supported in kernels (there are no references)",
                ))
            }
            syn::GenericParam::Type(t) => {
                if let Some(d) = &t.default {
                    return Err(CompileError::new(
                        d.span(),
                        "generic parameters of kernels take no defaults: list the instances in `instances(..)`",
                    ));
                }
                params.push(GenericParam {
                    name: t.ident.to_string(),
                    kind: ParamKind::Type(type_bound(t)?),
                    span: t.ident.span(),
                });
            }
            syn::GenericParam::Const(c) => {
                let ty = parse_type(&c.ty)?;
                let scalar = ty.as_scalar().filter(|s| s.is_int()).ok_or_else(|| {
                    CompileError::new(
                        c.ty.span(),
                        "const parameters of kernels are integers (`const N: usize`)",
                    )
                })?;
                if let Some(d) = &c.default {
                    return Err(CompileError::new(
                        d.span(),
                        "generic parameters of kernels take no defaults: list the instances in `instances(..)`",
                    ));
                }
                params.push(GenericParam {
                    name: c.ident.to_string(),
                    kind: ParamKind::Const(scalar),
                    span: c.ident.span(),
                });
            }
        }
    }
    Ok(params)
}

fn type_bound(t: &syn::TypeParam) -> Result<Bound, CompileError> {
    let usage = "a type parameter of a kernel is bounded by the prelude's traits: `Element` (the numeric types), `DeviceValue`, `AtomicValue`, `AtomicBits` or `MmaElement` (bf16, f16), one or several (`T: Element + AtomicValue`)";
    let mut found: Option<Bound> = None;
    for b in &t.bounds {
        let syn::TypeParamBound::Trait(tb) = b else {
            return Err(CompileError::new(b.span(), usage));
        };
        let name = tb
            .path
            .segments
            .last()
            .map(|s| s.ident.to_string())
            .unwrap_or_default();
        match (name.as_str(), Trait::from_name(&name)) {
            ("Copy" | "Clone" | "Sized", _) => {}
            (_, Some(tr)) => found = Some(found.map_or(Bound::of(tr), |f| f.and(tr))),
            _ => return Err(CompileError::new(tb.span(), usage)),
        }
    }
    let bound = found.ok_or_else(|| CompileError::new(t.span(), usage))?;
    if bound.types().is_empty() {
        return Err(CompileError::new(
            t.bounds.span(),
            format!(
                "no type satisfies `{}: {}`: these traits share no type",
                t.ident,
                bound.name()
            ),
        ));
    }
    Ok(bound)
}

/// A generic argument written as `f32` or `64`, for parameter `param`.
pub fn parse_arg(
    param: &GenericParam,
    arg: &syn::GenericArgument,
) -> Result<GenericArg, CompileError> {
    match (param.kind, arg) {
        (ParamKind::Type(bound), syn::GenericArgument::Type(t)) => {
            let ty = parse_type(t)?;
            check_type_arg(param, bound, &ty, t.span())?;
            Ok(GenericArg::Type(ty))
        }
        (ParamKind::Const(ty), syn::GenericArgument::Const(e)) => const_value(param, ty, e),
        (ParamKind::Const(ty), syn::GenericArgument::Type(syn::Type::Path(p)))
            if p.path.segments.len() == 1 =>
        {
            Err(CompileError::new(
                p.span(),
                format!(
                    "`{}` is not a constant this function can be instantiated with: write an integer literal (`{}` is a `{}`)",
                    p.path.segments[0].ident,
                    param.name,
                    ty.name()
                ),
            ))
        }
        (ParamKind::Type(_), other) => Err(CompileError::new(
            other.span(),
            format!("`{}` is a type parameter: give it a type", param.name),
        )),
        (ParamKind::Const(_), other) => Err(CompileError::new(
            other.span(),
            format!(
                "`{}` is a const parameter: give it an integer literal",
                param.name
            ),
        )),
    }
}

/// Checks that `ty` satisfies `bound`.
pub fn check_type_arg(
    param: &GenericParam,
    bound: Bound,
    ty: &Type,
    span: Span,
) -> Result<(), CompileError> {
    if bound.allows(ty) {
        return Ok(());
    }
    let allowed: Vec<String> = bound.types().iter().map(|t| t.to_string()).collect();
    Err(CompileError::new(
        span,
        format!(
            "`{ty}` does not satisfy `{}: {}`; it may be {}",
            param.name,
            bound.name(),
            allowed.join(", ")
        ),
    ))
}

fn const_value(
    param: &GenericParam,
    ty: Scalar,
    e: &syn::Expr,
) -> Result<GenericArg, CompileError> {
    let (negative, lit) = match strip(e) {
        syn::Expr::Unary(u) if matches!(u.op, syn::UnOp::Neg(_)) => (true, strip(&u.expr)),
        other => (false, other),
    };
    let syn::Expr::Lit(syn::ExprLit {
        lit: syn::Lit::Int(i),
        ..
    }) = lit
    else {
        return Err(CompileError::new(
            e.span(),
            format!(
                "`{}` takes an integer literal (a `{}`)",
                param.name,
                ty.name()
            ),
        ));
    };
    let magnitude: u128 = i
        .base10_parse()
        .map_err(|err| CompileError::new(i.span(), err.to_string()))?;
    let bits = ty.size() * 8;
    let (min, max): (i128, i128) = if ty.is_signed() {
        (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
    } else {
        (0, (1i128 << bits) - 1)
    };
    let value = if negative {
        -(magnitude as i128)
    } else {
        magnitude as i128
    };
    if value < min || value > max {
        return Err(CompileError::new(
            e.span(),
            format!("{value} does not fit `{}` (a `{}`)", param.name, ty.name()),
        ));
    }
    Ok(GenericArg::Const { value, ty })
}

fn strip(e: &syn::Expr) -> &syn::Expr {
    match e {
        syn::Expr::Paren(p) => strip(&p.expr),
        syn::Expr::Group(g) => strip(&g.expr),
        syn::Expr::Block(b) if b.block.stmts.len() == 1 => match &b.block.stmts[0] {
            syn::Stmt::Expr(inner, None) => strip(inner),
            _ => e,
        },
        other => other,
    }
}

/// The symbol of an instance: the name and each argument, joined by `__`
/// (`tile__bf16__64`, a negative constant as `m3`).
pub fn mangle(name: &str, args: &[GenericArg]) -> String {
    let mut s = name.to_string();
    for a in args {
        s.push_str("__");
        match a {
            GenericArg::Type(t) => s.push_str(&t.to_string()),
            GenericArg::Const { value, .. } if *value < 0 => {
                s.push_str(&format!("m{}", value.unsigned_abs()))
            }
            GenericArg::Const { value, .. } => s.push_str(&value.to_string()),
        }
    }
    s
}

/// The instance of generic `item` for `args` (one per parameter of `params`), renamed
/// to its mangled name and without generic parameters.
pub fn instantiate(
    item: &syn::ItemFn,
    params: &[GenericParam],
    args: &[GenericArg],
) -> syn::ItemFn {
    let mut f = item.clone();
    let span = f.sig.ident.span();
    f.sig.generics = syn::Generics::default();
    f.sig.ident = syn::Ident::new(&mangle(&item.sig.ident.to_string(), args), span);
    let mut subst = Substitute::default();
    for (p, a) in params.iter().zip(args) {
        match a {
            GenericArg::Type(t) => {
                subst.types.insert(p.name.clone(), type_ident(t, p.span));
            }
            GenericArg::Const { value, ty } => {
                subst
                    .consts
                    .insert(p.name.clone(), const_literal(*value, *ty, p.span));
            }
        }
    }
    subst.visit_block_mut(&mut f.block);
    subst.visit_signature_mut(&mut f.sig);
    f
}

/// The accumulator type of an element type (`Element::Acc`).
pub fn acc_type(ty: &Type) -> Option<Type> {
    use Scalar::*;
    let s = ty.as_scalar()?;
    Some(Type::Scalar(match s {
        I8 | I16 | I32 => I32,
        U8 | U16 | U32 => U32,
        F16 | BF16 | F32 => F32,
        I64 | U64 | F64 => s,
        Bool => return None,
    }))
}

/// A concrete type argument as the identifier that names it (every scalar and vector
/// has a one-word name).
fn type_ident(ty: &Type, span: Span) -> syn::Ident {
    syn::Ident::new(&ty.to_string(), span)
}

fn const_literal(value: i128, ty: Scalar, span: Span) -> syn::Expr {
    let lit = syn::LitInt::new(&format!("{}{}", value.unsigned_abs(), ty.name()), span);
    let lit = syn::Expr::Lit(syn::ExprLit {
        attrs: vec![],
        lit: syn::Lit::Int(lit),
    });
    if value < 0 {
        syn::parse_quote_spanned!(span=> (-#lit))
    } else {
        lit
    }
}

/// Replaces type parameters by type names and const parameters by literals.
#[derive(Default)]
struct Substitute {
    types: HashMap<String, syn::Ident>,
    consts: HashMap<String, syn::Expr>,
}

impl Substitute {
    /// `T` (alone) -> its type; `T::Acc` -> the accumulator type.
    fn type_path(&self, path: &syn::Path) -> Option<syn::Type> {
        let first = path.segments.first()?;
        let concrete = self.types.get(&first.ident.to_string())?;
        let span = first.ident.span();
        match path.segments.len() {
            1 => Some(syn::parse_quote_spanned!(span=> #concrete)),
            2 if path.segments[1].ident == "Acc" => {
                let ty = Type::Scalar(Scalar::from_name(&concrete.to_string())?);
                let acc = type_ident(&acc_type(&ty)?, span);
                Some(syn::parse_quote_spanned!(span=> #acc))
            }
            _ => None,
        }
    }
}

impl VisitMut for Substitute {
    fn visit_type_mut(&mut self, ty: &mut syn::Type) {
        if let syn::Type::Path(tp) = ty {
            if let Some(q) = &tp.qself {
                // `<T as Element>::Acc`
                if let syn::Type::Path(inner) = &*q.ty {
                    let last = tp.path.segments.last().map(|s| s.ident.to_string());
                    if inner.qself.is_none() && last.as_deref() == Some("Acc") {
                        let mut path = inner.path.clone();
                        path.segments.push(syn::parse_quote!(Acc));
                        if let Some(t) = self.type_path(&path) {
                            *ty = t;
                            return;
                        }
                    }
                }
            } else if let Some(t) = self.type_path(&tp.path) {
                *ty = t;
                return;
            }
        }
        syn::visit_mut::visit_type_mut(self, ty);
    }

    fn visit_expr_mut(&mut self, e: &mut syn::Expr) {
        if let syn::Expr::Path(p) = e {
            if p.qself.is_none() && p.path.segments.len() == 1 {
                if let Some(lit) = self.consts.get(&p.path.segments[0].ident.to_string()) {
                    *e = lit.clone();
                    return;
                }
            }
        }
        syn::visit_mut::visit_expr_mut(self, e);
    }

    fn visit_expr_path_mut(&mut self, p: &mut syn::ExprPath) {
        // `<T as Element>::ZERO` -> `T::ZERO`, then `T::ZERO` -> `f32::ZERO`.
        if let Some(q) = p.qself.take() {
            let mut path: syn::Path = match &*q.ty {
                syn::Type::Path(inner) if inner.qself.is_none() => inner.path.clone(),
                _ => {
                    p.qself = Some(q);
                    syn::visit_mut::visit_expr_path_mut(self, p);
                    return;
                }
            };
            for seg in p.path.segments.iter().skip(q.position) {
                path.segments.push(seg.clone());
            }
            p.path = path;
        }
        self.visit_path_mut(&mut p.path);
    }

    fn visit_path_mut(&mut self, path: &mut syn::Path) {
        // `T::ZERO`, `T::Acc::ZERO`, `T::from_f32`: the type in front.
        if path.segments.len() >= 2 && path.leading_colon.is_none() {
            let acc = path.segments.len() >= 3 && path.segments[1].ident == "Acc";
            let head: syn::Path = if acc {
                syn::Path {
                    leading_colon: None,
                    segments: path.segments.iter().take(2).cloned().collect(),
                }
            } else {
                syn::Path {
                    leading_colon: None,
                    segments: path.segments.iter().take(1).cloned().collect(),
                }
            };
            if let Some(syn::Type::Path(t)) = self.type_path(&head) {
                let rest: Vec<syn::PathSegment> = path
                    .segments
                    .iter()
                    .skip(head.segments.len())
                    .cloned()
                    .collect();
                path.segments = t.path.segments.into_iter().chain(rest).collect();
            }
        }
        syn::visit_mut::visit_path_mut(self, path);
    }

    fn visit_generic_argument_mut(&mut self, arg: &mut syn::GenericArgument) {
        // `shared_array::<T, N>()`: syn reads a lone `N` as a type.
        if let syn::GenericArgument::Type(syn::Type::Path(p)) = arg {
            if p.qself.is_none() && p.path.segments.len() == 1 {
                if let Some(lit) = self.consts.get(&p.path.segments[0].ident.to_string()) {
                    *arg = syn::GenericArgument::Const(lit.clone());
                    return;
                }
            }
        }
        syn::visit_mut::visit_generic_argument_mut(self, arg);
    }
}

/// Every combination of the listed arguments (the first parameter varying slowest).
pub fn combinations(lists: &[Vec<GenericArg>]) -> Vec<Vec<GenericArg>> {
    let mut out: Vec<Vec<GenericArg>> = vec![vec![]];
    for list in lists {
        out = out
            .into_iter()
            .flat_map(|prefix| {
                list.iter().map(move |a| {
                    let mut v = prefix.clone();
                    v.push(a.clone());
                    v
                })
            })
            .collect();
    }
    out
}

/// Binds `params` by matching each declared parameter type against the type of the
/// argument a call passes (`x: T` with an `f32` binds `T = f32`; `p: *const [T; N]`...).
pub fn infer_from_args(
    params: &[GenericParam],
    declared: &[syn::Type],
    actual: &[Type],
    bound: &mut HashMap<String, GenericArg>,
) {
    for (d, a) in declared.iter().zip(actual) {
        match_type(params, d, a, bound);
    }
}

fn match_type(
    params: &[GenericParam],
    declared: &syn::Type,
    actual: &Type,
    bound: &mut HashMap<String, GenericArg>,
) {
    match (declared, actual) {
        (syn::Type::Paren(p), _) => match_type(params, &p.elem, actual, bound),
        (syn::Type::Group(g), _) => match_type(params, &g.elem, actual, bound),
        (syn::Type::Ptr(p), Type::Ptr { pointee, .. }) => {
            match_type(params, &p.elem, pointee, bound)
        }
        (syn::Type::Array(arr), Type::Array { elem, len }) => {
            match_type(params, &arr.elem, elem, bound);
            if let syn::Expr::Path(p) = &arr.len {
                if let Some(name) = p.path.get_ident().map(|i| i.to_string()) {
                    if let Some(ParamKind::Const(ty)) =
                        params.iter().find(|g| g.name == name).map(|g| g.kind)
                    {
                        bound.entry(name).or_insert(GenericArg::Const {
                            value: *len as i128,
                            ty,
                        });
                    }
                }
            }
        }
        (syn::Type::Path(tp), _) if tp.qself.is_none() => {
            if let Some(ident) = tp.path.get_ident() {
                let name = ident.to_string();
                if params
                    .iter()
                    .any(|g| g.name == name && matches!(g.kind, ParamKind::Type(_)))
                {
                    if matches!(actual, Type::Scalar(_) | Type::Vector(_)) {
                        bound
                            .entry(name)
                            .or_insert(GenericArg::Type(actual.clone()));
                    }
                    return;
                }
            }
            let last = tp.path.segments.last();
            if let (Some(seg), Type::Symmetric(elem)) = (last, actual) {
                if seg.ident == "Symmetric" {
                    if let Some(inner) = super::types::single_type_argument(&seg.arguments) {
                        match_type(params, inner, elem, bound);
                    }
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::ToTokens;

    fn params_of(f: &syn::ItemFn) -> Vec<GenericParam> {
        generic_params(&f.sig).unwrap()
    }

    #[test]
    fn instances_replace_types_consts_and_accumulators() {
        let f: syn::ItemFn = syn::parse_quote! {
            fn sum<T: Element, const N: usize>(x: *const T, out: *mut T) {
                let mut acc: T::Acc = <T as Element>::Acc::ZERO;
                let buf = shared_array::<T, N>();
                let a = [T::ZERO; N];
                for i in 0..N { acc += widen(*x.add(i)); }
                *out = narrow::<T>(acc) + T::ONE;
            }
        };
        let params = params_of(&f);
        let args = vec![
            GenericArg::Type(Type::Scalar(Scalar::BF16)),
            GenericArg::Const {
                value: 8,
                ty: Scalar::U64,
            },
        ];
        let inst = instantiate(&f, &params, &args);
        let text = inst.to_token_stream().to_string();
        assert!(
            text.starts_with("fn sum__bf16__8 (x : * const bf16"),
            "{text}"
        );
        for part in [
            "let mut acc : f32 = f32 :: ZERO",
            "shared_array :: < bf16 , 8u64 > ()",
            "[bf16 :: ZERO ; 8u64]",
            "0 .. 8u64",
            "narrow :: < bf16 > (acc) + bf16 :: ONE",
        ] {
            assert!(text.contains(part), "`{part}` missing from {text}");
        }
    }

    #[test]
    fn bounds_and_literals_are_checked() {
        let f: syn::ItemFn = syn::parse_quote!(
            fn k<T: Element, const N: u8>() {}
        );
        let params = params_of(&f);
        let e = parse_arg(&params[0], &syn::parse_quote!(bool)).unwrap_err();
        assert!(
            e.message.contains("`bool` does not satisfy `T: Element`"),
            "{}",
            e.message
        );
        let e = parse_arg(&params[1], &syn::parse_quote!(300)).unwrap_err();
        assert!(e.message.contains("300 does not fit `N`"), "{}", e.message);
        assert_eq!(
            parse_arg(&params[1], &syn::parse_quote!(7)).unwrap(),
            GenericArg::Const {
                value: 7,
                ty: Scalar::U8
            }
        );
        let where_fn: syn::ItemFn = syn::parse_quote!(
            fn k<T>()
            where
                T: Element,
            {
            }
        );
        assert!(generic_params(&where_fn.sig).is_err());
        let unbounded: syn::ItemFn = syn::parse_quote!(
            fn k<T: Send>() {}
        );
        assert!(generic_params(&unbounded.sig).is_err());
    }

    #[test]
    fn mangled_names_and_combinations() {
        let t = |s| GenericArg::Type(Type::Scalar(s));
        let c = |v| GenericArg::Const {
            value: v,
            ty: Scalar::I32,
        };
        assert_eq!(mangle("k", &[t(Scalar::F16), c(-3)]), "k__f16__m3");
        let all = combinations(&[vec![t(Scalar::F32), t(Scalar::I8)], vec![c(1), c(2)]]);
        assert_eq!(all.len(), 4);
        assert_eq!(all[1], vec![t(Scalar::F32), c(2)]);
    }

    #[test]
    fn arguments_are_inferred_from_parameter_types() {
        let f: syn::ItemFn = syn::parse_quote!(
            fn h<T: Element, const N: usize>(p: *const T, a: [T; N], s: Symmetric<T>) {}
        );
        let params = params_of(&f);
        let declared: Vec<syn::Type> = f
            .sig
            .inputs
            .iter()
            .map(|a| match a {
                syn::FnArg::Typed(pt) => (*pt.ty).clone(),
                syn::FnArg::Receiver(_) => unreachable!(),
            })
            .collect();
        let f32t = Type::Scalar(Scalar::F32);
        let actual = vec![
            Type::Ptr {
                pointee: Box::new(f32t.clone()),
                mutable: false,
            },
            Type::Array {
                elem: Box::new(f32t.clone()),
                len: 4,
            },
            Type::Symmetric(Box::new(f32t.clone())),
        ];
        let mut bound = HashMap::new();
        infer_from_args(&params, &declared, &actual, &mut bound);
        assert_eq!(bound["T"], GenericArg::Type(f32t));
        assert_eq!(
            bound["N"],
            GenericArg::Const {
                value: 4,
                ty: Scalar::U64
            }
        );
    }
}
