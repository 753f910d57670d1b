//! Function calls: device intrinsics (`iris::store`, `thread_idx_x`, ...), device
//! functions of the unit, and associated functions of types (`f32x4::new`, `f16::from_f32`).

use super::super::kernel_ir::{
    Dim, Expr, ExprKind, GenericArg, Intrinsic, MemOrder, MemScope, Operand, RmwOp, Scalar,
    SharedArray, Type, Vector,
};
use super::super::CompileError;
use super::builder::FnBuilder;
use super::generics;
use super::types::{is_memory_type, parse_type};
use proc_macro2::Span;
use syn::spanned::Spanned;

/// Path prefixes under which the prelude's functions may be named.
const PRELUDE_PREFIXES: &[&[&str]] = &[
    &[],
    &["iris"],
    &["iris", "prelude"],
    &["iris_device"],
    &["iris_device", "prelude"],
];

impl FnBuilder<'_> {
    /// `f(args)`.
    pub fn call(&mut self, c: &syn::ExprCall) -> Result<Expr, CompileError> {
        let syn::Expr::Path(path) = &*c.func else {
            return Err(CompileError::new(
                c.func.span(),
                "only named functions can be called in kernels",
            ));
        };
        if path.qself.is_some() {
            return Err(CompileError::new(
                path.span(),
                "qualified paths are not supported in kernels",
            ));
        }
        let segs: Vec<String> = path
            .path
            .segments
            .iter()
            .map(|s| super::element::acc_segment(s).unwrap_or_else(|| s.ident.to_string()))
            .collect();
        let span = c.span();
        let Some((name, prefix)) = segs.split_last() else {
            return Err(CompileError::new(path.span(), "empty path"));
        };
        // A device function of the unit.
        if prefix.is_empty() || prefix == ["self"] {
            if let Some(index) = self.unit.find(name) {
                self.no_generic_arguments(path, name)?;
                let args = self.args(c)?;
                return self.device_call(index, c, args, span);
            }
            if self.unit.template(name).is_some() {
                return self.generic_call(name, path, c, span);
            }
        }
        // `Type::function(..)`.
        if prefix.len() == 1 {
            if let Some(e) = self.associated_call(&prefix[0], name, c, span)? {
                return Ok(e);
            }
        }
        if PRELUDE_PREFIXES.iter().any(|p| *p == prefix) {
            let generics = &path.path.segments[path.path.segments.len() - 1].arguments;
            return self.intrinsic_call(name, generics, c, span);
        }
        Err(CompileError::new(
            path.span(),
            format!(
                "cannot call `{}` in a kernel: kernels call the iris device API (`iris::store`, `iris::load`, ...), the thread/block id functions, and device functions of the same `#[iris::kernels]` module",
                segs.join("::")
            ),
        ))
    }

    fn args(&mut self, c: &syn::ExprCall) -> Result<Vec<Expr>, CompileError> {
        c.args.iter().map(|a| self.expr_tree(a)).collect()
    }

    fn arity(&self, c: &syn::ExprCall, name: &str, n: usize) -> Result<(), CompileError> {
        if c.args.len() != n {
            return Err(CompileError::new(
                c.span(),
                format!(
                    "`{name}` takes {n} argument{}, {} given",
                    if n == 1 { "" } else { "s" },
                    c.args.len()
                ),
            ));
        }
        Ok(())
    }

    fn no_generic_arguments(&self, path: &syn::ExprPath, name: &str) -> Result<(), CompileError> {
        match path.path.segments.last().map(|s| &s.arguments) {
            Some(syn::PathArguments::None) | None => Ok(()),
            Some(a) => Err(CompileError::new(
                a.span(),
                format!("`{name}` is not generic: call it without `::<..>`"),
            )),
        }
    }

    /// A call to a generic device function: its arguments are the turbofish's (in
    /// order), then whatever the call's argument types imply.
    fn generic_call(
        &mut self,
        name: &str,
        path: &syn::ExprPath,
        c: &syn::ExprCall,
        span: Span,
    ) -> Result<Expr, CompileError> {
        let unit = self.unit;
        let Some(t) = unit.template(name) else {
            return Err(CompileError::new(span, format!("`{name}` is not generic")));
        };
        let params = t.params.clone();
        let declared = t.declared.clone();
        self.arity(c, name, declared.len())?;
        let args = self.args(c)?;
        let mut bound = std::collections::HashMap::new();
        if let Some(syn::PathArguments::AngleBracketed(a)) =
            path.path.segments.last().map(|s| &s.arguments)
        {
            if a.args.len() > params.len() {
                return Err(CompileError::new(
                    a.span(),
                    format!(
                        "`{name}` has {} generic parameter(s), {} given",
                        params.len(),
                        a.args.len()
                    ),
                ));
            }
            for (p, g) in params.iter().zip(&a.args) {
                bound.insert(p.name.clone(), generics::parse_arg(p, g)?);
            }
        }
        let actual: Vec<Type> = args.iter().map(|a| self.infer.known(&a.ty)).collect();
        generics::infer_from_args(&params, &declared, &actual, &mut bound);
        let mut list = Vec::new();
        for p in &params {
            let Some(arg) = bound.remove(&p.name) else {
                return Err(CompileError::new(
                    span,
                    format!(
                        "cannot tell `{}` of `{name}` from this call: name it, `{name}::<..>(..)`, or give the literal argument a suffix (`1.0f32`)",
                        p.name
                    ),
                ));
            };
            if let (generics::ParamKind::Type(b), GenericArg::Type(ty)) = (p.kind, &arg) {
                generics::check_type_arg(p, b, ty, span)?;
            }
            list.push(arg);
        }
        let index = unit.instance(name, list, span)?;
        self.device_call(index, c, args, span)
    }

    fn device_call(
        &mut self,
        index: usize,
        c: &syn::ExprCall,
        args: Vec<Expr>,
        span: Span,
    ) -> Result<Expr, CompileError> {
        let sig = self.unit.sig(index);
        if sig.is_kernel {
            return Err(CompileError::new(
                span,
                format!("`{}` is a kernel: kernels are launched from the host, not called from device code", sig.name),
            ));
        }
        if index == self.this {
            return Err(CompileError::new(
                span,
                "recursion is not supported in kernels",
            ));
        }
        self.arity(c, &sig.name, sig.params.len())?;
        for (a, p) in args.iter().zip(&sig.params) {
            self.expect(a, &p.ty)?;
        }
        Ok(self.expr(ExprKind::Call { func: index, args }, sig.ret.clone(), span))
    }

    fn associated_call(
        &mut self,
        ty: &str,
        name: &str,
        c: &syn::ExprCall,
        span: Span,
    ) -> Result<Option<Expr>, CompileError> {
        if let Some(v) = Vector::from_name(ty) {
            let vt = Type::Vector(v);
            return match name {
                "new" => {
                    self.arity(c, &format!("{ty}::new"), 1)?;
                    let Some(syn::Expr::Array(arr)) = c.args.first() else {
                        return Err(CompileError::new(
                            c.span(),
                            format!(
                                "`{ty}::new` takes an array of {} lanes: `{ty}::new([..])`",
                                v.lanes
                            ),
                        ));
                    };
                    if arr.elems.len() != v.lanes as usize {
                        return Err(CompileError::new(
                            arr.span(),
                            format!("`{ty}` has {} lanes, {} given", v.lanes, arr.elems.len()),
                        ));
                    }
                    let mut lanes = Vec::new();
                    for e in &arr.elems {
                        let lane = self.expr_tree(e)?;
                        self.expect(&lane, &Type::Scalar(v.elem))?;
                        lanes.push(lane);
                    }
                    Ok(Some(self.expr(
                        ExprKind::Intrinsic(Intrinsic::VecNew { lanes }),
                        vt,
                        span,
                    )))
                }
                "splat" => {
                    self.arity(c, &format!("{ty}::splat"), 1)?;
                    let args = self.args(c)?;
                    self.expect(&args[0], &Type::Scalar(v.elem))?;
                    Ok(Some(self.expr(
                        ExprKind::Intrinsic({
                            let [value] = operands(args);
                            Intrinsic::VecSplat { value }
                        }),
                        vt,
                        span,
                    )))
                }
                _ => Err(CompileError::new(
                    span,
                    format!(
                        "`{ty}::{name}` is not supported; vectors have `new`, `splat` and `get`"
                    ),
                )),
            };
        }
        let Some(s) = Scalar::from_name(ty) else {
            return Ok(None);
        };
        if matches!(name, "widen" | "narrow")
            || (matches!(name, "from_f32" | "from_f64") && !matches!(s, Scalar::F16 | Scalar::BF16))
        {
            self.arity(c, name, 1)?;
            let args = self.args(c)?;
            return self.element_function(s, name, args, span);
        }
        match (s, name) {
            (Scalar::F16 | Scalar::BF16, "from_f32" | "from_f64") => {
                self.arity(c, name, 1)?;
                let args = self.args(c)?;
                let from = if name == "from_f32" {
                    Scalar::F32
                } else {
                    Scalar::F64
                };
                self.expect(&args[0], &Type::Scalar(from))?;
                let arg = args.into_iter().next().map(Box::new);
                match arg {
                    Some(a) => Ok(Some(self.expr(ExprKind::Cast(a), Type::Scalar(s), span))),
                    None => Err(CompileError::new(span, "missing argument")),
                }
            }
            (_, "sqrt" | "abs" | "min" | "max") => {
                let n = if matches!(name, "min" | "max") { 2 } else { 1 };
                self.arity(c, &format!("{ty}::{name}"), n)?;
                let mut args = self.args(c)?.into_iter();
                let (Some(first), rest) = (args.next(), args.collect::<Vec<_>>()) else {
                    return Err(CompileError::new(span, "missing argument"));
                };
                self.expect(&first, &Type::Scalar(s))?;
                Ok(Some(self.math(name, first, rest, span)?))
            }
            _ => Err(CompileError::new(
                span,
                format!("`{ty}::{name}` is not supported in kernels"),
            )),
        }
    }

    /// `x.sqrt()`, `x.min(y)`, ... on floats (and min/max/abs on integers).
    pub fn math(
        &mut self,
        name: &str,
        x: Expr,
        rest: Vec<Expr>,
        span: Span,
    ) -> Result<Expr, CompileError> {
        use super::super::kernel_ir::MathFn;
        let f = match name {
            "sqrt" => MathFn::Sqrt,
            "abs" => MathFn::Abs,
            "min" => MathFn::Min,
            "max" => MathFn::Max,
            _ => {
                return Err(CompileError::new(
                    span,
                    format!("`{name}` is not supported"),
                ))
            }
        };
        let t = self.infer.shallow(&x.ty);
        let float = self.infer.is_float(&t);
        let int = self.infer.is_int(&t);
        let ok = match f {
            MathFn::Sqrt => float,
            MathFn::Abs => {
                float
                    || t.as_scalar().is_some_and(|s| s.is_signed())
                    || matches!(t, Type::IntVar(_))
            }
            MathFn::Min | MathFn::Max => float || int,
        };
        if !ok || matches!(t, Type::Scalar(Scalar::F16 | Scalar::BF16)) {
            return Err(CompileError::new(
                span,
                format!(
                    "`{name}` is not available for `{}` in kernels",
                    self.infer.describe(&t)
                ),
            ));
        }
        let mut args = vec![x];
        for r in rest {
            let ty = args[0].ty.clone();
            self.expect(&r, &ty)?;
            args.push(r);
        }
        let ty = args[0].ty.clone();
        Ok(self.expr(
            ExprKind::Intrinsic({
                let mut args = args.into_iter().map(Box::new);
                let x = args
                    .next()
                    .ok_or_else(|| CompileError::new(span, "missing argument"))?;
                Intrinsic::Math {
                    f,
                    x,
                    y: args.next(),
                }
            }),
            ty,
            span,
        ))
    }

    fn intrinsic_call(
        &mut self,
        name: &str,
        generics: &syn::PathArguments,
        c: &syn::ExprCall,
        span: Span,
    ) -> Result<Expr, CompileError> {
        let u32t = Type::Scalar(Scalar::U32);
        let id = |d: Dim, which: &str| -> Intrinsic {
            match which {
                "thread_idx" => Intrinsic::ThreadIdx(d),
                "block_idx" => Intrinsic::BlockIdx(d),
                "block_dim" => Intrinsic::BlockDim(d),
                _ => Intrinsic::GridDim(d),
            }
        };
        if let Some((which, dim)) = name.rsplit_once('_') {
            if matches!(which, "thread_idx" | "block_idx" | "block_dim" | "grid_dim") {
                let d = match dim {
                    "x" => Dim::X,
                    "y" => Dim::Y,
                    "z" => Dim::Z,
                    _ => return Err(unknown_intrinsic(name, span)),
                };
                self.arity(c, name, 0)?;
                return Ok(self.expr(ExprKind::Intrinsic(id(d, which)), u32t, span));
            }
        }
        if super::matrix::MATRIX_FUNCTIONS.contains(&name) {
            let args = self.args(c)?;
            return self.matrix_call(name, args, span);
        }
        if super::warp::WARP_FUNCTIONS.contains(&name) {
            let args = self.args(c)?;
            return self.warp_call(name, args, span);
        }
        if matches!(name, "widen" | "narrow" | "min" | "max") {
            let args = self.args(c)?;
            if let Some(e) = self.element_free_function(name, generics, args, span)? {
                return Ok(e);
            }
        }
        match name {
            "sync_threads" => {
                self.arity(c, name, 0)?;
                self.uses_block_barrier = true;
                Ok(self.expr(
                    ExprKind::Intrinsic(Intrinsic::SyncThreads),
                    Type::Unit,
                    span,
                ))
            }
            "fence" => {
                self.arity(c, name, 2)?;
                let order = ordering_arg(&c.args[0])?;
                let scope = scope_arg(&c.args[1])?;
                if order == MemOrder::Relaxed {
                    return Err(CompileError::new(
                        c.args[0].span(),
                        "a fence cannot be `Relaxed`: use Acquire, Release, AcqRel or SeqCst",
                    ));
                }
                Ok(self.expr(
                    ExprKind::Intrinsic(Intrinsic::Fence { order, scope }),
                    Type::Unit,
                    span,
                ))
            }
            "shared_array" => self.shared_array(generics, c, span),
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
            "load" => {
                self.arity(c, name, 2)?;
                let args = self.args(c)?;
                let elem = self.symmetric_elem(&args[0])?;
                self.expect(&args[1], &u32t)?;
                Ok(self.expr(
                    ExprKind::Intrinsic({
                        let [sym, peer] = operands(args);
                        Intrinsic::RemoteLoad { sym, peer }
                    }),
                    elem,
                    span,
                ))
            }
            "store" => {
                self.arity(c, name, 3)?;
                let args = self.args(c)?;
                let elem = self.symmetric_elem(&args[0])?;
                self.expect(&args[1], &elem)?;
                self.expect(&args[2], &u32t)?;
                Ok(self.expr(
                    ExprKind::Intrinsic({
                        let [sym, value, peer] = operands(args);
                        Intrinsic::RemoteStore { sym, value, peer }
                    }),
                    Type::Unit,
                    span,
                ))
            }
            "get" => {
                self.arity(c, name, 3)?;
                let args = self.args(c)?;
                let elem = self.symmetric_elem(&args[0])?;
                self.expect(
                    &args[1],
                    &Type::Ptr {
                        pointee: Box::new(elem),
                        mutable: true,
                    },
                )?;
                self.expect(&args[2], &u32t)?;
                Ok(self.expr(
                    ExprKind::Intrinsic({
                        let [src, dst, peer] = operands(args);
                        Intrinsic::Get { src, dst, peer }
                    }),
                    Type::Unit,
                    span,
                ))
            }
            "put" => {
                self.arity(c, name, 3)?;
                let args = self.args(c)?;
                let elem = self.symmetric_elem(&args[1])?;
                match self.infer.shallow(&args[0].ty) {
                    Type::Ptr { pointee, .. } => {
                        self.infer.unify(&pointee, &elem, args[0].span)?;
                    }
                    other => {
                        return Err(CompileError::new(
                            args[0].span,
                            format!(
                                "`put` reads from a local pointer (`*const {elem}`), found `{}`",
                                self.infer.describe(&other)
                            ),
                        ))
                    }
                }
                self.expect(&args[2], &u32t)?;
                Ok(self.expr(
                    ExprKind::Intrinsic({
                        let [src, dst, peer] = operands(args);
                        Intrinsic::Put { src, dst, peer }
                    }),
                    Type::Unit,
                    span,
                ))
            }
            "copy" => {
                self.arity(c, name, 4)?;
                let args = self.args(c)?;
                let src = self.symmetric_elem(&args[0])?;
                let dst = self.symmetric_elem(&args[1])?;
                self.infer.unify(&dst, &src, args[1].span)?;
                self.expect(&args[2], &u32t)?;
                self.expect(&args[3], &u32t)?;
                Ok(self.expr(
                    ExprKind::Intrinsic({
                        let [src, dst, from_peer, to_peer] = operands(args);
                        Intrinsic::Copy {
                            src,
                            dst,
                            from_peer,
                            to_peer,
                        }
                    }),
                    Type::Unit,
                    span,
                ))
            }
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
            _ => Err(unknown_intrinsic(name, span)),
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

    /// The element type of a `Symmetric<T>` argument.
    pub fn symmetric_elem(&self, e: &Expr) -> Result<Type, CompileError> {
        match self.infer.shallow(&e.ty) {
            Type::Symmetric(t) => Ok(*t),
            Type::Ptr { .. } => Err(CompileError::new(
                e.span,
                "expected a `Symmetric<T>`, found a raw pointer: remote operations need the allocation's peer table, so the parameter must be `Symmetric<T>`",
            )),
            other => Err(CompileError::new(e.span, format!("expected a `Symmetric<T>`, found `{}`", self.infer.describe(&other)))),
        }
    }

    fn shared_array(
        &mut self,
        generics: &syn::PathArguments,
        c: &syn::ExprCall,
        span: Span,
    ) -> Result<Expr, CompileError> {
        self.arity(c, "shared_array", 0)?;
        if !self.sig.is_kernel {
            return Err(CompileError::new(
                span,
                "`shared_array` is declared in kernels only: declare it in the kernel and pass the pointer to the device function",
            ));
        }
        let usage = "write `shared_array::<T, N>()` with an element type and a literal length";
        let syn::PathArguments::AngleBracketed(a) = generics else {
            return Err(CompileError::new(span, usage));
        };
        let mut it = a.args.iter();
        let (Some(syn::GenericArgument::Type(t)), Some(len), None) =
            (it.next(), it.next(), it.next())
        else {
            return Err(CompileError::new(a.span(), usage));
        };
        let elem = parse_type(t)?;
        if !is_memory_type(&elem) {
            return Err(CompileError::new(
                t.span(),
                "shared arrays hold scalars or 16-byte vectors",
            ));
        }
        let len_expr = match len {
            syn::GenericArgument::Const(e) => e,
            syn::GenericArgument::Type(syn::Type::Path(p)) => {
                return Err(CompileError::new(
                    p.span(),
                    "the length of a shared array must be an integer literal",
                ))
            }
            other => return Err(CompileError::new(other.span(), usage)),
        };
        let n = match strip_block(len_expr) {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Int(i),
                ..
            }) => i
                .base10_parse::<u64>()
                .map_err(|e| CompileError::new(i.span(), e.to_string()))?,
            other => {
                return Err(CompileError::new(
                    other.span(),
                    "the length of a shared array must be an integer literal",
                ))
            }
        };
        let bytes = n.saturating_mul(elem.size().unwrap_or(1) as u64);
        if n == 0 || bytes > 64 * 1024 {
            return Err(CompileError::new(
                len_expr.span(),
                format!("a shared array must hold 1 to 65536 bytes; this one is {bytes}"),
            ));
        }
        let index = self.shared_arrays.len();
        self.shared_arrays.push(SharedArray {
            elem: elem.clone(),
            len: n,
        });
        let ty = Type::Ptr {
            pointee: Box::new(elem),
            mutable: true,
        };
        Ok(self.expr(
            ExprKind::Intrinsic(Intrinsic::SharedArray { index }),
            ty,
            span,
        ))
    }
}

