//! Warpgroup matrix operations: `wg_zero`, `wg_mma`, `wg_wait`, `wg_store` (see the
//! prelude's `matrix` module).

use super::super::kernel_ir::{Expr, ExprKind, Fragment, FragmentRole, Intrinsic, Scalar, Type};
use super::super::CompileError;
use super::builder::FnBuilder;
use super::matrix::not_mma_element;
use super::operands::Operands;
use proc_macro2::Span;

impl FnBuilder<'_> {
    /// A warpgroup matrix operation `name(args)`.
    pub fn warpgroup_call(
        &mut self,
        name: &str,
        args: Vec<Expr>,
        span: Span,
    ) -> Result<Expr, CompileError> {
        let want = match name {
            "wg_zero" | "wg_commit" => 0,
            "wg_wait" => 2,
            "wg_store" => 3,
            _ => 4,
        };
        let mut args = Operands::new(name, args, want, span)?;
        let u32t = Type::Scalar(Scalar::U32);
        let acc_ty = Type::Fragment(Fragment {
            role: FragmentRole::WgAcc,
            elem: Scalar::F32,
        });
        let mut next = || args.next();
        let (op, ty) = match name {
            "wg_zero" => (Intrinsic::WgZero, acc_ty),
            "wg_commit" => (Intrinsic::WgCommit, Type::Unit),
            "wg_wait" => {
                let (acc, pending) = (next()?, next()?);
                self.expect(&acc, &acc_ty)?;
                let pending = match pending.kind {
                    ExprKind::Int(n) if n <= 7 => n as u32,
                    _ => {
                        return Err(CompileError::new(
                            pending.span,
                            "`wg_wait` takes the number of batches that may stay in flight as an integer literal from 0 to 7",
                        ))
                    }
                };
                (Intrinsic::WgWait { acc, pending }, acc_ty)
            }
            "wg_store" | "wg_store_peer" => {
                let (tile, ld, acc) = (next()?, next()?, next()?);
                let peer = if name == "wg_store_peer" {
                    Some(next()?)
                } else {
                    None
                };
                self.expect_store_tile(&tile, peer.as_deref())?;
                self.expect(&ld, &u32t)?;
                self.expect(&acc, &acc_ty)?;
                (
                    Intrinsic::WgStore {
                        tile,
                        ld,
                        acc,
                        peer,
                    },
                    Type::Unit,
                )
            }
            _ => {
                let (a, b, kstep, acc) = (next()?, next()?, next()?, next()?);
                let elem = self.tile_element(name, &a)?;
                let want_b = Type::Ptr {
                    pointee: Box::new(Type::Scalar(elem)),
                    mutable: false,
                };
                if !matches!(self.infer.shallow(&b.ty), Type::Ptr { pointee, .. } if *pointee == Type::Scalar(elem))
                {
                    return Err(CompileError::new(
                        b.span,
                        format!(
                            "`wg_mma`'s B tile is a `{want_b}` (the element type of A), not `{}`",
                            self.infer.describe(&self.infer.shallow(&b.ty))
                        ),
                    ));
                }
                self.expect(&kstep, &u32t)?;
                self.expect(&acc, &acc_ty)?;
                self.uses_warpgroup_mma = true;
                (
                    Intrinsic::WgMma {
                        elem,
                        a,
                        b,
                        kstep,
                        acc,
                    },
                    acc_ty,
                )
            }
        };
        Ok(self.expr(ExprKind::Intrinsic(op), ty, span))
    }

    /// The element type of the tile `ptr` points at: `bf16` or `f16`.
    fn tile_element(&mut self, name: &str, ptr: &Expr) -> Result<Scalar, CompileError> {
        match self.infer.shallow(&ptr.ty) {
            Type::Ptr { pointee, .. } => match *pointee {
                Type::Scalar(s @ (Scalar::BF16 | Scalar::F16)) => Ok(s),
                other => Err(not_mma_element(ptr.span, &other)),
            },
            other => Err(CompileError::new(
                ptr.span,
                format!(
                    "`{name}` reads its tiles through raw pointers to `bf16` or `f16` in shared memory, not `{}`",
                    self.infer.describe(&other)
                ),
            )),
        }
    }
}
