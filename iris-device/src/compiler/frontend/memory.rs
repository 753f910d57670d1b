//! Remote memory: `load`, `store`, `get`, `put`, `copy` on any rank's copy of a
//! `Symmetric<T>`.

use super::super::kernel_ir::{Expr, ExprKind, Intrinsic, Scalar, Type};
use super::super::CompileError;
use super::builder::FnBuilder;
use super::calls::operands;
use proc_macro2::Span;

impl FnBuilder<'_> {
    /// A remote memory operation `name(..)`.
    pub fn memory_call(
        &mut self,
        name: &str,
        c: &syn::ExprCall,
        span: Span,
    ) -> Result<Expr, CompileError> {
        let u32t = Type::Scalar(Scalar::U32);
        match name {
            "load" => {
                self.arity(c, name, 2)?;
                let args = self.args(c)?;
                let elem = self.symmetric_elem(&args[0])?;
                self.expect(&args[1], &u32t)?;
                Ok(self.expr(
                    ExprKind::Intrinsic({
                        let [sym, peer] = operands(args);
                        Intrinsic::RemoteLoad { sym, peer }
                    }),
                    elem,
                    span,
                ))
            }
            "store" => {
                self.arity(c, name, 3)?;
                let args = self.args(c)?;
                let elem = self.symmetric_elem(&args[0])?;
                self.expect(&args[1], &elem)?;
                self.expect(&args[2], &u32t)?;
                Ok(self.expr(
                    ExprKind::Intrinsic({
                        let [sym, value, peer] = operands(args);
                        Intrinsic::RemoteStore { sym, value, peer }
                    }),
                    Type::Unit,
                    span,
                ))
            }
            "get" => {
                self.arity(c, name, 3)?;
                let args = self.args(c)?;
                let elem = self.symmetric_elem(&args[0])?;
                self.expect(
                    &args[1],
                    &Type::Ptr {
                        pointee: Box::new(elem),
                        mutable: true,
                    },
                )?;
                self.expect(&args[2], &u32t)?;
                Ok(self.expr(
                    ExprKind::Intrinsic({
                        let [src, dst, peer] = operands(args);
                        Intrinsic::Get { src, dst, peer }
                    }),
                    Type::Unit,
                    span,
                ))
            }
            "put" => {
                self.arity(c, name, 3)?;
                let args = self.args(c)?;
                let elem = self.symmetric_elem(&args[1])?;
                match self.infer.shallow(&args[0].ty) {
                    Type::Ptr { pointee, .. } => {
                        self.infer.unify(&pointee, &elem, args[0].span)?;
                    }
                    other => {
                        return Err(CompileError::new(
                            args[0].span,
                            format!(
                                "`put` reads from a local pointer (`*const {elem}`), found `{}`",
                                self.infer.describe(&other)
                            ),
                        ))
                    }
                }
                self.expect(&args[2], &u32t)?;
                Ok(self.expr(
                    ExprKind::Intrinsic({
                        let [src, dst, peer] = operands(args);
                        Intrinsic::Put { src, dst, peer }
                    }),
                    Type::Unit,
                    span,
                ))
            }
            "copy" => {
                self.arity(c, name, 4)?;
                let args = self.args(c)?;
                let src = self.symmetric_elem(&args[0])?;
                let dst = self.symmetric_elem(&args[1])?;
                self.infer.unify(&dst, &src, args[1].span)?;
                self.expect(&args[2], &u32t)?;
                self.expect(&args[3], &u32t)?;
                Ok(self.expr(
                    ExprKind::Intrinsic({
                        let [src, dst, from_peer, to_peer] = operands(args);
                        Intrinsic::Copy {
                            src,
                            dst,
                            from_peer,
                            to_peer,
                        }
                    }),
                    Type::Unit,
                    span,
                ))
            }
            _ => Err(super::calls::unknown_intrinsic(name, span)),
        }
    }

    /// The element type of a `Symmetric<T>` argument.
    pub fn symmetric_elem(&self, e: &Expr) -> Result<Type, CompileError> {
        match self.infer.shallow(&e.ty) {
            Type::Symmetric(t) => Ok(*t),
            Type::Ptr { .. } => Err(CompileError::new(
                e.span,
                "expected a `Symmetric<T>`, found a raw pointer: remote operations need the allocation's peer table, so the parameter must be `Symmetric<T>`",
            )),
            other => Err(CompileError::new(e.span, format!("expected a `Symmetric<T>`, found `{}`", self.infer.describe(&other)))),
        }
    }
}
