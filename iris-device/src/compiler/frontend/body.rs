//! Blocks, statements and control flow.

use super::super::kernel_ir::{Block, Expr, ExprKind, Local, Scalar, Stmt, Type};
use super::super::CompileError;
use super::builder::FnBuilder;
use super::types::parse_type;
use syn::spanned::Spanned;

impl FnBuilder<'_> {
    /// A `{ ... }` block in its own scope.
    pub fn block(&mut self, block: &syn::Block) -> Result<Block, CompileError> {
        self.push_scope();
        let result = self.block_stmts(&block.stmts);
        self.pop_scope();
        result
    }

    fn block_stmts(&mut self, stmts: &[syn::Stmt]) -> Result<Block, CompileError> {
        let mut out = Vec::new();
        let mut tail = None;
        let mut diverges = false;
        for (i, stmt) in stmts.iter().enumerate() {
            let last = i + 1 == stmts.len();
            match stmt {
                syn::Stmt::Local(local) if matches!(local.pat, syn::Pat::Tuple(_)) => {
                    out.extend(self.let_tuple(local)?);
                }
                syn::Stmt::Local(local) => {
                    let s = self.let_stmt(local)?;
                    out.push(s);
                }
                syn::Stmt::Expr(e, semi) => {
                    let expr = self.expr_tree(e)?;
                    if expr.ty == Type::Never {
                        diverges = true;
                    }
                    if last && semi.is_none() {
                        tail = Some(Box::new(expr));
                    } else {
                        if semi.is_none() && !matches!(expr.ty, Type::Unit | Type::Never) {
                            let t = self.infer.describe(&expr.ty);
                            return Err(CompileError::new(
                                e.span(),
                                format!("mismatched types: expected `()`, found `{t}` (add a `;`?)"),
                            ));
                        }
                        out.push(Stmt::Expr(expr));
                    }
                }
                // `use` items bring names into scope for rustc's check (device libraries
                // add them); the kernel compiler resolves names itself.
                syn::Stmt::Item(syn::Item::Use(_)) => {}
                syn::Stmt::Item(item) => {
                    return Err(CompileError::new(
                        item.span(),
                        "items inside kernels are not supported: put device functions in the `#[iris::kernels]` module beside the kernel",
                    ))
                }
                syn::Stmt::Macro(m) => return Err(macro_error(&m.mac)),
            }
        }
        let ty = match &tail {
            Some(t) => t.ty.clone(),
            None if diverges => Type::Never,
            None => Type::Unit,
        };
        Ok(Block {
            stmts: out,
            tail,
            ty,
        })
    }

    /// `let (a, mut b) = (x, y);`: every value is computed before any name is bound (so
    /// `let (a, b) = (b, a)` swaps), then each is bound as its own `let`.
    fn let_tuple(&mut self, local: &syn::Local) -> Result<Vec<Stmt>, CompileError> {
        let syn::Pat::Tuple(pats) = &local.pat else {
            return Err(CompileError::new(
                local.pat.span(),
                "expected a tuple pattern",
            ));
        };
        let usage =
            "a tuple `let` binds names to a tuple of the same length: `let (a, b) = (x, y);` or `let (a, b) = f(x);`";
        let Some(syn::LocalInit {
            expr,
            diverge: None,
            ..
        }) = &local.init
        else {
            return Err(CompileError::new(local.span(), usage));
        };
        let mut stmts = Vec::new();
        let mut inits = Vec::new();
        if let syn::Expr::Tuple(values) = strip_parens(expr) {
            if values.elems.len() != pats.elems.len() {
                return Err(CompileError::new(local.span(), usage));
            }
            for v in &values.elems {
                inits.push(self.expr_tree(v)?);
            }
        } else {
            // A tuple value (`let (a, b) = f(x);`): held once, then taken apart.
            let whole = self.expr_tree(expr)?;
            let ty = self.infer.known(&whole.ty);
            let fields = match &ty {
                Type::Struct(st) if st.name.is_none() && st.fields.len() == pats.elems.len() => {
                    st.fields.clone()
                }
                _ => {
                    return Err(CompileError::new(
                        expr.span(),
                        format!("{usage}; this is `{}`", self.infer.describe(&ty)),
                    ))
                }
            };
            let span = expr.span();
            let id = self.declare(Local {
                name: "(tuple)".to_string(),
                ty: ty.clone(),
                mutable: false,
                span,
            });
            stmts.push(Stmt::Let {
                local: id,
                init: Some(whole),
            });
            for (index, (_, fty)) in fields.into_iter().enumerate() {
                let base = self.expr(ExprKind::Local(id), ty.clone(), span);
                inits.push(self.expr(
                    ExprKind::Field {
                        base: Box::new(base),
                        index,
                    },
                    fty,
                    span,
                ));
            }
        }
        for (pat, init) in pats.elems.iter().zip(inits) {
            let (name, mutable, span) = match pat {
                syn::Pat::Ident(pi) if pi.subpat.is_none() && pi.by_ref.is_none() => (
                    pi.ident.to_string(),
                    pi.mutability.is_some(),
                    pi.ident.span(),
                ),
                syn::Pat::Wild(w) => ("_".to_string(), false, w.span()),
                other => return Err(CompileError::new(other.span(), usage)),
            };
            if matches!(init.ty, Type::Unit | Type::Never) {
                return Err(CompileError::new(init.span, "a `let` must bind a value"));
            }
            let id = self.declare(Local {
                name,
                ty: init.ty.clone(),
                mutable,
                span,
            });
            stmts.push(Stmt::Let {
                local: id,
                init: Some(init),
            });
        }
        Ok(stmts)
    }

    fn let_stmt(&mut self, local: &syn::Local) -> Result<Stmt, CompileError> {
        let (pat, annotated) = match &local.pat {
            syn::Pat::Type(pt) => (&*pt.pat, Some(parse_type(&pt.ty)?)),
            other => (other, None),
        };
        let init = match &local.init {
            Some(init) => {
                if let Some((_, diverge)) = &init.diverge {
                    return Err(CompileError::new(
                        diverge.span(),
                        "`let ... else` is not supported in kernels",
                    ));
                }
                Some(self.expr_tree(&init.expr)?)
            }
            None => None,
        };
        let ty = match (&annotated, &init) {
            (Some(t), Some(e)) => {
                self.expect(e, t)?;
                t.clone()
            }
            (Some(t), None) => t.clone(),
            (None, Some(e)) => e.ty.clone(),
            (None, None) => {
                return Err(CompileError::new(
                    local.span(),
                    "a `let` without a value needs a type: `let x: u32;`",
                ))
            }
        };
        if matches!(ty, Type::Unit | Type::Never) {
            return Err(CompileError::new(
                local.pat.span(),
                "a `let` must bind a value",
            ));
        }
        match pat {
            syn::Pat::Ident(pi) if pi.subpat.is_none() && pi.by_ref.is_none() => {
                let id = self.declare(Local {
                    name: pi.ident.to_string(),
                    ty,
                    mutable: pi.mutability.is_some(),
                    span: pi.ident.span(),
                });
                Ok(Stmt::Let { local: id, init })
            }
            syn::Pat::Wild(w) => {
                let id = self.declare(Local { name: "_".into(), ty, mutable: false, span: w.span() });
                Ok(Stmt::Let { local: id, init })
            }
            other => Err(CompileError::new(
                other.span(),
                "only simple bindings are supported in `let` (`let x = ..`, `let mut x: T = ..`); tuple and struct patterns are not",
            )),
        }
    }

    /// `if`, possibly with `else` / `else if`, as an expression.
    pub fn if_expr(&mut self, e: &syn::ExprIf) -> Result<Expr, CompileError> {
        if let syn::Expr::Let(l) = &*e.cond {
            return Err(CompileError::new(
                l.span(),
                "`if let` is not supported in kernels: there are no enums",
            ));
        }
        let cond = self.expr_tree(&e.cond)?;
        self.expect(&cond, &Type::Scalar(Scalar::Bool))?;
        let then_block = self.block(&e.then_branch)?;
        let else_block = match &e.else_branch {
            None => None,
            Some((_, else_expr)) => Some(match &**else_expr {
                syn::Expr::Block(b) => self.block(&b.block)?,
                syn::Expr::If(nested) => {
                    let inner = self.if_expr(nested)?;
                    let ty = inner.ty.clone();
                    Block {
                        stmts: Vec::new(),
                        tail: Some(Box::new(inner)),
                        ty,
                    }
                }
                other => {
                    return Err(CompileError::new(
                        other.span(),
                        "expected a block after `else`",
                    ))
                }
            }),
        };
        let ty = match &else_block {
            None => {
                if !matches!(then_block.ty, Type::Unit | Type::Never) {
                    return Err(CompileError::new(
                        e.then_branch.span(),
                        "an `if` without `else` cannot give a value: add an `else` branch or end the block with `;`",
                    ));
                }
                Type::Unit
            }
            Some(eb) => self.infer.unify(&then_block.ty, &eb.ty, e.span())?,
        };
        Ok(self.expr(
            ExprKind::If {
                cond: Box::new(cond),
                then_block,
                else_block,
            },
            ty,
            e.span(),
        ))
    }

    /// `while cond { .. }`.
    pub fn while_expr(&mut self, e: &syn::ExprWhile) -> Result<Expr, CompileError> {
        no_label(&e.label)?;
        if let syn::Expr::Let(l) = &*e.cond {
            return Err(CompileError::new(
                l.span(),
                "`while let` is not supported in kernels: there are no enums",
            ));
        }
        let cond = self.expr_tree(&e.cond)?;
        self.expect(&cond, &Type::Scalar(Scalar::Bool))?;
        let body = self.loop_body(&e.body)?;
        Ok(self.expr(
            ExprKind::While {
                cond: Box::new(cond),
                body,
            },
            Type::Unit,
            e.span(),
        ))
    }

    /// `loop { .. }`.
    pub fn loop_expr(&mut self, e: &syn::ExprLoop) -> Result<Expr, CompileError> {
        no_label(&e.label)?;
        let body = self.loop_body(&e.body)?;
        let has_break = contains_break(&e.body);
        let ty = if has_break { Type::Unit } else { Type::Never };
        Ok(self.expr(ExprKind::Loop { body }, ty, e.span()))
    }

    /// `for i in a..b { .. }` and `for i in a..=b { .. }`.
    pub fn for_expr(&mut self, e: &syn::ExprForLoop) -> Result<Expr, CompileError> {
        no_label(&e.label)?;
        let syn::Expr::Range(range) = strip_parens(&e.expr) else {
            return Err(CompileError::new(
                e.expr.span(),
                "`for` loops in kernels iterate over integer ranges only: `for i in start..end` or `start..=end`",
            ));
        };
        let (Some(start), Some(end)) = (&range.start, &range.end) else {
            return Err(CompileError::new(
                range.span(),
                "a `for` range needs both ends: `start..end`",
            ));
        };
        let inclusive = matches!(range.limits, syn::RangeLimits::Closed(_));
        let start = self.expr_tree(start)?;
        let end = self.expr_tree(end)?;
        let ty = self.infer.unify(&start.ty, &end.ty, range.span())?;
        if !self.infer.is_int(&ty) {
            return Err(CompileError::new(
                range.span(),
                "`for` ranges in kernels must be over integers",
            ));
        }
        let (name, mutable, span) = match &*e.pat {
            syn::Pat::Ident(pi) if pi.subpat.is_none() && pi.by_ref.is_none() => (
                pi.ident.to_string(),
                pi.mutability.is_some(),
                pi.ident.span(),
            ),
            syn::Pat::Wild(w) => ("_".to_string(), false, w.span()),
            other => {
                return Err(CompileError::new(
                    other.span(),
                    "the `for` variable must be a plain name",
                ))
            }
        };
        self.push_scope();
        let var = self.declare(Local {
            name,
            ty,
            mutable,
            span,
        });
        let static_range = if mutable {
            None
        } else {
            self.static_range(&start, &end, inclusive)
        };
        if let Some((lo, hi)) = static_range {
            self.static_loops.push(super::arrays::StaticLoop {
                var,
                start: lo,
                end: hi,
            });
        }
        let body = self.loop_body(&e.body);
        if static_range.is_some() {
            self.static_loops.pop();
        }
        self.pop_scope();
        let body = body?;
        Ok(self.expr(
            ExprKind::ForRange {
                var,
                start: Box::new(start),
                end: Box::new(end),
                inclusive,
                body,
            },
            Type::Unit,
            e.span(),
        ))
    }

    fn loop_body(&mut self, body: &syn::Block) -> Result<Block, CompileError> {
        self.loop_depth += 1;
        let b = self.block(body);
        self.loop_depth -= 1;
        let b = b?;
        if !matches!(b.ty, Type::Unit | Type::Never) {
            let t = self.infer.describe(&b.ty);
            return Err(CompileError::new(
                body.span(),
                format!("a loop body cannot give a value (found `{t}`): end it with `;`"),
            ));
        }
        Ok(b)
    }
}

