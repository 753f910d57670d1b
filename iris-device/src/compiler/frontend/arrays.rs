//! Register arrays: `[x; N]`, `[a, b, c]`, `a[i]`, `a[i][j] = ..`.
//!
//! Arrays are local values meant to live in registers, so every index must be known
//! once loops are unrolled: a constant, or an expression of `for` variables whose ranges
//! are constant. Each index is checked against the length here, for every value those
//! variables take; the lowering unrolls such loops fully.

use super::super::kernel_ir::{BinaryOp, Expr, ExprKind, LocalId, Place, Scalar, Type, UnaryOp};
use super::super::CompileError;
use super::builder::FnBuilder;
use proc_macro2::Span;
use syn::spanned::Spanned;

/// At most this many bytes in one array (registers are few; larger arrays spill).
pub const MAX_ARRAY_BYTES: u64 = 16 * 1024;

/// At most this many index values are checked for one index expression.
const MAX_CHECKED_VALUES: u64 = 1 << 16;

/// A `for` variable whose range is known at compile time.
#[derive(Clone, Copy, Debug)]
pub struct StaticLoop {
    /// The variable.
    pub var: LocalId,
    /// First value.
    pub start: i128,
    /// One past the last value.
    pub end: i128,
}

impl FnBuilder<'_> {
    /// `[a, b, c]`.
    pub fn array_list(&mut self, a: &syn::ExprArray) -> Result<Expr, CompileError> {
        if a.elems.is_empty() {
            return Err(CompileError::new(
                a.span(),
                "an array needs at least one element",
            ));
        }
        let mut elems = Vec::new();
        for e in &a.elems {
            let v = self.expr_tree(e)?;
            if let Some(first) = elems.first() {
                let first: &Expr = first;
                let ty = first.ty.clone();
                self.expect(&v, &ty)?;
            }
            elems.push(v);
        }
        let elem = self.element_type(&elems[0], a.span())?;
        let ty = array_type(elem, elems.len() as u64, a.span())?;
        Ok(self.expr(ExprKind::ArrayList(elems), ty, a.span()))
    }

    /// `[x; N]` with `N` an integer literal (a const parameter is one by now).
    pub fn array_repeat(&mut self, r: &syn::ExprRepeat) -> Result<Expr, CompileError> {
        let len = literal_len(&r.len)?;
        let value = self.expr_tree(&r.expr)?;
        let elem = self.element_type(&value, r.expr.span())?;
        let ty = array_type(elem, len, r.span())?;
        Ok(self.expr(
            ExprKind::ArrayRepeat {
                value: Box::new(value),
                len,
            },
            ty,
            r.span(),
        ))
    }

    /// The type an array element has: a literal's default type once known, or the
    /// inference variable (resolved later).
    fn element_type(&mut self, e: &Expr, span: Span) -> Result<Type, CompileError> {
        let t = self.infer.shallow(&e.ty);
        match &t {
            Type::Scalar(_) | Type::Vector(_) | Type::Array { .. } | Type::Fragment(_) => Ok(t),
            Type::IntVar(_) | Type::FloatVar(_) => Ok(e.ty.clone()),
            other => Err(CompileError::new(
                span,
                format!(
                    "arrays hold scalars, vectors, matrix fragments or arrays, not `{}`",
                    self.infer.describe(other)
                ),
            )),
        }
    }

    /// `a[i]`, `a[i][j]`: an element of a local array.
    pub fn index_expr(&mut self, e: &syn::ExprIndex) -> Result<Expr, CompileError> {
        let (local, indices, ty) = self.indexed(e)?;
        Ok(self.expr(
            ExprKind::Index {
                array: local,
                indices,
            },
            ty,
            e.span(),
        ))
    }

    /// `a[i] = ..` and `a[i] op= ..`.
    pub fn index_place(&mut self, e: &syn::ExprIndex) -> Result<(Place, Type), CompileError> {
        let (local, indices, ty) = self.indexed(e)?;
        if !self.locals[local].mutable {
            return Err(CompileError::new(
                e.span(),
                format!(
                    "cannot assign to an element of `{}`: it is not declared `mut`",
                    self.locals[local].name
                ),
            ));
        }
        Ok((Place::Index { local, indices }, ty))
    }

    /// The local, the checked indices (outermost first) and the element type.
    fn indexed(&mut self, e: &syn::ExprIndex) -> Result<(LocalId, Vec<Expr>, Type), CompileError> {
        let mut index_exprs = vec![&*e.index];
        let mut base = &*e.expr;
        loop {
            match base {
                syn::Expr::Index(inner) => {
                    index_exprs.push(&*inner.index);
                    base = &inner.expr;
                }
                syn::Expr::Paren(p) => base = &p.expr,
                _ => break,
            }
        }
        index_exprs.reverse();
        let local = match base {
            syn::Expr::Path(p) if p.qself.is_none() && p.path.segments.len() == 1 => {
                let name = p.path.segments[0].ident.to_string();
                self.lookup(&name).ok_or_else(|| {
                    CompileError::new(p.span(), format!("cannot find value `{name}` in this kernel"))
                })?
            }
            other => {
                return Err(CompileError::new(
                    other.span(),
                    "only local arrays can be indexed: bind the array to a `let` first; raw pointers have no `[]`, write `*p.add(i)` (inside `unsafe`)",
                ))
            }
        };
        let mut ty = self.infer.shallow(&self.locals[local].ty);
        let mut indices = Vec::new();
        for ix in index_exprs {
            let Type::Array { elem, len } = ty else {
                let what = self.infer.describe(&ty);
                let hint = if matches!(ty, Type::Ptr { .. }) {
                    ": raw pointers have no `[]`, write `*p.add(i)` (inside `unsafe`)"
                } else {
                    ""
                };
                return Err(CompileError::new(
                    ix.span(),
                    format!("`{what}` cannot be indexed{hint}"),
                ));
            };
            let i = self.expr_tree(ix)?;
            self.expect(&i, &Type::Scalar(Scalar::U64))?;
            self.check_static_index(&i, len)?;
            indices.push(i);
            ty = self.infer.shallow(&elem);
        }
        Ok((local, indices, ty))
    }

    /// Checks that `index` is known after unrolling and within `0..len` for every value
    /// of the `for` variables it uses.
    fn check_static_index(&self, index: &Expr, len: u64) -> Result<(), CompileError> {
        let not_static = || {
            CompileError::new(
                index.span,
                "the index of an array must be known at compile time: a constant, or an expression of `for` variables over constant ranges (`for i in 0..8`); arrays live in registers",
            )
        };
        let mut vars = Vec::new();
        if !self.collect_static_vars(index, &mut vars) {
            return Err(not_static());
        }
        let loops: Vec<StaticLoop> = vars
            .iter()
            .filter_map(|v| self.static_loops.iter().find(|l| l.var == *v).copied())
            .collect();
        let combos = loops
            .iter()
            .map(|l| (l.end - l.start).max(0) as u64)
            .try_fold(1u64, |acc, n| acc.checked_mul(n))
            .unwrap_or(u64::MAX);
        if combos == 0 {
            return Ok(()); // the loop never runs
        }
        if combos > MAX_CHECKED_VALUES {
            return Err(CompileError::new(
                index.span,
                format!("this index takes more than {MAX_CHECKED_VALUES} values: loops that index arrays are unrolled, keep their ranges small"),
            ));
        }
        let mut env: Vec<(LocalId, i128)> = loops.iter().map(|l| (l.var, l.start)).collect();
        for _ in 0..combos {
            let value = const_eval(index, &env).ok_or_else(not_static)?;
            if value < 0 || value >= i128::from(len) {
                let at: Vec<String> = env
                    .iter()
                    .map(|(v, x)| format!("{} = {x}", self.locals[*v].name))
                    .collect();
                let when = if at.is_empty() {
                    String::new()
                } else {
                    format!(" when {}", at.join(", "))
                };
                return Err(CompileError::new(
                    index.span,
                    format!("index {value} is out of bounds for an array of {len}{when}"),
                ));
            }
            // The next combination, the last variable fastest.
            for (slot, l) in env.iter_mut().zip(&loops).rev() {
                slot.1 += 1;
                if slot.1 < l.end {
                    break;
                }
                slot.1 = l.start;
            }
        }
        Ok(())
    }

    /// Whether every local `e` reads is a static `for` variable (collected in `vars`).
    fn collect_static_vars(&self, e: &Expr, vars: &mut Vec<LocalId>) -> bool {
        match &e.kind {
            ExprKind::Int(_) => true,
            ExprKind::Local(id) if self.static_loops.iter().any(|l| l.var == *id) => {
                if !vars.contains(id) {
                    vars.push(*id);
                }
                true
            }
            ExprKind::Cast(x) | ExprKind::Unary(UnaryOp::Neg, x) => {
                self.collect_static_vars(x, vars)
            }
            ExprKind::Binary(op, a, b) if !op.is_comparison() && !op.is_logical() => {
                self.collect_static_vars(a, vars) && self.collect_static_vars(b, vars)
            }
            _ => false,
        }
    }

    /// The constant range of a `for` loop, if both ends are constants.
    pub fn static_range(&self, start: &Expr, end: &Expr, inclusive: bool) -> Option<(i128, i128)> {
        let lo = const_eval(start, &[])?;
        let hi = const_eval(end, &[])?;
        Some((lo, if inclusive { hi + 1 } else { hi }))
    }
}

