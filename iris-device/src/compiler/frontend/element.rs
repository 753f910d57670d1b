//! What the prelude's `Element` trait gives generic kernels, on concrete types once they
//! are instantiated: `T::ZERO`/`ONE`/`MIN`/`MAX`, `T::from_f32(x)`, `x.to_f32()`,
//! `widen(x)`/`x.widen()`, `narrow::<T>(acc)`/`T::narrow(acc)`, `min(a, b)`, `max(a, b)`.

use super::super::kernel_ir::{Expr, ExprKind, Scalar, Type};
use super::super::CompileError;
use super::builder::FnBuilder;
use super::generics::acc_type;
use super::types::{parse_type, single_type_argument};
use proc_macro2::Span;

impl FnBuilder<'_> {
    /// `T::ZERO`, `T::ONE`, and `T::MIN`/`T::MAX` of `f16`/`bf16` (the other types' MIN
    /// and MAX are their own constants).
    pub fn element_constant(&mut self, s: Scalar, name: &str, span: Span) -> Option<Expr> {
        if s == Scalar::Bool {
            return None;
        }
        let t = Type::Scalar(s);
        let float = |v: f64| ExprKind::Float(v);
        let kind = match (name, s) {
            ("ZERO", _) if s.is_float() => float(0.0),
            ("ONE", _) if s.is_float() => float(1.0),
            ("ZERO", _) => ExprKind::Int(0),
            ("ONE", _) => ExprKind::Int(1),
            ("MAX", Scalar::F16) => float(half::f16::MAX.to_f64()),
            ("MIN", Scalar::F16) => float(half::f16::MIN.to_f64()),
            ("MAX", Scalar::BF16) => float(half::bf16::MAX.to_f64()),
            ("MIN", Scalar::BF16) => float(half::bf16::MIN.to_f64()),
            ("INFINITY", Scalar::F16 | Scalar::BF16) => float(f64::INFINITY),
            ("NEG_INFINITY", Scalar::F16 | Scalar::BF16) => float(f64::NEG_INFINITY),
            _ => return None,
        };
        Some(self.expr(kind, t, span))
    }

    /// `T::from_f32(x)`, `T::from_f64(x)`, `T::widen(x)`, `T::narrow(acc)`.
    pub fn element_function(
        &mut self,
        s: Scalar,
        name: &str,
        args: Vec<Expr>,
        span: Span,
    ) -> Result<Option<Expr>, CompileError> {
        if s == Scalar::Bool {
            return Ok(None);
        }
        let (from, to) = match name {
            "from_f32" => (Type::Scalar(Scalar::F32), Type::Scalar(s)),
            "from_f64" => (Type::Scalar(Scalar::F64), Type::Scalar(s)),
            "widen" => (Type::Scalar(s), acc_of(s)),
            "narrow" => (acc_of(s), Type::Scalar(s)),
            _ => return Ok(None),
        };
        let [x] = one_argument(name, args, span)?;
        self.expect(&x, &from)?;
        Ok(Some(self.convert(x, to, span)))
    }

    /// `x.to_f32()`, `x.to_f64()`, `x.widen()` on any number.
    pub fn element_method(
        &mut self,
        receiver: Expr,
        name: &str,
        span: Span,
    ) -> Result<Option<Expr>, CompileError> {
        let t = self.infer.shallow(&receiver.ty);
        let to = match (name, &t) {
            ("to_f32", _) => Type::Scalar(Scalar::F32),
            ("to_f64", _) => Type::Scalar(Scalar::F64),
            ("widen", Type::Scalar(s)) => acc_of(*s),
            ("widen", _) => {
                return Err(CompileError::new(
                    span,
                    "`widen` needs the type of its value: give the literal a suffix",
                ))
            }
            _ => return Ok(None),
        };
        Ok(Some(self.convert(receiver, to, span)))
    }

    /// The prelude's free functions of `Element`: `widen(x)`, `narrow::<T>(acc)`,
    /// `min(a, b)`, `max(a, b)`.
    pub fn element_free_function(
        &mut self,
        name: &str,
        generics: &syn::PathArguments,
        args: Vec<Expr>,
        span: Span,
    ) -> Result<Option<Expr>, CompileError> {
        match name {
            "widen" => {
                let [x] = one_argument(name, args, span)?;
                self.element_method(x, "widen", span)
            }
            "narrow" => {
                let ty = single_type_argument(generics).ok_or_else(|| {
                    CompileError::new(span, "write the element type: `narrow::<T>(acc)`")
                })?;
                let Type::Scalar(s) = parse_type(ty)? else {
                    return Err(CompileError::new(
                        span,
                        "`narrow` converts to an element type",
                    ));
                };
                self.element_function(s, "narrow", args, span)
            }
            "min" | "max" => {
                if args.len() != 2 {
                    return Err(CompileError::new(
                        span,
                        format!("`{name}` takes 2 arguments, {} given", args.len()),
                    ));
                }
                let mut it = args.into_iter();
                let (Some(a), Some(b)) = (it.next(), it.next()) else {
                    return Err(CompileError::new(span, "missing argument"));
                };
                self.math(name, a, vec![b], span).map(Some)
            }
            _ => Ok(None),
        }
    }

    /// `x` converted to `to` (as `as` does; f16/bf16 included).
    fn convert(&mut self, x: Expr, to: Type, span: Span) -> Expr {
        if self.infer.shallow(&x.ty) == to {
            return x;
        }
        self.expr(ExprKind::Cast(Box::new(x)), to, span)
    }
}

/// The accumulator type of a numeric scalar.
fn acc_of(s: Scalar) -> Type {
    acc_type(&Type::Scalar(s)).unwrap_or(Type::Scalar(s))
}

fn one_argument(name: &str, args: Vec<Expr>, span: Span) -> Result<[Expr; 1], CompileError> {
    let n = args.len();
    <[Expr; 1]>::try_from(args)
        .map_err(|_| CompileError::new(span, format!("`{name}` takes 1 argument, {n} given")))
}

/// The type a path segment names when it is `Acc<T>`, as a type name (`Acc<bf16>` is
/// `f32`); `None` for any other segment.
pub fn acc_segment(seg: &syn::PathSegment) -> Option<String> {
    if seg.ident != "Acc" {
        return None;
    }
    let ty = parse_type(single_type_argument(&seg.arguments)?).ok()?;
    acc_type(&ty).map(|t| t.to_string())
}
