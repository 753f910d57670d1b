//! Function calls: device functions of the unit, associated functions of types
//! (`f32x4::new`, `f16::from_f32`), and device intrinsics (`iris::store`,
//! `thread_idx_x`, ...), which the intrinsic table hands to their family's file.

use super::super::kernel_ir::{
    intrinsic_names, lookup_intrinsic, Expr, ExprKind, Family, GenericArg, Intrinsic, Operand,
    Scalar, Type, Vector,
};
use super::super::CompileError;
use super::builder::FnBuilder;
use super::generics;
use proc_macro2::Span;
use syn::spanned::Spanned;

/// Path prefixes under which the prelude's functions may be named.
const PRELUDE_PREFIXES: &[&[&str]] = &[
    &[],
    &["iris"],
    &["iris", "prelude"],
    &["iris_device"],
    &["iris_device", "prelude"],
];

impl FnBuilder<'_> {
    /// `f(args)`.
    pub fn call(&mut self, c: &syn::ExprCall) -> Result<Expr, CompileError> {
        let syn::Expr::Path(path) = &*c.func else {
            return Err(CompileError::new(
                c.func.span(),
                "only named functions can be called in kernels",
            ));
        };
        if path.qself.is_some() {
            return Err(CompileError::new(
                path.span(),
                "qualified paths are not supported in kernels",
            ));
        }
        let segs: Vec<String> = path
            .path
            .segments
            .iter()
            .map(|s| super::element::acc_segment(s).unwrap_or_else(|| s.ident.to_string()))
            .collect();
        let span = c.span();
        let Some((name, prefix)) = segs.split_last() else {
            return Err(CompileError::new(path.span(), "empty path"));
        };
        // A device function of the unit.
        if prefix.is_empty() || prefix == ["self"] {
            if let Some(index) = self.unit.find(name) {
                self.no_generic_arguments(path, name)?;
                let args = self.args(c)?;
                return self.device_call(index, c, args, span);
            }
            if self.unit.template(name).is_some() {
                return self.generic_call(name, path, c, span);
            }
        }
        // `Type::function(..)`.
        if prefix.len() == 1 {
            if let Some(e) = self.associated_call(&prefix[0], name, c, span)? {
                return Ok(e);
            }
        }
        if PRELUDE_PREFIXES.iter().any(|p| *p == prefix) {
            let generics = &path.path.segments[path.path.segments.len() - 1].arguments;
            return self.intrinsic_call(name, generics, c, span);
        }
        Err(CompileError::new(
            path.span(),
            format!(
                "cannot call `{}` in a kernel: kernels call the iris device API (`iris::store`, `iris::load`, ...), the thread/block id functions, device functions of the same `#[iris::kernels]` module, and those of the `#[iris::device]` libraries it names (`#[iris::kernels(uses(path::to::library))]`, then call them by their own name)",
                segs.join("::")
            ),
        ))
    }

    pub(super) fn args(&mut self, c: &syn::ExprCall) -> Result<Vec<Expr>, CompileError> {
        c.args.iter().map(|a| self.expr_tree(a)).collect()
    }

    pub(super) fn arity(
        &self,
        c: &syn::ExprCall,
        name: &str,
        n: usize,
    ) -> Result<(), CompileError> {
        if c.args.len() != n {
            return Err(CompileError::new(
                c.span(),
                format!(
                    "`{name}` takes {n} argument{}, {} given",
                    if n == 1 { "" } else { "s" },
                    c.args.len()
                ),
            ));
        }
        Ok(())
    }

    fn no_generic_arguments(&self, path: &syn::ExprPath, name: &str) -> Result<(), CompileError> {
        match path.path.segments.last().map(|s| &s.arguments) {
            Some(syn::PathArguments::None) | None => Ok(()),
            Some(a) => Err(CompileError::new(
                a.span(),
                format!("`{name}` is not generic: call it without `::<..>`"),
            )),
        }
    }

    /// A call to a generic device function: its arguments are the turbofish's (in
    /// order), then whatever the call's argument types imply.
    fn generic_call(
        &mut self,
        name: &str,
        path: &syn::ExprPath,
        c: &syn::ExprCall,
        span: Span,
    ) -> Result<Expr, CompileError> {
        let unit = self.unit;
        let Some(t) = unit.template(name) else {
            return Err(CompileError::new(span, format!("`{name}` is not generic")));
        };
        let params = t.params.clone();
        let declared = t.declared.clone();
        self.arity(c, name, declared.len())?;
        let args = self.args(c)?;
        let mut bound = std::collections::HashMap::new();
        if let Some(syn::PathArguments::AngleBracketed(a)) =
            path.path.segments.last().map(|s| &s.arguments)
        {
            if a.args.len() > params.len() {
                return Err(CompileError::new(
                    a.span(),
                    format!(
                        "`{name}` has {} generic parameter(s), {} given",
                        params.len(),
                        a.args.len()
                    ),
                ));
            }
            for (p, g) in params.iter().zip(&a.args) {
                bound.insert(p.name.clone(), generics::parse_arg(p, g)?);
            }
        }
        let actual: Vec<Type> = args.iter().map(|a| self.infer.known(&a.ty)).collect();
        generics::infer_from_args(&params, &declared, &actual, &mut bound);
        let mut list = Vec::new();
        for p in &params {
            let Some(arg) = bound.remove(&p.name) else {
                return Err(CompileError::new(
                    span,
                    format!(
                        "cannot tell `{}` of `{name}` from this call: name it, `{name}::<..>(..)`, or give the literal argument a suffix (`1.0f32`)",
                        p.name
                    ),
                ));
            };
            if let (generics::ParamKind::Type(b), GenericArg::Type(ty)) = (p.kind, &arg) {
                generics::check_type_arg(p, b, ty, span)?;
            }
            list.push(arg);
        }
        let index = unit.instance(name, list, span)?;
        self.device_call(index, c, args, span)
    }

    fn device_call(
        &mut self,
        index: usize,
        c: &syn::ExprCall,
        args: Vec<Expr>,
        span: Span,
    ) -> Result<Expr, CompileError> {
        let sig = self.unit.sig(index);
        if sig.is_kernel {
            return Err(CompileError::new(
                span,
                format!("`{}` is a kernel: kernels are launched from the host, not called from device code", sig.name),
            ));
        }
        if index == self.this {
            return Err(CompileError::new(
                span,
                "recursion is not supported in kernels (GPU threads have small fixed stacks): write it as a loop",
            ));
        }
        self.arity(c, &sig.name, sig.params.len())?;
        for (a, p) in args.iter().zip(&sig.params) {
            self.expect(a, &p.ty)?;
        }
        Ok(self.expr(ExprKind::Call { func: index, args }, sig.ret.clone(), span))
    }

    fn associated_call(
        &mut self,
        ty: &str,
        name: &str,
        c: &syn::ExprCall,
        span: Span,
    ) -> Result<Option<Expr>, CompileError> {
        if let Some(v) = Vector::from_name(ty) {
            let vt = Type::Vector(v);
            return match name {
                "new" => {
                    self.arity(c, &format!("{ty}::new"), 1)?;
                    let Some(syn::Expr::Array(arr)) = c.args.first() else {
                        return Err(CompileError::new(
                            c.span(),
                            format!(
                                "`{ty}::new` takes an array of {} lanes: `{ty}::new([..])`",
                                v.lanes
                            ),
                        ));
                    };
                    if arr.elems.len() != v.lanes as usize {
                        return Err(CompileError::new(
                            arr.span(),
                            format!("`{ty}` has {} lanes, {} given", v.lanes, arr.elems.len()),
                        ));
                    }
                    let mut lanes = Vec::new();
                    for e in &arr.elems {
                        let lane = self.expr_tree(e)?;
                        self.expect(&lane, &Type::Scalar(v.elem))?;
                        lanes.push(lane);
                    }
                    Ok(Some(self.expr(
                        ExprKind::Intrinsic(Intrinsic::VecNew { lanes }),
                        vt,
                        span,
                    )))
                }
                "splat" => {
                    self.arity(c, &format!("{ty}::splat"), 1)?;
                    let args = self.args(c)?;
                    self.expect(&args[0], &Type::Scalar(v.elem))?;
                    Ok(Some(self.expr(
                        ExprKind::Intrinsic({
                            let [value] = operands(args);
                            Intrinsic::VecSplat { value }
                        }),
                        vt,
                        span,
                    )))
                }
                _ => Err(CompileError::new(
                    span,
                    format!(
                        "`{ty}::{name}` is not supported; vectors have `new`, `splat` and `get`"
                    ),
                )),
            };
        }
        let Some(s) = Scalar::from_name(ty) else {
            return Ok(None);
        };
        if matches!(name, "widen" | "narrow")
            || (matches!(name, "from_f32" | "from_f64") && !matches!(s, Scalar::F16 | Scalar::BF16))
        {
            self.arity(c, name, 1)?;
            let args = self.args(c)?;
            return self.element_function(s, name, args, span);
        }
        match (s, name) {
            (Scalar::F16 | Scalar::BF16, "from_f32" | "from_f64") => {
                self.arity(c, name, 1)?;
                let args = self.args(c)?;
                let from = if name == "from_f32" {
                    Scalar::F32
                } else {
                    Scalar::F64
                };
                self.expect(&args[0], &Type::Scalar(from))?;
                let arg = args.into_iter().next().map(Box::new);
                match arg {
                    Some(a) => Ok(Some(self.expr(ExprKind::Cast(a), Type::Scalar(s), span))),
                    None => Err(CompileError::new(span, "missing argument")),
                }
            }
            (_, "sqrt" | "abs" | "min" | "max") => {
                let n = if matches!(name, "min" | "max") { 2 } else { 1 };
                self.arity(c, &format!("{ty}::{name}"), n)?;
                let mut args = self.args(c)?.into_iter();
                let (Some(first), rest) = (args.next(), args.collect::<Vec<_>>()) else {
                    return Err(CompileError::new(span, "missing argument"));
                };
                self.expect(&first, &Type::Scalar(s))?;
                Ok(Some(self.math(name, first, rest, span)?))
            }
            (_, "from") => {
                // Rust's lossless `From` conversions between numbers (rustc checks the
                // exact impls on the kernel's source): a conversion that keeps the value.
                self.arity(c, &format!("{ty}::from"), 1)?;
                let arg = self.args(c)?.into_iter().next();
                let Some(arg) = arg else {
                    return Err(CompileError::new(span, "missing argument"));
                };
                match self.infer.shallow(&arg.ty) {
                    Type::Scalar(from) if lossless(from, s) => Ok(Some(self.expr(
                        ExprKind::Cast(Box::new(arg)),
                        Type::Scalar(s),
                        span,
                    ))),
                    other => Err(CompileError::new(
                        span,
                        format!(
                            "`{ty}::from` takes a number it holds exactly, not `{}`: convert with a cast (`x as {ty}`){}",
                            self.infer.describe(&other),
                            if matches!(other, Type::IntVar(_) | Type::FloatVar(_)) {
                                ", or give the literal a suffix (`7u32`)"
                            } else {
                                ""
                            }
                        ),
                    )),
                }
            }
            _ => Err(CompileError::new(
                span,
                format!("`{ty}::{name}` is not supported in kernels"),
            )),
        }
    }

    /// `x.sqrt()`, `x.min(y)`, ... on floats (and min/max/abs on integers).
    pub fn math(
        &mut self,
        name: &str,
        x: Expr,
        rest: Vec<Expr>,
        span: Span,
    ) -> Result<Expr, CompileError> {
        use super::super::kernel_ir::MathFn;
        let f = match name {
            "sqrt" => MathFn::Sqrt,
            "abs" => MathFn::Abs,
            "min" => MathFn::Min,
            "max" => MathFn::Max,
            _ => {
                return Err(CompileError::new(
                    span,
                    format!("`{name}` is not supported"),
                ))
            }
        };
        let t = self.infer.shallow(&x.ty);
        let float = self.infer.is_float(&t);
        let int = self.infer.is_int(&t);
        let ok = match f {
            MathFn::Sqrt => float,
            MathFn::Abs => {
                float
                    || t.as_scalar().is_some_and(|s| s.is_signed())
                    || matches!(t, Type::IntVar(_))
            }
            MathFn::Min | MathFn::Max => float || int,
        };
        if !ok || matches!(t, Type::Scalar(Scalar::F16 | Scalar::BF16)) {
            return Err(CompileError::new(
                span,
                format!(
                    "`{name}` is not available for `{}` in kernels",
                    self.infer.describe(&t)
                ),
            ));
        }
        let mut args = vec![x];
        for r in rest {
            let ty = args[0].ty.clone();
            self.expect(&r, &ty)?;
            args.push(r);
        }
        let ty = args[0].ty.clone();
        Ok(self.expr(
            ExprKind::Intrinsic({
                let mut args = args.into_iter().map(Box::new);
                let x = args
                    .next()
                    .ok_or_else(|| CompileError::new(span, "missing argument"))?;
                Intrinsic::Math {
                    f,
                    x,
                    y: args.next(),
                }
            }),
            ty,
            span,
        ))
    }

    fn intrinsic_call(
        &mut self,
        name: &str,
        generics: &syn::PathArguments,
        c: &syn::ExprCall,
        span: Span,
    ) -> Result<Expr, CompileError> {
        let entry = lookup_intrinsic(name).ok_or_else(|| unknown_intrinsic(name, span))?;
        match entry.family {
            Family::Ids => self.id_call(name, c, span),
            Family::Block => self.block_call(name, generics, c, span),
            Family::Time => self.time_call(name, c, span),
            Family::Memory => self.memory_call(name, c, span),
            Family::Atomics => self.atomic_call(name, c, span),
            Family::Signals => self.signal_call(name, c, span),
            Family::Warp => {
                let args = self.args(c)?;
                self.warp_call(name, args, span)
            }
            Family::Matrix => {
                let args = self.args(c)?;
                self.matrix_call(name, args, span)
            }
            Family::Element => {
                let args = self.args(c)?;
                self.element_free_function(name, generics, args, span)?
                    .ok_or_else(|| unknown_intrinsic(name, span))
            }
            // Methods are not free functions: the table has none of this family.
            Family::Values => Err(unknown_intrinsic(name, span)),
        }
    }
}

