//! Atomics on any rank's copy: `atomic_add` .. `atomic_xchg`, `atomic_cas`,
//! `atomic_load`, `atomic_store`, and their constant orderings and scopes.

use super::super::kernel_ir::{Expr, ExprKind, Intrinsic, MemOrder, MemScope, RmwOp, Scalar, Type};
use super::super::CompileError;
use super::builder::FnBuilder;
use super::calls::operands;
use proc_macro2::Span;
use syn::spanned::Spanned;

impl FnBuilder<'_> {
    /// An atomic `name(..)`.
    pub fn atomic_call(
        &mut self,
        name: &str,
        c: &syn::ExprCall,
        span: Span,
    ) -> Result<Expr, CompileError> {
        match name {
            "atomic_add" | "atomic_sub" | "atomic_and" | "atomic_or" | "atomic_xor"
            | "atomic_min" | "atomic_max" | "atomic_xchg" => self.atomic_rmw(name, c, span),
            "atomic_cas" => {
                let (args, elem, order, scope) = self.atomic_operands(name, c, 4)?;
                self.atomic_type(&elem, true, name, args[0].span)?;
                self.expect(&args[1], &elem)?;
                self.expect(&args[2], &elem)?;
                let [sym, current, new, peer] = operands(args);
                let op = Intrinsic::AtomicCas {
                    order,
                    scope,
                    sym,
                    current,
                    new,
                    peer,
                };
                Ok(self.expr(ExprKind::Intrinsic(op), elem, span))
            }
            "atomic_load" => {
                let (args, elem, order, scope) = self.atomic_operands(name, c, 2)?;
                if matches!(order, MemOrder::Release | MemOrder::AcqRel) {
                    return Err(CompileError::new(c.args[2].span(), "an atomic load cannot be `Release` or `AcqRel`: use Relaxed, Acquire or SeqCst"));
                }
                let [sym, peer] = operands(args);
                let op = Intrinsic::AtomicLoad {
                    order,
                    scope,
                    sym,
                    peer,
                };
                Ok(self.expr(ExprKind::Intrinsic(op), elem, span))
            }
            "atomic_store" => {
                let (args, elem, order, scope) = self.atomic_operands(name, c, 3)?;
                if matches!(order, MemOrder::Acquire | MemOrder::AcqRel) {
                    return Err(CompileError::new(c.args[3].span(), "an atomic store cannot be `Acquire` or `AcqRel`: use Relaxed, Release or SeqCst"));
                }
                self.expect(&args[1], &elem)?;
                let [sym, value, peer] = operands(args);
                let op = Intrinsic::AtomicStore {
                    order,
                    scope,
                    sym,
                    value,
                    peer,
                };
                Ok(self.expr(ExprKind::Intrinsic(op), Type::Unit, span))
            }
            _ => Err(super::calls::unknown_intrinsic(name, span)),
        }
    }

    fn atomic_rmw(
        &mut self,
        name: &str,
        c: &syn::ExprCall,
        span: Span,
    ) -> Result<Expr, CompileError> {
        let op = match name {
            "atomic_add" => RmwOp::Add,
            "atomic_sub" => RmwOp::Sub,
            "atomic_and" => RmwOp::And,
            "atomic_or" => RmwOp::Or,
            "atomic_xor" => RmwOp::Xor,
            "atomic_min" => RmwOp::Min,
            "atomic_max" => RmwOp::Max,
            _ => RmwOp::Xchg,
        };
        let (args, elem, order, scope) = self.atomic_operands(name, c, 3)?;
        let bits_only = !matches!(op, RmwOp::Add | RmwOp::Sub);
        self.atomic_type(&elem, bits_only, name, args[0].span)?;
        self.expect(&args[1], &elem)?;
        let [sym, value, peer] = operands(args);
        let op = Intrinsic::AtomicRmw {
            op,
            order,
            scope,
            sym,
            value,
            peer,
        };
        Ok(self.expr(ExprKind::Intrinsic(op), elem, span))
    }

    /// The operands every atomic shares: `values` arguments (the `Symmetric<T>` first,
    /// the `u32` peer last), then a constant ordering and a constant scope. Returns the
    /// value arguments, the element type, the ordering and the scope.
    fn atomic_operands(
        &mut self,
        name: &str,
        c: &syn::ExprCall,
        values: usize,
    ) -> Result<(Vec<Expr>, Type, MemOrder, MemScope), CompileError> {
        self.arity(c, name, values + 2)?;
        let order = ordering_arg(&c.args[values])?;
        let scope = scope_arg(&c.args[values + 1])?;
        let args: Vec<Expr> = c
            .args
            .iter()
            .take(values)
            .map(|a| self.expr_tree(a))
            .collect::<Result<_, _>>()?;
        let elem = self.symmetric_elem(&args[0])?;
        if !matches!(elem, Type::Scalar(_)) {
            return Err(CompileError::new(
                args[0].span,
                format!("`{name}` works on scalars, not `{elem}`"),
            ));
        }
        self.expect(&args[values - 1], &Type::Scalar(Scalar::U32))?;
        Ok((args, elem, order, scope))
    }

    fn atomic_type(
        &self,
        elem: &Type,
        ints_only: bool,
        name: &str,
        span: Span,
    ) -> Result<(), CompileError> {
        let ok = match elem {
            Type::Scalar(s) => {
                matches!(s, Scalar::I32 | Scalar::U32 | Scalar::I64 | Scalar::U64)
                    || (!ints_only && matches!(s, Scalar::F32 | Scalar::F64))
            }
            _ => false,
        };
        if !ok {
            let allowed = if ints_only {
                "i32, u32, i64, u64"
            } else {
                "i32, u32, i64, u64, f32, f64"
            };
            return Err(CompileError::new(
                span,
                format!("`{name}` works on {allowed}, not `{elem}`"),
            ));
        }
        Ok(())
    }
}

