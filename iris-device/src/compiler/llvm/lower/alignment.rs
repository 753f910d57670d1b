//! What the kernel's own expressions prove about a pointer: that it points into a shared
//! array, and to how many bytes it is aligned. `mma_load` uses it to compile `ldmatrix`
//! alone where the 16-byte alignment is proven (LLVM's known-bits analysis stops a few
//! operations deep, so a GEMM's fragment addresses, built from a buffer index, a warp's
//! offset and a k step, would otherwise keep an element-by-element fallback and a branch
//! per fragment in the inner loop).
//!
//! Integers: the largest power of two known to divide the value, from literals, `*`, `+`,
//! `-`, `|`, `^`, `&`, `<<` by a literal, casts, and immutable locals' initializers.
//! Pointers: a shared array's alignment (static arrays the target's, arrays in the
//! dynamic block that and their offset's), lowered by each `add` to the power of two
//! dividing the byte offset; pointer casts keep it.

use std::collections::HashMap;

use super::super::super::kernel_ir::{
    BinaryOp, Block, Expr, ExprKind, Intrinsic, LocalId, Stmt, Type,
};
use super::builder::FnBuilder;

/// The largest divisor tracked (and a literal 0's).
const CAP: u64 = 1 << 20;

/// How far the analysis follows locals' initializers.
const MAX_DEPTH: u32 = 32;

impl FnBuilder<'_> {
    /// Whether `p` provably points into a shared array with `align`-byte alignment.
    pub(super) fn proves_shared_aligned(&self, p: &Expr, align: u64) -> bool {
        if !self.arch().is_gpu() {
            return false;
        }
        let arrays = self.shared_aligns.get_or_init(|| {
            (0..self.func.shared_arrays.len())
                .map(|i| self.shared_array_align(i).unwrap_or(1))
                .collect()
        });
        pointer_facts(p, self.immutable_lets(), arrays, 0).is_some_and(|a| a >= align)
    }

    /// Whether `e` (an integer) is provably a multiple of `d` (a power of two).
    pub(super) fn proves_multiple(&self, e: &Expr, d: u64) -> bool {
        divisor(e, self.immutable_lets(), 0) >= d
    }

    /// The initializer of every immutable local bound by a `let` with one, gathered once
    /// per function.
    fn immutable_lets(&self) -> &HashMap<LocalId, Expr> {
        self.immutable_lets
            .get_or_init(|| self.gather_immutable_lets())
    }

    fn gather_immutable_lets(&self) -> HashMap<LocalId, Expr> {
        let mut out = HashMap::new();
        record_lets(&self.func.body, &mut out);
        // Every block nested anywhere in the body (`walk` visits every expression).
        self.func.body.walk(&mut |e| match &e.kind {
            ExprKind::If {
                then_block,
                else_block,
                ..
            } => {
                record_lets(then_block, &mut out);
                if let Some(b) = else_block {
                    record_lets(b, &mut out);
                }
            }
            ExprKind::Block(b)
            | ExprKind::Loop { body: b }
            | ExprKind::While { body: b, .. }
            | ExprKind::ForRange { body: b, .. } => record_lets(b, &mut out),
            _ => {}
        });
        out.retain(|id, _| self.func.locals.get(*id).is_some_and(|l| !l.mutable));
        out
    }
}

/// The `let`s with an initializer directly in `block`.
fn record_lets(block: &Block, out: &mut HashMap<LocalId, Expr>) {
    for s in &block.stmts {
        if let Stmt::Let {
            local,
            init: Some(e),
        } = s
        {
            out.insert(*local, e.clone());
        }
    }
}

/// The alignment in bytes `p` is known to have, if it points into a shared array.
fn pointer_facts(
    p: &Expr,
    lets: &HashMap<LocalId, Expr>,
    arrays: &[u64],
    depth: u32,
) -> Option<u64> {
    if depth > MAX_DEPTH {
        return None;
    }
    match &p.kind {
        ExprKind::Intrinsic(Intrinsic::SharedArray { index }) => arrays.get(*index).copied(),
        ExprKind::Intrinsic(Intrinsic::PtrOffset { ptr, count }) => {
            let base = pointer_facts(ptr, lets, arrays, depth + 1)?;
            let elem = match &ptr.ty {
                Type::Ptr { pointee, .. } => u64::from(pointee.size()?),
                _ => return None,
            };
            let step = divisor(count, lets, depth + 1)
                .saturating_mul(elem)
                .min(CAP);
            Some(base.min(step))
        }
        ExprKind::Cast(x) if matches!(x.ty, Type::Ptr { .. }) => {
            pointer_facts(x, lets, arrays, depth + 1)
        }
        ExprKind::Local(id) => pointer_facts(lets.get(id)?, lets, arrays, depth + 1),
        // `unsafe { p.add(..) }`
        ExprKind::Block(b) if b.stmts.is_empty() => {
            pointer_facts(b.tail.as_deref()?, lets, arrays, depth + 1)
        }
        _ => None,
    }
}

/// The largest power of two known to divide integer `e` (1 when nothing is known).
fn divisor(e: &Expr, lets: &HashMap<LocalId, Expr>, depth: u32) -> u64 {
    if depth > MAX_DEPTH {
        return 1;
    }
    let d = |x: &Expr| divisor(x, lets, depth + 1);
    match &e.kind {
        ExprKind::Int(0) => CAP,
        ExprKind::Int(v) => (1u64 << v.trailing_zeros().min(20)).min(CAP),
        ExprKind::Binary(op, a, b) => match op {
            BinaryOp::Mul => d(a).saturating_mul(d(b)).min(CAP),
            BinaryOp::Add | BinaryOp::Sub | BinaryOp::BitOr | BinaryOp::BitXor => d(a).min(d(b)),
            BinaryOp::BitAnd => d(a).max(d(b)),
            BinaryOp::Shl => match &b.kind {
                ExprKind::Int(s) if *s < 20 => d(a).saturating_mul(1 << s).min(CAP),
                _ => 1,
            },
            _ => 1,
        },
        // An integer cast keeps the low bits (narrowing keeps a power of two up to the
        // new width, and the widths here are at least 8 bits; the cap is below that).
        ExprKind::Cast(x) if is_integer(&x.ty) && is_integer(&e.ty) => {
            let bits = e.ty.size().map_or(8, |s| 8 * u64::from(s));
            d(x).min(1u64 << bits.min(20))
        }
        ExprKind::Local(id) => lets.get(id).map_or(1, &d),
        ExprKind::Block(b) if b.stmts.is_empty() => b.tail.as_deref().map_or(1, d),
        _ => 1,
    }
}

fn is_integer(ty: &Type) -> bool {
    matches!(ty, Type::Scalar(s) if s.is_int())
}
