//! Method calls: pointer arithmetic, `Symmetric<T>` views, float math, f16 conversion,
//! vector lanes.

use super::super::kernel_ir::{Expr, ExprKind, Intrinsic, Scalar, Type, UnaryOp};
use super::super::CompileError;
use super::builder::FnBuilder;
use super::types::{is_memory_type, parse_type, single_type_argument};
use proc_macro2::Span;
use syn::spanned::Spanned;

impl FnBuilder<'_> {
    /// `receiver.method(args)`.
    pub fn method_call(&mut self, m: &syn::ExprMethodCall) -> Result<Expr, CompileError> {
        let span = m.span();
        let name = m.method.to_string();
        let receiver = self.expr_tree(&m.receiver)?;
        let args: Vec<Expr> = m
            .args
            .iter()
            .map(|a| self.expr_tree(a))
            .collect::<Result<_, _>>()?;
        let arity = |n: usize| -> Result<(), CompileError> {
            if args.len() != n {
                return Err(CompileError::new(
                    span,
                    format!("`{name}` takes {n} argument(s), {} given", args.len()),
                ));
            }
            Ok(())
        };
        let turbofish = m.turbofish.as_ref();
        if matches!(name.as_str(), "to_f32" | "to_f64" | "widen") {
            arity(0)?;
            let t = self.infer.shallow(&receiver.ty);
            if self.infer.is_int(&t) || self.infer.is_float(&t) {
                if let Some(e) = self.element_method(receiver, &name, span)? {
                    return Ok(e);
                }
                return Err(CompileError::new(span, format!("no method `{name}` here")));
            }
        }
        match self.infer.shallow(&receiver.ty) {
            Type::Ptr { pointee, mutable } => match name.as_str() {
                "add" | "sub" | "offset" | "wrapping_add" | "wrapping_sub" | "wrapping_offset" => {
                    arity(1)?;
                    let count = self.element_count(&name, args, span)?;
                    let ty = receiver.ty.clone();
                    Ok(self.expr(ExprKind::Intrinsic(Intrinsic::PtrOffset { ptr: Box::new(receiver), count: Box::new(count) }), ty, span))
                }
                "cast" => {
                    arity(0)?;
                    let to = cast_target(turbofish, span)?;
                    Ok(self.expr(ExprKind::Cast(Box::new(receiver)), Type::Ptr { pointee: Box::new(to), mutable }, span))
                }
                "read" | "read_volatile" => {
                    arity(0)?;
                    Ok(self.expr(ExprKind::Deref(Box::new(receiver)), *pointee, span))
                }
                "write" | "write_volatile" => {
                    arity(1)?;
                    if !mutable {
                        return Err(CompileError::new(span, "cannot write through a `*const` pointer: declare it `*mut`"));
                    }
                    let value = args.into_iter().next().ok_or_else(|| CompileError::new(span, "missing value"))?;
                    self.expect(&value, &pointee)?;
                    let place = super::super::kernel_ir::Place::Deref(receiver);
                    Ok(self.expr(
                        ExprKind::Assign { place: Box::new(place), op: None, value: Box::new(value) },
                        Type::Unit,
                        span,
                    ))
                }
                _ => Err(CompileError::new(
                    m.method.span(),
                    format!("raw pointers in kernels have `add`, `sub`, `offset`, `cast`, `read` and `write`; not `{name}`"),
                )),
            },
            Type::Symmetric(elem) => match name.as_str() {
                "add" | "sub" | "offset" => {
                    arity(1)?;
                    let count = self.element_count(&name, args, span)?;
                    let ty = receiver.ty.clone();
                    Ok(self.expr(ExprKind::Intrinsic(Intrinsic::SymOffset { sym: Box::new(receiver), count: Box::new(count) }), ty, span))
                }
                "local" => {
                    arity(0)?;
                    Ok(self.expr(
                        ExprKind::Intrinsic(Intrinsic::SymLocal { sym: Box::new(receiver) }),
                        Type::Ptr { pointee: elem, mutable: true },
                        span,
                    ))
                }
                "peer_ptr" => {
                    arity(1)?;
                    let peer = args.into_iter().next().ok_or_else(|| CompileError::new(span, "missing peer"))?;
                    self.expect(&peer, &Type::Scalar(Scalar::U32))?;
                    Ok(self.expr(
                        ExprKind::Intrinsic(Intrinsic::SymPeerPtr { sym: Box::new(receiver), peer: Box::new(peer) }),
                        Type::Ptr { pointee: elem, mutable: true },
                        span,
                    ))
                }
                "cast" => {
                    arity(0)?;
                    let to = cast_target(turbofish, span)?;
                    Ok(self.expr(
                        ExprKind::Intrinsic(Intrinsic::SymCast { sym: Box::new(receiver) }),
                        Type::Symmetric(Box::new(to)),
                        span,
                    ))
                }
                _ => Err(CompileError::new(
                    m.method.span(),
                    format!("`Symmetric<T>` has `add`, `sub`, `offset`, `local`, `peer_ptr` and `cast`; not `{name}` (remote access goes through `iris::load`/`iris::store`)"),
                )),
            },
            Type::Vector(v) => match name.as_str() {
                "get" => {
                    arity(1)?;
                    let lane = match m.args.first() {
                        Some(syn::Expr::Lit(syn::ExprLit { lit: syn::Lit::Int(i), .. })) => {
                            i.base10_parse::<u32>().map_err(|e| CompileError::new(i.span(), e.to_string()))?
                        }
                        _ => return Err(CompileError::new(span, "the lane of `get` must be an integer literal")),
                    };
                    if lane >= v.lanes {
                        return Err(CompileError::new(span, format!("lane {lane} is out of range: `{}` has {} lanes", v.name(), v.lanes)));
                    }
                    Ok(self.expr(ExprKind::Intrinsic(Intrinsic::VecGet { vector: Box::new(receiver), lane }), Type::Scalar(v.elem), span))
                }
                _ => Err(CompileError::new(m.method.span(), format!("vectors have `get`, `+`, `-` and `*`; not `{name}`"))),
            },
            Type::Scalar(Scalar::F16 | Scalar::BF16) => match name.as_str() {
                "to_f32" | "to_f64" => {
                    arity(0)?;
                    let to = if name == "to_f32" { Scalar::F32 } else { Scalar::F64 };
                    Ok(self.expr(ExprKind::Cast(Box::new(receiver)), Type::Scalar(to), span))
                }
                _ => Err(CompileError::new(
                    m.method.span(),
                    format!("f16 and bf16 have `to_f32`/`to_f64` in kernels (and `+ - * /`); not `{name}`"),
                )),
            },
            t if self.infer.is_float(&t) || self.infer.is_int(&t) => match name.as_str() {
                "sqrt" | "abs" | "min" | "max" => {
                    arity(if matches!(name.as_str(), "min" | "max") { 1 } else { 0 })?;
                    self.math(&name, receiver, args, span)
                }
                "wrapping_add" | "wrapping_sub" | "wrapping_mul" if self.infer.is_int(&t) => {
                    arity(1)?;
                    let op = match name.as_str() {
                        "wrapping_add" => super::super::kernel_ir::BinaryOp::Add,
                        "wrapping_sub" => super::super::kernel_ir::BinaryOp::Sub,
                        _ => super::super::kernel_ir::BinaryOp::Mul,
                    };
                    let rhs = args.into_iter().next().ok_or_else(|| CompileError::new(span, "missing argument"))?;
                    self.binary_op(op, receiver, rhs, span)
                }
                _ => Err(CompileError::new(
                    m.method.span(),
                    format!("`{name}` is not supported on numbers in kernels; available: sqrt, abs, min, max, wrapping_add/sub/mul"),
                )),
            },
            other => Err(CompileError::new(
                m.receiver.span(),
                format!("no method `{name}` on `{}` in kernels", self.infer.describe(&other)),
            )),
        }
    }

    /// The element count of `add`/`sub`/`offset` as an `i64` (negated for `sub`).
    fn element_count(
        &mut self,
        method: &str,
        args: Vec<Expr>,
        span: Span,
    ) -> Result<Expr, CompileError> {
        let Some(count) = args.into_iter().next() else {
            return Err(CompileError::new(span, "missing count"));
        };
        let want = if method.contains("offset") {
            Scalar::I64
        } else {
            Scalar::U64
        };
        self.expect(&count, &Type::Scalar(want))?;
        let cspan = count.span;
        let as_i64 = if want == Scalar::I64 {
            count
        } else {
            self.expr(
                ExprKind::Cast(Box::new(count)),
                Type::Scalar(Scalar::I64),
                cspan,
            )
        };
        if method.contains("sub") {
            Ok(self.expr(
                ExprKind::Unary(UnaryOp::Neg, Box::new(as_i64)),
                Type::Scalar(Scalar::I64),
                cspan,
            ))
        } else {
            Ok(as_i64)
        }
    }
}

fn cast_target(
    turbofish: Option<&syn::AngleBracketedGenericArguments>,
    span: Span,
) -> Result<Type, CompileError> {
    let args = turbofish.map(|t| syn::PathArguments::AngleBracketed(t.clone()));
    let ty = args
        .as_ref()
        .and_then(single_type_argument)
        .ok_or_else(|| CompileError::new(span, "write the target type: `.cast::<f32x4>()`"))?;
    let t = parse_type(ty)?;
    if !is_memory_type(&t) {
        return Err(CompileError::new(
            ty.span(),
            "pointers can be cast to scalars, 16-byte vectors and arrays of numbers only",
        ));
    }
    Ok(t)
}
