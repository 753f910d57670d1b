//! Functions and statements: locals as entry-block allocas (promoted to registers by
//! LLVM), blocks, assignments, calls to the unit's device functions, and the dispatch of
//! expressions to the parts that lower them.

use super::super::super::kernel_ir::{
    Block, Expr, ExprKind, Function, FunctionId, LocalId, Stmt, Type,
};
use super::builder::{no_value, FnBuilder};
use super::module::{ModuleCtx, ATTR_BODY, ATTR_FUNCTION};
use super::types;

/// The symbol of a function's body (kernels get an entry wrapper under their own name).
pub(super) fn body_symbol(name: &str) -> String {
    types::global_name(&format!("__iris_fn_{name}"))
}

/// Lowers one function of the unit to an internal LLVM function taking register values.
pub(super) fn lower_function(
    m: &mut ModuleCtx,
    unit: &super::super::super::kernel_ir::Unit,
    id: FunctionId,
) -> Result<String, String> {
    let func = &unit.functions[id];
    let mut b = FnBuilder::new(m, unit, func);
    b.alloc_locals()?;
    b.define_shared_arrays()?;
    let mut params = Vec::new();
    if let Some(ctx) = &b.ctx {
        params.push(format!("ptr {ctx}"));
    }
    if let Some((ring, launch)) = &b.trace {
        params.push(format!("i64 {ring}"));
        params.push(format!("i64 {launch}"));
    }
    for (i, p) in func.params().iter().enumerate() {
        if !types::has_value(&p.ty) {
            continue;
        }
        let ty = b.reg_ty(&p.ty)?;
        let name = format!("%p{i}");
        params.push(format!("{ty} {name}"));
        b.store_local(i, &name)?;
    }
    let ret = b.reg_ty(&func.ret)?;
    let value = b.block(&func.body)?;
    if !b.is_terminated() {
        emit_return(&mut b, &ret, &value);
    }
    let attrs = if func.is_kernel || func.inline_always {
        ATTR_BODY
    } else {
        ATTR_FUNCTION
    };
    let header = format!(
        "define internal {ret} {}({}) {attrs}",
        body_symbol(&func.name),
        params.join(", ")
    );
    Ok(b.finish(&header))
}

pub(super) fn emit_return(b: &mut FnBuilder, ret: &str, value: &str) {
    if ret == "void" {
        b.terminate("ret void");
    } else {
        let v = if value.is_empty() { "poison" } else { value };
        b.terminate(&format!("ret {ret} {v}"));
    }
}