fn last_two(e: &syn::Expr) -> Option<(String, String)> {
    let syn::Expr::Path(p) = e else { return None };
    let segs: Vec<String> = p
        .path
        .segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect();
    match segs.as_slice() {
        [.., a, b] => Some((a.clone(), b.clone())),
        _ => None,
    }
}

/// A constant written as `Type::Variant` (any path prefix), looked up in `variants`.
pub(super) fn constant_arg<T: Copy>(
    e: &syn::Expr,
    type_name: &str,
    variants: &[(&str, T)],
    usage: &str,
) -> Result<T, CompileError> {
    last_two(e)
        .filter(|(ty, _)| ty == type_name)
        .and_then(|(_, name)| {
            variants
                .iter()
                .find(|(v, _)| *v == name)
                .map(|(_, value)| *value)
        })
        .ok_or_else(|| CompileError::new(e.span(), usage))
}

/// `Ordering::Acquire` (any prefix) as a constant.
pub(super) fn ordering_arg(e: &syn::Expr) -> Result<MemOrder, CompileError> {
    constant_arg(
        e,
        "Ordering",
        &[
            ("Relaxed", MemOrder::Relaxed),
            ("Acquire", MemOrder::Acquire),
            ("Release", MemOrder::Release),
            ("AcqRel", MemOrder::AcqRel),
            ("SeqCst", MemOrder::SeqCst),
        ],
        "the ordering must be written as a constant: `Ordering::Relaxed`, `Acquire`, `Release`, `AcqRel` or `SeqCst`",
    )
}

/// `Scope::System` (any prefix) as a constant.
pub(super) fn scope_arg(e: &syn::Expr) -> Result<MemScope, CompileError> {
    constant_arg(
        e,
        "Scope",
        &[("Block", MemScope::Block), ("Device", MemScope::Device), ("System", MemScope::System)],
        "the scope must be written as a constant: `Scope::Block`, `Scope::Device` or `Scope::System` (use System across ranks)",
    )
}
