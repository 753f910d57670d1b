//! After a function is built: replace inference variables by their final types.

use super::super::kernel_ir::{Block, Expr, ExprKind, Function, Place, Stmt};
use super::infer::InferTable;

/// Resolves every type in `f`.
pub fn resolve_function(f: &mut Function, infer: &InferTable) {
    for l in &mut f.locals {
        l.ty = infer.resolve(&l.ty);
    }
    resolve_block(&mut f.body, infer);
}

fn resolve_block(b: &mut Block, infer: &InferTable) {
    b.ty = infer.resolve(&b.ty);
    for s in &mut b.stmts {
        match s {
            Stmt::Let { init: Some(e), .. } | Stmt::Expr(e) => resolve_expr(e, infer),
            Stmt::Let { init: None, .. } => {}
        }
    }
    if let Some(t) = &mut b.tail {
        resolve_expr(t, infer);
    }
}

fn resolve_expr(e: &mut Expr, infer: &InferTable) {
    e.ty = infer.resolve(&e.ty);
    match &mut e.kind {
        ExprKind::Int(_)
        | ExprKind::Float(_)
        | ExprKind::Bool(_)
        | ExprKind::Local(_)
        | ExprKind::Break
        | ExprKind::Continue
        | ExprKind::Return(None) => {}
        ExprKind::Unary(_, x)
        | ExprKind::Cast(x)
        | ExprKind::Deref(x)
        | ExprKind::Return(Some(x))
        | ExprKind::ArrayRepeat { value: x, .. } => resolve_expr(x, infer),
        ExprKind::Binary(_, a, b) => {
            resolve_expr(a, infer);
            resolve_expr(b, infer);
        }
        ExprKind::Assign { place, value, .. } => {
            match &mut **place {
                Place::Deref(p) => resolve_expr(p, infer),
                Place::Index { indices, .. } => {
                    indices.iter_mut().for_each(|i| resolve_expr(i, infer))
                }
                Place::Local(_) | Place::Field { .. } => {}
            }
            resolve_expr(value, infer);
        }
        ExprKind::If {
            cond,
            then_block,
            else_block,
        } => {
            resolve_expr(cond, infer);
            resolve_block(then_block, infer);
            if let Some(b) = else_block {
                resolve_block(b, infer);
            }
        }
        ExprKind::Block(b) | ExprKind::Loop { body: b } => resolve_block(b, infer),
        ExprKind::While { cond, body } => {
            resolve_expr(cond, infer);
            resolve_block(body, infer);
        }
        ExprKind::ForRange {
            start, end, body, ..
        } => {
            resolve_expr(start, infer);
            resolve_expr(end, infer);
            resolve_block(body, infer);
        }
        ExprKind::Field { base, .. } => resolve_expr(base, infer),
        ExprKind::Call { args: list, .. }
        | ExprKind::ArrayList(list)
        | ExprKind::Aggregate(list) => {
            for a in list {
                resolve_expr(a, infer);
            }
        }
        ExprKind::Index { indices, .. } => {
            for i in indices {
                resolve_expr(i, infer);
            }
        }
        ExprKind::Intrinsic(op) => {
            for a in op.operands_mut() {
                resolve_expr(a, infer);
            }
        }
    }
}
