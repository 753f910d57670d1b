//! Matrix-unit operations: `mma_load_a`, `mma_load_b`, `mma_zero`, `mma`, `mma_store`,
//! `mma_store_peer`, `mma_add_peer` (see the prelude's `matrix` module).

use super::super::kernel_ir::{Expr, ExprKind, Fragment, FragmentRole, Intrinsic, Scalar, Type};
use super::super::CompileError;
use super::builder::FnBuilder;
use super::operands::Operands;
use proc_macro2::Span;

impl FnBuilder<'_> {
    /// A matrix operation `name(args)`.
    pub fn matrix_call(
        &mut self,
        name: &str,
        args: Vec<Expr>,
        span: Span,
    ) -> Result<Expr, CompileError> {
        if name.starts_with("wg_") {
            return self.warpgroup_call(name, args, span);
        }
        let want = match name {
            "mma_zero" => 0,
            "mma_load_a" | "mma_load_b" => 2,
            "mma_load_a_swizzled" | "mma_load_b_swizzled" => 3,
            "mma" | "mma_store" => 3,
            _ => 4,
        };
        let mut args = Operands::new(name, args, want, span)?;
        let u32t = Type::Scalar(Scalar::U32);
        let acc_ty = Type::Fragment(Fragment {
            role: FragmentRole::Acc,
            elem: Scalar::F32,
        });
        let mut next = || args.next();
        let (op, ty) = match name {
            "mma_load_a" | "mma_load_b" | "mma_load_a_swizzled" | "mma_load_b_swizzled" => {
                let tile = next()?;
                let elem = match self.infer.shallow(&tile.ty) {
                    Type::Ptr { pointee, .. } => match *pointee {
                        Type::Scalar(s @ (Scalar::BF16 | Scalar::F16)) => s,
                        other => return Err(not_mma_element(tile.span, &other)),
                    },
                    other => {
                        return Err(CompileError::new(
                            tile.span,
                            format!(
                                "`{name}` loads through a raw pointer to `bf16` or `f16`, not `{}`",
                                self.infer.describe(&other)
                            ),
                        ))
                    }
                };
                let role = if name.starts_with("mma_load_a") {
                    FragmentRole::A
                } else {
                    FragmentRole::B
                };
                let op = if name.ends_with("_swizzled") {
                    let (row, col) = (next()?, next()?);
                    self.expect(&row, &u32t)?;
                    self.expect(&col, &u32t)?;
                    Intrinsic::MmaLoadSwizzled {
                        role,
                        elem,
                        tile,
                        row,
                        col,
                    }
                } else {
                    let ld = next()?;
                    self.expect(&ld, &u32t)?;
                    Intrinsic::MmaLoad {
                        role,
                        elem,
                        tile,
                        ld,
                    }
                };
                (op, Type::Fragment(Fragment { role, elem }))
            }
            "mma_zero" => (Intrinsic::MmaZero, acc_ty),
            "mma" => {
                let (a, b, acc) = (next()?, next()?, next()?);
                let elem = match self.infer.shallow(&a.ty) {
                    Type::Fragment(Fragment {
                        role: FragmentRole::A,
                        elem,
                    }) => elem,
                    other => return Err(wrong_fragment(a.span, "an `MmaA<T>`", &other)),
                };
                let want_b = Type::Fragment(Fragment {
                    role: FragmentRole::B,
                    elem,
                });
                if self.infer.shallow(&b.ty) != want_b {
                    return Err(wrong_fragment(
                        b.span,
                        &format!("`{want_b}` (the element type of `a`)"),
                        &self.infer.shallow(&b.ty),
                    ));
                }
                self.expect(&acc, &acc_ty)?;
                self.uses_warp = true;
                (Intrinsic::Mma { elem, a, b, acc }, acc_ty)
            }
            _ => {
                let (tile, ld, acc) = (next()?, next()?, next()?);
                let peer = if name == "mma_store_peer" || name == "mma_add_peer" {
                    Some(next()?)
                } else {
                    None
                };
                self.expect_store_tile(&tile, peer.as_deref())?;
                self.expect(&ld, &u32t)?;
                self.expect(&acc, &acc_ty)?;
                (
                    Intrinsic::MmaStore {
                        add: name == "mma_add_peer",
                        tile,
                        ld,
                        acc,
                        peer,
                    },
                    Type::Unit,
                )
            }
        };
        Ok(self.expr(ExprKind::Intrinsic(op), ty, span))
    }
}

impl FnBuilder<'_> {
    /// The tile an accumulator is stored into: a `Symmetric<f32>` with a `u32` peer, or
    /// a `*mut f32`.
    pub(super) fn expect_store_tile(
        &mut self,
        tile: &Expr,
        peer: Option<&Expr>,
    ) -> Result<(), CompileError> {
        let f32t = Box::new(Type::Scalar(Scalar::F32));
        match peer {
            Some(peer) => {
                self.expect(peer, &Type::Scalar(Scalar::U32))?;
                self.expect(tile, &Type::Symmetric(f32t))
            }
            None => self.expect(
                tile,
                &Type::Ptr {
                    pointee: f32t,
                    mutable: true,
                },
            ),
        }
    }
}

pub(super) fn not_mma_element(span: Span, ty: &Type) -> CompileError {
    CompileError::new(
        span,
        format!("the matrix units multiply `bf16` or `f16` tiles, not `{ty}`"),
    )
}

fn wrong_fragment(span: Span, want: &str, got: &Type) -> CompileError {
    CompileError::new(span, format!("`mma` wants {want} here, not `{got}`"))
}
