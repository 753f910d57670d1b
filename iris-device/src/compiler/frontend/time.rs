//! Clocks, sleeping and trace events: `global_timer_ns()`, `clock64()`, `nanosleep(ns)`,
//! `trace_event(id, value)`.

use super::super::kernel_ir::{Expr, ExprKind, Intrinsic, Scalar, Type};
use super::super::CompileError;
use super::builder::FnBuilder;
use super::calls::operands;
use proc_macro2::Span;

impl FnBuilder<'_> {
    /// A clock, sleep or trace event `name(..)`.
    pub fn time_call(
        &mut self,
        name: &str,
        c: &syn::ExprCall,
        span: Span,
    ) -> Result<Expr, CompileError> {
        let u32t = Type::Scalar(Scalar::U32);
        match name {
            "global_timer_ns" | "clock64" => {
                self.arity(c, name, 0)?;
                let op = if name == "clock64" {
                    Intrinsic::Clock64
                } else {
                    Intrinsic::GlobalTimerNs
                };
                Ok(self.expr(ExprKind::Intrinsic(op), Type::Scalar(Scalar::U64), span))
            }
            "nanosleep" => {
                self.arity(c, name, 1)?;
                let args = self.args(c)?;
                self.expect(&args[0], &u32t)?;
                Ok(self.expr(
                    ExprKind::Intrinsic({
                        let [ns] = operands(args);
                        Intrinsic::Nanosleep { ns }
                    }),
                    Type::Unit,
                    span,
                ))
            }
            "trace_event" => {
                self.arity(c, name, 2)?;
                let args = self.args(c)?;
                self.expect(&args[0], &u32t)?;
                self.expect(&args[1], &Type::Scalar(Scalar::U64))?;
                let [id, value] = operands(args);
                Ok(self.expr(
                    ExprKind::Intrinsic(Intrinsic::TraceEvent { id, value }),
                    Type::Unit,
                    span,
                ))
            }
            _ => Err(super::calls::unknown_intrinsic(name, span)),
        }
    }
}