impl FnBuilder<'_> {
    /// Lowers a block; returns the value of its tail.
    pub fn block(&mut self, block: &Block) -> Result<String, String> {
        for stmt in &block.stmts {
            match stmt {
                Stmt::Let { local, init } => {
                    if let Some(init) = init {
                        let v = self.expr(init)?;
                        self.store_local(*local, &v)?;
                    }
                }
                Stmt::Expr(e) => {
                    self.expr(e)?;
                }
            }
        }
        match &block.tail {
            Some(tail) => self.expr(tail),
            None => Ok(no_value(&block.ty)),
        }
    }

    /// A call to a device function of the unit.
    pub fn call(&mut self, e: &Expr, func: FunctionId, args: &[Expr]) -> Result<String, String> {
        let unit = self.unit;
        let callee = unit
            .functions
            .get(func)
            .ok_or_else(|| format!("call to function #{func}, which the unit does not have"))?;
        if callee.is_kernel {
            return Err(format!(
                "kernel `{}` is called from `{}`; kernels are launched from the host only",
                callee.name, self.func.name
            ));
        }
        let mut ops = Vec::new();
        if let Some(ctx) = self.ctx.clone() {
            ops.push(format!("ptr {ctx}"));
        }
        if let Some((ring, launch)) = self.trace.clone() {
            ops.push(format!("i64 {ring}"));
            ops.push(format!("i64 {launch}"));
        }
        for a in args {
            let v = self.expr(a)?;
            if types::has_value(&a.ty) {
                let ty = self.reg_ty(&a.ty)?;
                ops.push(format!("{ty} {v}"));
            }
        }
        let ret = self.reg_ty(&callee.ret)?;
        let text = format!(
            "call {ret} {}({})",
            body_symbol(&callee.name),
            ops.join(", ")
        );
        if ret == "void" {
            self.inst(&text);
            if callee.ret == Type::Never {
                self.terminate("unreachable");
            }
            Ok(no_value(&e.ty))
        } else {
            Ok(self.def(&text))
        }
    }

    /// `place = value` and `place op= value`: the value is evaluated first, as in Rust.
    pub fn assign(
        &mut self,
        place: &super::super::super::kernel_ir::Place,
        op: Option<super::super::super::kernel_ir::BinaryOp>,
        value: &Expr,
    ) -> Result<String, String> {
        use super::super::super::kernel_ir::Place;
        let v = self.expr(value)?;
        match place {
            Place::Local(id) => {
                let ty = self
                    .func
                    .locals
                    .get(*id)
                    .ok_or("assignment to a local that does not exist")?
                    .ty
                    .clone();
                let v = match op {
                    Some(op) => {
                        let cur = self.load_local(*id)?;
                        self.binary_values(op, &cur, &ty, &v, &value.ty, &ty)?
                    }
                    None => v,
                };
                self.store_local(*id, &v)?;
            }
            Place::Deref(ptr) => {
                let ty = pointee(&ptr.ty)?;
                let p = self.expr(ptr)?;
                let v = match op {
                    Some(op) => {
                        let cur = self.load(&p, "ptr", &ty)?;
                        self.binary_values(op, &cur, &ty, &v, &value.ty, &ty)?
                    }
                    None => v,
                };
                self.store(&p, "ptr", &ty, &v)?;
            }
            Place::Field { local, index } => {
                let ty = field_type(self.func, *local, *index)?;
                let slot = self
                    .slot(*local)?
                    .ok_or_else(|| format!("local #{local} has no slot"))?;
                let p = self.arch().private_ptr();
                let ptr = self.def(&format!(
                    "getelementptr inbounds {}, {p} {}, i32 0, i32 {index}",
                    slot.ty, slot.ptr
                ));
                let ft = self.reg_ty(&ty)?;
                let v = match op {
                    Some(op) => {
                        let cur = self.def(&format!("load {ft}, {p} {ptr}"));
                        self.binary_values(op, &cur, &ty, &v, &value.ty, &ty)?
                    }
                    None => v,
                };
                self.inst(&format!("store {ft} {v}, {p} {ptr}"));
            }
            Place::Index { local, indices } => {
                let ptr = self.element_ptr(*local, indices)?;
                let ty = value_place_type(self.func, *local, indices.len())?;
                let v = match op {
                    Some(op) => {
                        let cur = self.index_load_at(&ty, &ptr)?;
                        self.binary_values(op, &cur, &ty, &v, &value.ty, &ty)?
                    }
                    None => v,
                };
                self.index_write(&ty, &ptr, &v)?;
            }
        }
        Ok(String::new())
    }

    /// Lowers an expression; returns its operand (empty for `()`).
    pub fn expr(&mut self, e: &Expr) -> Result<String, String> {
        match &e.kind {
            ExprKind::Int(v) => self.int_literal(*v, &e.ty),
            ExprKind::Float(v) => match e.ty.as_scalar() {
                Some(s) if s.is_float() => {
                    let _ = self.reg_ty(&e.ty)?;
                    types::float_const(*v, s)
                }
                _ => Err(format!("float literal of type `{}`", e.ty)),
            },
            ExprKind::Bool(v) => Ok(if *v { "true" } else { "false" }.to_string()),
            ExprKind::Local(id) => self.load_local(*id),
            ExprKind::Unary(op, x) => self.unary(*op, x, &e.ty),
            ExprKind::Binary(op, l, r) => self.binary(*op, l, r, &e.ty),
            ExprKind::Cast(x) => {
                let v = self.expr(x)?;
                self.cast(&v, &x.ty, &e.ty)
            }
            ExprKind::Deref(p) => {
                let v = self.expr(p)?;
                self.load(&v, "ptr", &e.ty)
            }
            ExprKind::Assign { place, op, value } => self.assign(place, *op, value),
            ExprKind::If {
                cond,
                then_block,
                else_block,
            } => self.if_expr(e, cond, then_block, else_block.as_ref()),
            ExprKind::Block(b) => self.block(b),
            ExprKind::While { cond, body } => self.while_expr(cond, body),
            ExprKind::Loop { body } => self.loop_expr(e, body),
            ExprKind::ForRange {
                var,
                start,
                end,
                inclusive,
                body,
            } => self.for_range(*var, start, end, *inclusive, body),
            ExprKind::Break => self.loop_jump(true),
            ExprKind::Continue => self.loop_jump(false),
            ExprKind::Return(v) => self.return_expr(v.as_deref()),
            ExprKind::Call { func, args } => self.call(e, *func, args),
            ExprKind::Intrinsic(op) => self.intrinsic(e, op),
            ExprKind::ArrayRepeat { value, len } => self.array_repeat(&e.ty, value, *len),
            ExprKind::ArrayList(list) => self.array_list(&e.ty, list),
            ExprKind::Aggregate(fields) => self.aggregate(&e.ty, fields),
            ExprKind::Field { base, index } => {
                let v = self.expr(base)?;
                let t = self.reg_ty(&base.ty)?;
                Ok(self.def(&format!("extractvalue {t} {v}, {index}")))
            }
            ExprKind::Index { array, indices } => self.index_read(&e.ty, *array, indices),
        }
    }

    fn int_literal(&mut self, v: u128, ty: &Type) -> Result<String, String> {
        match ty {
            Type::Scalar(s) => {
                let _ = self.reg_ty(ty)?;
                types::int_literal(v, *s)
            }
            Type::Ptr { .. } => {
                let i = types::int_const(v, 64);
                Ok(self.def(&format!("inttoptr i64 {i} to ptr")))
            }
            other => Err(format!("integer literal of type `{other}`")),
        }
    }
}