/// Labels are not supported.
fn no_label(label: &Option<syn::Label>) -> Result<(), CompileError> {
    match label {
        Some(l) => Err(CompileError::new(
            l.span(),
            "loop labels are not supported in kernels: `break` and `continue` act on the innermost loop",
        )),
        None => Ok(()),
    }
}

fn strip_parens(e: &syn::Expr) -> &syn::Expr {
    match e {
        syn::Expr::Paren(p) => strip_parens(&p.expr),
        syn::Expr::Group(g) => strip_parens(&g.expr),
        other => other,
    }
}

/// Whether a `loop` body has a `break` for this loop (not one of a nested loop).
fn contains_break(block: &syn::Block) -> bool {
    use syn::visit::Visit;
    struct Finder {
        found: bool,
    }
    impl<'a> Visit<'a> for Finder {
        fn visit_expr_break(&mut self, _: &'a syn::ExprBreak) {
            self.found = true;
        }
        fn visit_expr_loop(&mut self, _: &'a syn::ExprLoop) {}
        fn visit_expr_while(&mut self, _: &'a syn::ExprWhile) {}
        fn visit_expr_for_loop(&mut self, _: &'a syn::ExprForLoop) {}
        fn visit_expr_closure(&mut self, _: &'a syn::ExprClosure) {}
    }
    let mut f = Finder { found: false };
    f.visit_block(block);
    f.found
}

/// The error for a macro call inside a kernel.
pub fn macro_error(mac: &syn::Macro) -> CompileError {
    let name = mac
        .path
        .segments
        .last()
        .map(|s| s.ident.to_string())
        .unwrap_or_default();
    let hint = match name.as_str() {
        "println" | "print" | "eprintln" | "dbg" | "format" => {
            ": kernels cannot print; write values to a buffer and read it on the host"
        }
        "panic" | "assert" | "assert_eq" | "unreachable" | "todo" | "unimplemented" => {
            ": kernels cannot panic; check conditions with `if` and return early"
        }
        "vec" => ": kernels cannot allocate; use device buffers or `shared_array`",
        _ => "",
    };
    CompileError::new(
        mac.span(),
        format!("macro `{name}!` is not supported in kernels{hint}"),
    )
}