/// The value of an integer expression of constants and the variables in `env`.
pub fn const_eval(e: &Expr, env: &[(LocalId, i128)]) -> Option<i128> {
    match &e.kind {
        ExprKind::Int(v) => i128::try_from(*v).ok(),
        ExprKind::Local(id) => env.iter().find(|(v, _)| v == id).map(|(_, x)| *x),
        ExprKind::Cast(x) => const_eval(x, env),
        ExprKind::Unary(UnaryOp::Neg, x) => const_eval(x, env).map(|v| -v),
        ExprKind::Binary(op, a, b) => {
            let (a, b) = (const_eval(a, env)?, const_eval(b, env)?);
            match op {
                BinaryOp::Add => a.checked_add(b),
                BinaryOp::Sub => a.checked_sub(b),
                BinaryOp::Mul => a.checked_mul(b),
                BinaryOp::Div => a.checked_div(b),
                BinaryOp::Rem => a.checked_rem(b),
                BinaryOp::Shl => u32::try_from(b).ok().and_then(|b| a.checked_shl(b)),
                BinaryOp::Shr => u32::try_from(b).ok().and_then(|b| a.checked_shr(b)),
                BinaryOp::BitAnd => Some(a & b),
                BinaryOp::BitOr => Some(a | b),
                BinaryOp::BitXor => Some(a ^ b),
                _ => None,
            }
        }
        _ => None,
    }
}

