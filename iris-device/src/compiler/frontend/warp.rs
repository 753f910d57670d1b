//! Warp operations: lane and warp ids, shuffles, votes, `warp_sync`, warp reductions.

use super::super::kernel_ir::{
    Expr, ExprKind, Intrinsic, ReduceOp, Scalar, ShuffleKind, Type, VoteKind,
};
use super::super::CompileError;
use super::builder::FnBuilder;
use super::operands::Operands;
use proc_macro2::Span;

impl FnBuilder<'_> {
    /// A warp operation `name(args)`.
    pub fn warp_call(
        &mut self,
        name: &str,
        args: Vec<Expr>,
        span: Span,
    ) -> Result<Expr, CompileError> {
        let want = match name {
            "lane_id" | "warp_size" | "warp_id" | "warp_sync" => 0,
            "ballot" | "any" | "all" | "warp_reduce_add" | "warp_reduce_min"
            | "warp_reduce_max" => 1,
            _ => 2,
        };
        let mut args = Operands::new(name, args, want, span)?;
        let u32t = Type::Scalar(Scalar::U32);
        let mut next = || args.next();
        let (op, ty) = match name {
            "lane_id" => (Intrinsic::LaneId, u32t),
            "warp_size" => (Intrinsic::WarpSize, u32t),
            "warp_id" => (Intrinsic::WarpId, u32t),
            "warp_sync" => {
                self.uses_warp = true;
                (Intrinsic::WarpSync, Type::Unit)
            }
            "shfl" | "shfl_xor" | "shfl_down" | "shfl_up" => {
                let kind = match name {
                    "shfl" => ShuffleKind::Index,
                    "shfl_xor" => ShuffleKind::Xor,
                    "shfl_down" => ShuffleKind::Down,
                    _ => ShuffleKind::Up,
                };
                let value = next()?;
                let lane = next()?;
                self.expect(&lane, &u32t)?;
                let t = self.infer.shallow(&value.ty);
                if !matches!(
                    t,
                    Type::Scalar(_)
                        | Type::Vector(_)
                        | Type::Ptr { .. }
                        | Type::IntVar(_)
                        | Type::FloatVar(_)
                ) {
                    return Err(CompileError::new(
                        value.span,
                        format!(
                            "`{name}` moves scalars, vectors and raw pointers, not `{}`",
                            self.infer.describe(&t)
                        ),
                    ));
                }
                self.uses_warp = true;
                let ty = value.ty.clone();
                (Intrinsic::Shuffle { kind, value, lane }, ty)
            }
            "ballot" | "any" | "all" => {
                let pred = next()?;
                self.expect(&pred, &Type::Scalar(Scalar::Bool))?;
                self.uses_warp = true;
                let (kind, ty) = match name {
                    "ballot" => (VoteKind::Ballot, Type::Scalar(Scalar::U64)),
                    "any" => (VoteKind::Any, Type::Scalar(Scalar::Bool)),
                    _ => (VoteKind::All, Type::Scalar(Scalar::Bool)),
                };
                (Intrinsic::Vote { kind, pred }, ty)
            }
            _ => {
                let op = match name {
                    "warp_reduce_add" => ReduceOp::Add,
                    "warp_reduce_min" => ReduceOp::Min,
                    _ => ReduceOp::Max,
                };
                let value = next()?;
                let t = self.infer.shallow(&value.ty);
                if !(self.infer.is_int(&t) || self.infer.is_float(&t)) {
                    return Err(CompileError::new(
                        value.span,
                        format!(
                            "`{name}` reduces numbers, not `{}`",
                            self.infer.describe(&t)
                        ),
                    ));
                }
                self.uses_warp = true;
                let ty = value.ty.clone();
                (Intrinsic::WarpReduce { op, value }, ty)
            }
        };
        Ok(self.expr(ExprKind::Intrinsic(op), ty, span))
    }
}
