//! Expressions: literals, names, operators, casts, dereferences, assignment, jumps.

use super::super::kernel_ir::{BinaryOp, Expr, ExprKind, Place, Scalar, Type, UnaryOp};
use super::super::CompileError;
use super::body::macro_error;
use super::builder::FnBuilder;
use super::types::parse_type;
use syn::spanned::Spanned;

impl FnBuilder<'_> {
    /// Any expression.
    pub fn expr_tree(&mut self, e: &syn::Expr) -> Result<Expr, CompileError> {
        match e {
            syn::Expr::Lit(l) => self.literal(&l.lit),
            syn::Expr::Path(p) => self.path_expr(p),
            syn::Expr::Paren(p) => self.expr_tree(&p.expr),
            syn::Expr::Group(g) => self.expr_tree(&g.expr),
            syn::Expr::Unary(u) => self.unary(u),
            syn::Expr::Binary(b) => self.binary(b),
            syn::Expr::Assign(a) => self.assign(&a.left, None, &a.right, a.span()),
            syn::Expr::Cast(c) => self.cast(c),
            syn::Expr::Block(b) => {
                if let Some(l) = &b.label {
                    return Err(CompileError::new(l.span(), "block labels are not supported in kernels"));
                }
                let block = self.block(&b.block)?;
                let ty = block.ty.clone();
                Ok(self.expr(ExprKind::Block(block), ty, b.span()))
            }
            syn::Expr::Unsafe(u) => {
                let block = self.block(&u.block)?;
                let ty = block.ty.clone();
                Ok(self.expr(ExprKind::Block(block), ty, u.span()))
            }
            syn::Expr::If(i) => self.if_expr(i),
            syn::Expr::While(w) => self.while_expr(w),
            syn::Expr::Loop(l) => self.loop_expr(l),
            syn::Expr::ForLoop(f) => self.for_expr(f),
            syn::Expr::Break(b) => {
                if let Some(l) = &b.label {
                    return Err(CompileError::new(l.span(), "loop labels are not supported in kernels"));
                }
                if let Some(v) = &b.expr {
                    return Err(CompileError::new(v.span(), "`break` with a value is not supported in kernels"));
                }
                self.in_loop(b.span(), "break")?;
                Ok(self.expr(ExprKind::Break, Type::Never, b.span()))
            }
            syn::Expr::Continue(c) => {
                if let Some(l) = &c.label {
                    return Err(CompileError::new(l.span(), "loop labels are not supported in kernels"));
                }
                self.in_loop(c.span(), "continue")?;
                Ok(self.expr(ExprKind::Continue, Type::Never, c.span()))
            }
            syn::Expr::Return(r) => {
                let ret = self.ret();
                let value = match &r.expr {
                    Some(v) => {
                        let v = self.expr_tree(v)?;
                        self.expect(&v, &ret)?;
                        Some(Box::new(v))
                    }
                    None => {
                        if ret != Type::Unit {
                            return Err(CompileError::new(r.span(), format!("`return` needs a value of type `{ret}`")));
                        }
                        None
                    }
                };
                Ok(self.expr(ExprKind::Return(value), Type::Never, r.span()))
            }
            syn::Expr::Call(c) => self.call(c),
            syn::Expr::MethodCall(m) => self.method_call(m),
            syn::Expr::Tuple(t) if t.elems.is_empty() => Err(CompileError::new(
                t.span(),
                "`()` as a value is not supported in kernels; leave the block without a tail expression",
            )),
            syn::Expr::Macro(m) => Err(macro_error(&m.mac)),
            syn::Expr::Index(i) => self.index_expr(i),
            syn::Expr::Array(a) => self.array_list(a),
            syn::Expr::Repeat(r) => self.array_repeat(r),
            syn::Expr::Field(f) => self.field_expr(f),
            syn::Expr::Reference(r) => Err(CompileError::new(
                r.span(),
                "references are not supported in kernels: use raw pointers",
            )),
            syn::Expr::Closure(c) => Err(CompileError::new(
                c.span(),
                "closures are not supported in kernels: write a device function in the `#[iris::kernels]` module",
            )),
            syn::Expr::Match(m) => self.match_expr(m),
            syn::Expr::Struct(s) => self.struct_expr(s),
            syn::Expr::Tuple(t) => self.tuple_expr(t),
            syn::Expr::Range(r) => Err(CompileError::new(r.span(), "ranges are supported only in `for` loops")),
            syn::Expr::Async(a) => Err(CompileError::new(a.span(), "`async` is not supported in kernels")),
            syn::Expr::Await(a) => Err(CompileError::new(a.span(), "`.await` is not supported in kernels")),
            syn::Expr::Try(t) => Err(CompileError::new(t.span(), "the `?` operator is not supported in kernels")),
            syn::Expr::Let(l) => Err(CompileError::new(l.span(), "`let` expressions are not supported in kernels")),
            other => Err(CompileError::new(other.span(), "this expression is not supported in kernels")),
        }
    }

    fn in_loop(&self, span: proc_macro2::Span, what: &str) -> Result<(), CompileError> {
        if self.loop_depth == 0 {
            return Err(CompileError::new(
                span,
                format!("`{what}` outside of a loop"),
            ));
        }
        Ok(())
    }

    fn literal(&mut self, lit: &syn::Lit) -> Result<Expr, CompileError> {
        let span = lit.span();
        match lit {
            syn::Lit::Bool(b) => {
                Ok(self.expr(ExprKind::Bool(b.value), Type::Scalar(Scalar::Bool), span))
            }
            syn::Lit::Int(i) => {
                let value: u128 = i
                    .base10_parse()
                    .map_err(|e| CompileError::new(span, format!("bad integer literal: {e}")))?;
                let suffix = i.suffix();
                let ty = if suffix.is_empty() {
                    self.infer.new_int()
                } else {
                    match Scalar::from_name(suffix) {
                        Some(s) if s.is_int() => Type::Scalar(s),
                        Some(s) if s.is_float() => {
                            return Ok(self.expr(
                                ExprKind::Float(value as f64),
                                Type::Scalar(s),
                                span,
                            ))
                        }
                        _ => {
                            return Err(CompileError::new(
                                span,
                                format!("unsupported literal suffix `{suffix}`"),
                            ))
                        }
                    }
                };
                Ok(self.expr(ExprKind::Int(value), ty, span))
            }
            syn::Lit::Float(f) => {
                let value: f64 = f
                    .base10_parse()
                    .map_err(|e| CompileError::new(span, format!("bad float literal: {e}")))?;
                let suffix = f.suffix();
                let ty = if suffix.is_empty() {
                    self.infer.new_float()
                } else {
                    match Scalar::from_name(suffix) {
                        Some(s) if s.is_float() => Type::Scalar(s),
                        _ => {
                            return Err(CompileError::new(
                                span,
                                format!("unsupported literal suffix `{suffix}`"),
                            ))
                        }
                    }
                };
                Ok(self.expr(ExprKind::Float(value), ty, span))
            }
            _ => Err(CompileError::new(
                span,
                "only integer, float and bool literals are supported in kernels",
            )),
        }
    }

    /// A use of the module's constant `c`: its expression, at its declared type (a
    /// constant may name others, to a depth of 16).
    fn module_constant(
        &mut self,
        c: syn::ItemConst,
        span: proc_macro2::Span,
    ) -> Result<Expr, CompileError> {
        if self.const_depth >= 16 {
            return Err(CompileError::new(
                span,
                format!(
                    "the constant `{}` refers to itself (through other constants)",
                    c.ident
                ),
            ));
        }
        let ty = super::types::parse_type(&c.ty)?;
        if ty.as_scalar().is_none() {
            return Err(CompileError::new(
                c.ty.span(),
                "a module constant a kernel uses is a number or a `bool`",
            ));
        }
        self.const_depth += 1;
        let value = self.expr_tree(&c.expr);
        self.const_depth -= 1;
        let value = value?;
        self.expect(&value, &ty)?;
        Ok(value)
    }

    fn path_expr(&mut self, p: &syn::ExprPath) -> Result<Expr, CompileError> {
        let span = p.span();
        if p.qself.is_none() && p.path.segments.len() == 1 {
            let name = p.path.segments[0].ident.to_string();
            if let Some(id) = self.lookup(&name) {
                let ty = self.locals[id].ty.clone();
                return Ok(self.expr(ExprKind::Local(id), ty, span));
            }
            if let Some(c) = self.unit.constant(&name) {
                return self.module_constant(c.clone(), span);
            }
            return Err(CompileError::new(
                span,
                format!("cannot find value `{name}` in this kernel (kernels see their parameters, their `let`s and the `const` items of their `#[iris::kernels]` module)"),
            ));
        }
        let segs: Vec<String> = p
            .path
            .segments
            .iter()
            .map(|s| super::element::acc_segment(s).unwrap_or_else(|| s.ident.to_string()))
            .collect();
        if segs.len() == 2 {
            if let Some(e) = self.associated_constant(&segs[0], &segs[1], span)? {
                return Ok(e);
            }
        }
        let text = segs.join("::");
        let first = segs.first().map(String::as_str);
        let hint = match first {
            Some("Ordering" | "Scope") => {
                ": orderings and scopes are written only as arguments of atomics and fences"
            }
            Some("Cmp" | "SignalOp") => {
                ": comparisons and signal operations are written only as arguments of the signal operations (`signal_wait_until(sig, Cmp::Ge, value)`, `signal(sig, 1, SignalOp::Add, peer)`)"
            }
            _ => "",
        };
        Err(CompileError::new(
            span,
            format!("`{text}` is not a value kernels can use{hint}"),
        ))
    }

    /// `u32::MAX`, `f32::INFINITY`, ...
    fn associated_constant(
        &mut self,
        ty: &str,
        name: &str,
        span: proc_macro2::Span,
    ) -> Result<Option<Expr>, CompileError> {
        let Some(s) = Scalar::from_name(ty) else {
            return Ok(None);
        };
        if let Some(e) = self.element_constant(s, name, span) {
            return Ok(Some(e));
        }
        let t = Type::Scalar(s);
        let kind = if s.is_int() {
            let bits = s.size() * 8;
            match (name, s.is_signed()) {
                ("MAX", false) => ExprKind::Int(if bits == 128 {
                    u128::MAX
                } else {
                    (1u128 << bits) - 1
                }),
                ("MIN", false) => ExprKind::Int(0),
                ("MAX", true) => ExprKind::Int((1u128 << (bits - 1)) - 1),
                // Two's complement bit pattern of the minimum, truncated to the width.
                ("MIN", true) => ExprKind::Int(1u128 << (bits - 1)),
                ("BITS", _) => {
                    return Ok(Some(self.expr(
                        ExprKind::Int(bits as u128),
                        Type::Scalar(Scalar::U32),
                        span,
                    )))
                }
                _ => {
                    return Err(CompileError::new(
                        span,
                        format!("`{ty}::{name}` is not supported; use ZERO, ONE, MAX, MIN or BITS"),
                    ))
                }
            }
        } else if s == Scalar::F32 || s == Scalar::F64 {
            let v = match (name, s == Scalar::F32) {
                ("MAX", true) => f32::MAX as f64,
                ("MIN", true) => f32::MIN as f64,
                ("EPSILON", true) => f32::EPSILON as f64,
                ("MAX", false) => f64::MAX,
                ("MIN", false) => f64::MIN,
                ("EPSILON", false) => f64::EPSILON,
                ("INFINITY", _) => f64::INFINITY,
                ("NEG_INFINITY", _) => f64::NEG_INFINITY,
                _ => {
                    return Err(CompileError::new(
                        span,
                        format!("`{ty}::{name}` is not supported; use ZERO, ONE, MAX, MIN, EPSILON, INFINITY or NEG_INFINITY"),
                    ))
                }
            };
            ExprKind::Float(v)
        } else {
            return Err(CompileError::new(
                span,
                format!("`{ty}::{name}` is not supported; use ZERO, ONE, MAX, MIN, INFINITY or NEG_INFINITY"),
            ));
        };
        Ok(Some(self.expr(kind, t, span)))
    }

    fn unary(&mut self, u: &syn::ExprUnary) -> Result<Expr, CompileError> {
        let span = u.span();
        match u.op {
            syn::UnOp::Deref(_) => {
                let ptr = self.expr_tree(&u.expr)?;
                match self.infer.shallow(&ptr.ty) {
                    Type::Ptr { pointee, .. } => {
                        let ty = (*pointee).clone();
                        Ok(self.expr(ExprKind::Deref(Box::new(ptr)), ty, span))
                    }
                    Type::Symmetric(_) => Err(CompileError::new(
                        span,
                        "a `Symmetric<T>` is not dereferenced directly: use `iris::load(p, peer)`, or `*p.local()` for this rank's copy",
                    )),
                    other => Err(CompileError::new(span, format!("type `{}` cannot be dereferenced", self.infer.describe(&other)))),
                }
            }
            syn::UnOp::Neg(_) => {
                // A negative literal of a signed type: fold so `-128i8` stays in range.
                let operand = self.expr_tree(&u.expr)?;
                let t = self.infer.shallow(&operand.ty);
                let ok = match &t {
                    Type::Scalar(s) => s.is_signed() || s.is_float(),
                    Type::IntVar(_) | Type::FloatVar(_) => true,
                    Type::Vector(v) => v.elem.is_signed() || v.elem.is_float(),
                    _ => false,
                };
                if !ok {
                    return Err(CompileError::new(
                        span,
                        format!(
                            "cannot negate a value of type `{}`",
                            self.infer.describe(&t)
                        ),
                    ));
                }
                let ty = operand.ty.clone();
                Ok(self.expr(ExprKind::Unary(UnaryOp::Neg, Box::new(operand)), ty, span))
            }
            syn::UnOp::Not(_) => {
                let operand = self.expr_tree(&u.expr)?;
                let t = self.infer.shallow(&operand.ty);
                let ok = matches!(t, Type::Scalar(Scalar::Bool) | Type::IntVar(_))
                    || self.infer.is_int(&t);
                if !ok {
                    return Err(CompileError::new(
                        span,
                        format!(
                            "cannot apply `!` to a value of type `{}`",
                            self.infer.describe(&t)
                        ),
                    ));
                }
                let ty = operand.ty.clone();
                Ok(self.expr(ExprKind::Unary(UnaryOp::Not, Box::new(operand)), ty, span))
            }
            _ => Err(CompileError::new(
                span,
                "this unary operator is not supported",
            )),
        }
    }

    fn binary(&mut self, b: &syn::ExprBinary) -> Result<Expr, CompileError> {
        use syn::BinOp as B;
        let (op, compound) = match b.op {
            B::Add(_) => (BinaryOp::Add, false),
            B::Sub(_) => (BinaryOp::Sub, false),
            B::Mul(_) => (BinaryOp::Mul, false),
            B::Div(_) => (BinaryOp::Div, false),
            B::Rem(_) => (BinaryOp::Rem, false),
            B::And(_) => (BinaryOp::And, false),
            B::Or(_) => (BinaryOp::Or, false),
            B::BitXor(_) => (BinaryOp::BitXor, false),
            B::BitAnd(_) => (BinaryOp::BitAnd, false),
            B::BitOr(_) => (BinaryOp::BitOr, false),
            B::Shl(_) => (BinaryOp::Shl, false),
            B::Shr(_) => (BinaryOp::Shr, false),
            B::Eq(_) => (BinaryOp::Eq, false),
            B::Lt(_) => (BinaryOp::Lt, false),
            B::Le(_) => (BinaryOp::Le, false),
            B::Ne(_) => (BinaryOp::Ne, false),
            B::Ge(_) => (BinaryOp::Ge, false),
            B::Gt(_) => (BinaryOp::Gt, false),
            B::AddAssign(_) => (BinaryOp::Add, true),
            B::SubAssign(_) => (BinaryOp::Sub, true),
            B::MulAssign(_) => (BinaryOp::Mul, true),
            B::DivAssign(_) => (BinaryOp::Div, true),
            B::RemAssign(_) => (BinaryOp::Rem, true),
            B::BitXorAssign(_) => (BinaryOp::BitXor, true),
            B::BitAndAssign(_) => (BinaryOp::BitAnd, true),
            B::BitOrAssign(_) => (BinaryOp::BitOr, true),
            B::ShlAssign(_) => (BinaryOp::Shl, true),
            B::ShrAssign(_) => (BinaryOp::Shr, true),
            _ => {
                return Err(CompileError::new(
                    b.op.span(),
                    "this operator is not supported",
                ))
            }
        };
        if compound {
            return self.assign(&b.left, Some(op), &b.right, b.span());
        }
        let lhs = self.expr_tree(&b.left)?;
        let rhs = self.expr_tree(&b.right)?;
        self.binary_op(op, lhs, rhs, b.span())
    }

    /// Checks operand types and builds `lhs op rhs`.
    pub fn binary_op(
        &mut self,
        op: BinaryOp,
        lhs: Expr,
        rhs: Expr,
        span: proc_macro2::Span,
    ) -> Result<Expr, CompileError> {
        let ty = if op.is_shift() {
            if !self.infer.is_int(&lhs.ty) || !self.infer.is_int(&rhs.ty) {
                return Err(CompileError::new(
                    span,
                    "shifts take integers on both sides",
                ));
            }
            lhs.ty.clone()
        } else {
            let t = self.infer.unify(&rhs.ty, &lhs.ty, rhs.span)?;
            let shallow = self.infer.shallow(&t);
            let is_bool = shallow == Type::Scalar(Scalar::Bool);
            let numeric = self.infer.is_int(&shallow) || self.infer.is_float(&shallow);
            let vector = matches!(shallow, Type::Vector(_));
            let ok = match op {
                BinaryOp::And | BinaryOp::Or => is_bool,
                BinaryOp::Add | BinaryOp::Sub | BinaryOp::Mul => numeric || vector,
                BinaryOp::Div | BinaryOp::Rem => numeric,
                BinaryOp::BitAnd | BinaryOp::BitOr | BinaryOp::BitXor => {
                    is_bool || self.infer.is_int(&shallow)
                }
                BinaryOp::Eq | BinaryOp::Ne => numeric || is_bool,
                BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge => numeric,
                BinaryOp::Shl | BinaryOp::Shr => false,
            };
            if !ok {
                return Err(CompileError::new(
                    span,
                    format!(
                        "operator {op:?} is not defined for `{}` in kernels",
                        self.infer.describe(&shallow)
                    ),
                ));
            }
            if op.is_comparison() {
                Type::Scalar(Scalar::Bool)
            } else {
                t
            }
        };
        Ok(self.expr(ExprKind::Binary(op, Box::new(lhs), Box::new(rhs)), ty, span))
    }

    /// `place = value` or `place op= value`.
    pub fn assign(
        &mut self,
        left: &syn::Expr,
        op: Option<BinaryOp>,
        right: &syn::Expr,
        span: proc_macro2::Span,
    ) -> Result<Expr, CompileError> {
        let (place, place_ty) = self.place(left)?;
        let value = self.expr_tree(right)?;
        match op {
            None => self.expect(&value, &place_ty)?,
            Some(op) => {
                // Type-check as the binary operation it is.
                let read = self.expr(ExprKind::Int(0), place_ty.clone(), left.span());
                let checked = self.binary_op(op, read, value.clone(), span)?;
                if op.is_comparison() || op.is_logical() {
                    return Err(CompileError::new(
                        span,
                        "not a compound assignment operator",
                    ));
                }
                self.infer.unify(&checked.ty, &place_ty, span)?;
            }
        }
        Ok(self.expr(
            ExprKind::Assign {
                place: Box::new(place),
                op,
                value: Box::new(value),
            },
            Type::Unit,
            span,
        ))
    }

    fn place(&mut self, left: &syn::Expr) -> Result<(Place, Type), CompileError> {
        match left {
            syn::Expr::Paren(p) => self.place(&p.expr),
            syn::Expr::Path(p) if p.qself.is_none() && p.path.segments.len() == 1 => {
                let name = p.path.segments[0].ident.to_string();
                let Some(id) = self.lookup(&name) else {
                    return Err(CompileError::new(p.span(), format!("cannot find value `{name}` in this kernel")));
                };
                if !self.locals[id].mutable {
                    return Err(CompileError::new(
                        p.span(),
                        format!("cannot assign to `{name}`: it is not declared `mut`"),
                    ));
                }
                Ok((Place::Local(id), self.locals[id].ty.clone()))
            }
            syn::Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => {
                let ptr = self.expr_tree(&u.expr)?;
                match self.infer.shallow(&ptr.ty) {
                    Type::Ptr { pointee, mutable: true } => Ok((Place::Deref(ptr), (*pointee).clone())),
                    Type::Ptr { mutable: false, .. } => Err(CompileError::new(
                        u.span(),
                        "cannot write through a `*const` pointer: declare it `*mut`",
                    )),
                    Type::Symmetric(_) => Err(CompileError::new(
                        u.span(),
                        "write to a `Symmetric<T>` with `iris::store(p, value, peer)`, or `*p.local() = value` for this rank's copy",
                    )),
                    other => Err(CompileError::new(u.span(), format!("type `{}` cannot be dereferenced", self.infer.describe(&other)))),
                }
            }
            syn::Expr::Index(i) => self.index_place(i),
            syn::Expr::Field(f) => self.field_place(f),
            other => Err(CompileError::new(
                other.span(),
                "kernels can assign to local variables (`x = ..`), their array elements (`a[i] = ..`), their fields (`s.x = ..`) and through pointers (`*p = ..`) only",
            )),
        }
    }

    fn cast(&mut self, c: &syn::ExprCast) -> Result<Expr, CompileError> {
        let value = self.expr_tree(&c.expr)?;
        let to = parse_type(&c.ty)?;
        let from = self.infer.shallow(&value.ty);
        let ok = match (&from, &to) {
            (Type::Scalar(Scalar::F16 | Scalar::BF16), _) | (_, Type::Scalar(Scalar::F16 | Scalar::BF16)) => {
                return Err(CompileError::new(
                    c.span(),
                    "`as` does not convert f16/bf16 (they are not primitive types): use `x.to_f32()` and `f16::from_f32(y)`",
                ))
            }
            (Type::Scalar(_) | Type::IntVar(_) | Type::FloatVar(_), Type::Scalar(t)) => {
                // bool is a cast target only from bool, as in Rust.
                *t != Scalar::Bool || from == Type::Scalar(Scalar::Bool)
            }
            (Type::Ptr { .. }, Type::Ptr { .. }) => true,
            (Type::Ptr { .. }, Type::Scalar(t)) => matches!(t, Scalar::U64 | Scalar::I64),
            (Type::Scalar(s), Type::Ptr { .. }) => matches!(s, Scalar::U64 | Scalar::I64),
            (Type::IntVar(_), Type::Ptr { .. }) => true,
            _ => false,
        };
        if !ok {
            return Err(CompileError::new(
                c.span(),
                format!(
                    "cannot cast `{}` as `{to}` in kernels",
                    self.infer.describe(&from)
                ),
            ));
        }
        if matches!(from, Type::FloatVar(_)) && to.as_scalar().is_some_and(|s| s.is_float()) {
            self.infer.unify(&from, &to, c.span())?;
        }
        if matches!(from, Type::IntVar(_)) && matches!(to, Type::Ptr { .. }) {
            self.infer
                .unify(&from, &Type::Scalar(Scalar::U64), c.span())?;
        }
        Ok(self.expr(ExprKind::Cast(Box::new(value)), to, c.span()))
    }
}