/// The element type reached by `depth` indices into local `id`.
fn value_place_type(
    func: &super::super::super::kernel_ir::Function,
    id: LocalId,
    depth: usize,
) -> Result<Type, String> {
    let mut ty = func
        .locals
        .get(id)
        .ok_or("assignment to a local that does not exist")?
        .ty
        .clone();
    for _ in 0..depth {
        ty = match ty {
            Type::Array { elem, .. } => *elem,
            other => return Err(format!("`{other}` indexed as an array")),
        };
    }
    Ok(ty)
}

/// The pointee of a raw pointer type.
pub(super) fn pointee(ty: &Type) -> Result<Type, String> {
    match ty {
        Type::Ptr { pointee, .. } => Ok((**pointee).clone()),
        other => Err(format!("expected a raw pointer, found `{other}`")),
    }
}

/// The element of a `Symmetric<T>` type.
pub(super) fn sym_elem(ty: &Type) -> Result<Type, String> {
    match ty {
        Type::Symmetric(t) => Ok((**t).clone()),
        other => Err(format!("expected a `Symmetric<T>`, found `{other}`")),
    }
}

/// The type of field `index` of local `local` (a tuple or struct).
fn field_type(func: &Function, local: LocalId, index: usize) -> Result<Type, String> {
    match func.locals.get(local).map(|l| &l.ty) {
        Some(Type::Struct(st)) => st
            .fields
            .get(index)
            .map(|(_, t)| t.clone())
            .ok_or_else(|| format!("field {index} of local #{local} does not exist")),
        _ => Err(format!("local #{local} is not a tuple or struct")),
    }
}