/// Arguments whose count was checked, as an intrinsic's operands. A count that does not
/// match cannot happen (every caller checks the arity first); it would panic in the macro.
pub(super) fn operands<const N: usize>(args: Vec<Expr>) -> [Operand; N] {
    let boxed: Vec<Operand> = args.into_iter().map(Box::new).collect();
    match boxed.try_into() {
        Ok(array) => array,
        Err(v) => unreachable!("{} operands where {N} were checked", v.len()),
    }
}

pub(super) fn unknown_intrinsic(name: &str, span: Span) -> CompileError {
    CompileError::new(
        span,
        format!(
            "cannot call `{name}` in a kernel: it is neither an iris device function nor a device function of this `#[iris::kernels]` module (a function of an `#[iris::device]` library is called after naming the library: `#[iris::kernels(uses(path::to::library))]`); the device API has {}.",
            intrinsic_names()
        ),
    )
}

/// Whether Rust converts `from` to `to` with `From` (every value kept exactly).
fn lossless(from: Scalar, to: Scalar) -> bool {
    use Scalar::*;
    if from == to {
        return true;
    }
    match (from, to) {
        (Bool, t) => t.is_int(),
        (f, t) if f.is_int() && t.is_int() => {
            t.size() > f.size() && (f.is_signed() == t.is_signed() || !f.is_signed())
        }
        (f, F32) if f.is_int() => f.size() <= 2,
        (f, F64) if f.is_int() => f.size() <= 4,
        (F16 | BF16, F32 | F64) | (F32, F64) => true,
        _ => false,
    }
}