/// `[elem; len]`, checked for size.
pub fn array_type(elem: Type, len: u64, span: Span) -> Result<Type, CompileError> {
    if len == 0 {
        return Err(CompileError::new(
            span,
            "arrays in kernels have at least one element",
        ));
    }
    let ty = Type::Array {
        elem: Box::new(elem),
        len,
    };
    if let Some(elem_size) = match &ty {
        Type::Array { elem, .. } => elem.size(),
        _ => None,
    } {
        let bytes = u64::from(elem_size).saturating_mul(len);
        if bytes > MAX_ARRAY_BYTES {
            return Err(CompileError::new(
                span,
                format!("this array takes {bytes} bytes; register arrays hold at most {MAX_ARRAY_BYTES} (use `shared_array` or device memory for more)"),
            ));
        }
    }
    Ok(ty)
}

/// An array length written as an integer literal.
pub fn literal_len(e: &syn::Expr) -> Result<u64, CompileError> {
    match e {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(i),
            ..
        }) => i
            .base10_parse::<u64>()
            .map_err(|err| CompileError::new(i.span(), err.to_string())),
        syn::Expr::Paren(p) => literal_len(&p.expr),
        syn::Expr::Group(g) => literal_len(&g.expr),
        syn::Expr::Block(b) if b.block.stmts.len() == 1 => match &b.block.stmts[0] {
            syn::Stmt::Expr(inner, None) => literal_len(inner),
            _ => Err(array_len_error(e)),
        },
        other => Err(array_len_error(other)),
    }
}

fn array_len_error(e: &syn::Expr) -> CompileError {
    CompileError::new(
        e.span(),
        "an array length is an integer literal or a const parameter (`[0.0; 8]`, `[0.0; N]`)",
    )
}