/// Arguments whose count was checked, as an intrinsic's operands. A count that does not
/// match cannot happen (every caller checks the arity first); it would panic in the macro.
pub(super) fn operands<const N: usize>(args: Vec<Expr>) -> [Operand; N] {
    let boxed: Vec<Operand> = args.into_iter().map(Box::new).collect();
    match boxed.try_into() {
        Ok(array) => array,
        Err(v) => unreachable!("{} operands where {N} were checked", v.len()),
    }
}

fn strip_block(e: &syn::Expr) -> &syn::Expr {
    match e {
        syn::Expr::Block(b) if b.block.stmts.len() == 1 => match &b.block.stmts[0] {
            syn::Stmt::Expr(inner, None) => strip_block(inner),
            _ => e,
        },
        syn::Expr::Paren(p) => strip_block(&p.expr),
        other => other,
    }
}

fn unknown_intrinsic(name: &str, span: Span) -> CompileError {
    CompileError::new(
        span,
        format!(
            "cannot call `{name}` in a kernel: it is neither an iris device function nor a device function of this `#[iris::kernels]` module; the device API has load, store, get, put, copy, atomic_add/sub/and/or/xor/min/max/xchg/cas, atomic_load, atomic_store, fence, sync_threads, shared_array, global_timer_ns, clock64, nanosleep, thread_idx_*, block_idx_*, block_dim_*, grid_dim_*, lane_id, warp_size, warp_id, shfl, shfl_xor, shfl_down, shfl_up, ballot, any, all, warp_sync, warp_reduce_add/min/max, mma_load_a, mma_load_b, mma_zero, mma, mma_store, mma_store_peer, widen, narrow, min, max"
        ),
    )
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
fn constant_arg<T: Copy>(
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
fn ordering_arg(e: &syn::Expr) -> Result<MemOrder, CompileError> {
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
fn scope_arg(e: &syn::Expr) -> Result<MemScope, CompileError> {
    constant_arg(
        e,
        "Scope",
        &[("Block", MemScope::Block), ("Device", MemScope::Device), ("System", MemScope::System)],
        "the scope must be written as a constant: `Scope::Block`, `Scope::Device` or `Scope::System` (use System across ranks)",
    )
}
