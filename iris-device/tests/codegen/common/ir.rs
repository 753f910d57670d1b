//! Building kernel IR by hand, concisely.

#![allow(dead_code)]

use iris_device::compiler::kernel_ir::*;
use proc_macro2::Span;

/// Shorthand types.
pub mod t {
    use super::*;
    pub fn unit() -> Type {
        Type::Unit
    }
    pub fn boolean() -> Type {
        Type::Scalar(Scalar::Bool)
    }
    pub fn s(x: Scalar) -> Type {
        Type::Scalar(x)
    }
    pub fn u32() -> Type {
        s(Scalar::U32)
    }
    pub fn i32() -> Type {
        s(Scalar::I32)
    }
    pub fn u64() -> Type {
        s(Scalar::U64)
    }
    pub fn i64() -> Type {
        s(Scalar::I64)
    }
    pub fn f32() -> Type {
        s(Scalar::F32)
    }
    pub fn f64() -> Type {
        s(Scalar::F64)
    }
    pub fn vec(name: &str) -> Type {
        Type::Vector(Vector::from_name(name).expect("vector name"))
    }
    pub fn ptr(p: Type) -> Type {
        Type::Ptr {
            pointee: Box::new(p),
            mutable: true,
        }
    }
    pub fn sym(p: Type) -> Type {
        Type::Symmetric(Box::new(p))
    }
}

pub fn e(kind: ExprKind, ty: Type) -> Expr {
    Expr {
        kind,
        ty,
        span: Span::call_site(),
    }
}

pub fn int(v: i128, ty: Type) -> Expr {
    e(ExprKind::Int(v as u128), ty)
}

pub fn float(v: f64, ty: Type) -> Expr {
    e(ExprKind::Float(v), ty)
}

pub fn boolean(v: bool) -> Expr {
    e(ExprKind::Bool(v), t::boolean())
}

pub fn unary(op: UnaryOp, x: Expr) -> Expr {
    let ty = x.ty.clone();
    e(ExprKind::Unary(op, Box::new(x)), ty)
}

pub fn bin(op: BinaryOp, a: Expr, b: Expr) -> Expr {
    let ty = if op.is_comparison() || op.is_logical() {
        t::boolean()
    } else {
        a.ty.clone()
    };
    e(ExprKind::Binary(op, Box::new(a), Box::new(b)), ty)
}

pub fn cast(x: Expr, ty: Type) -> Expr {
    e(ExprKind::Cast(Box::new(x)), ty)
}

pub fn deref(p: Expr) -> Expr {
    let ty = match &p.ty {
        Type::Ptr { pointee, .. } => (**pointee).clone(),
        other => panic!("deref of {other}"),
    };
    e(ExprKind::Deref(Box::new(p)), ty)
}

/// An intrinsic by kind, its operands given as a list (for writing IR by hand in tests);
/// [`Op::build`] names them as the IR does.
#[derive(Clone, Copy, Debug)]
pub enum Op {
    ThreadIdx(Dim),
    BlockIdx(Dim),
    BlockDim(Dim),
    SharedArray {
        index: usize,
    },
    PtrOffset,
    SymOffset,
    RemoteLoad,
    RemoteStore,
    VecGet(u32),
    Math(MathFn),
    AtomicRmw {
        op: RmwOp,
        order: MemOrder,
        scope: MemScope,
    },
    AtomicCas {
        order: MemOrder,
        scope: MemScope,
    },
    AtomicLoad {
        order: MemOrder,
        scope: MemScope,
    },
    AtomicStore {
        order: MemOrder,
        scope: MemScope,
    },
    Fence {
        order: MemOrder,
        scope: MemScope,
    },
}

impl Op {
    /// The IR intrinsic with `args` as its operands, in the order the device API takes
    /// them.
    pub fn build(self, args: Vec<Expr>) -> Intrinsic {
        let mut a = args.into_iter().map(Box::new);
        let mut next = || a.next().expect("an operand");
        match self {
            Op::ThreadIdx(d) => Intrinsic::ThreadIdx(d),
            Op::BlockIdx(d) => Intrinsic::BlockIdx(d),
            Op::BlockDim(d) => Intrinsic::BlockDim(d),
            Op::SharedArray { index } => Intrinsic::SharedArray { index },
            Op::PtrOffset => Intrinsic::PtrOffset {
                ptr: next(),
                count: next(),
            },
            Op::SymOffset => Intrinsic::SymOffset {
                sym: next(),
                count: next(),
            },
            Op::RemoteLoad => Intrinsic::RemoteLoad {
                sym: next(),
                peer: next(),
            },
            Op::RemoteStore => Intrinsic::RemoteStore {
                sym: next(),
                value: next(),
                peer: next(),
            },
            Op::VecGet(lane) => Intrinsic::VecGet {
                vector: next(),
                lane,
            },
            Op::Math(f) => {
                let x = next();
                Intrinsic::Math { f, x, y: a.next() }
            }
            Op::AtomicRmw { op, order, scope } => Intrinsic::AtomicRmw {
                op,
                order,
                scope,
                sym: next(),
                value: next(),
                peer: next(),
            },
            Op::AtomicCas { order, scope } => Intrinsic::AtomicCas {
                order,
                scope,
                sym: next(),
                current: next(),
                new: next(),
                peer: next(),
            },
            Op::AtomicLoad { order, scope } => Intrinsic::AtomicLoad {
                order,
                scope,
                sym: next(),
                peer: next(),
            },
            Op::AtomicStore { order, scope } => Intrinsic::AtomicStore {
                order,
                scope,
                sym: next(),
                value: next(),
                peer: next(),
            },
            Op::Fence { order, scope } => Intrinsic::Fence { order, scope },
        }
    }
}

/// An intrinsic call: `op` applied to `args`, of type `ty`.
pub fn intr(op: Op, args: Vec<Expr>, ty: Type) -> Expr {
    e(ExprKind::Intrinsic(op.build(args)), ty)
}

pub fn assign(place: Place, value: Expr) -> Expr {
    e(
        ExprKind::Assign {
            place: Box::new(place),
            op: None,
            value: Box::new(value),
        },
        t::unit(),
    )
}

pub fn compound(place: Place, op: BinaryOp, value: Expr) -> Expr {
    e(
        ExprKind::Assign {
            place: Box::new(place),
            op: Some(op),
            value: Box::new(value),
        },
        t::unit(),
    )
}

pub fn block(stmts: Vec<Stmt>, tail: Option<Expr>) -> Block {
    let ty = tail.as_ref().map(|t| t.ty.clone()).unwrap_or(Type::Unit);
    Block {
        stmts,
        tail: tail.map(Box::new),
        ty,
    }
}

pub fn stmts(stmts: Vec<Stmt>) -> Block {
    block(stmts, None)
}

pub fn s(x: Expr) -> Stmt {
    Stmt::Expr(x)
}

pub fn if_(cond: Expr, then_block: Block, else_block: Option<Block>) -> Expr {
    let ty = match &else_block {
        Some(b) if then_block.ty != Type::Never => {
            if b.ty == Type::Never {
                then_block.ty.clone()
            } else {
                b.ty.clone()
            }
        }
        Some(b) => b.ty.clone(),
        None => Type::Unit,
    };
    e(
        ExprKind::If {
            cond: Box::new(cond),
            then_block,
            else_block,
        },
        ty,
    )
}

pub fn while_(cond: Expr, body: Block) -> Expr {
    e(
        ExprKind::While {
            cond: Box::new(cond),
            body,
        },
        t::unit(),
    )
}

pub fn loop_(body: Block) -> Expr {
    e(ExprKind::Loop { body }, t::unit())
}

pub fn brk() -> Expr {
    e(ExprKind::Break, Type::Never)
}

pub fn cont() -> Expr {
    e(ExprKind::Continue, Type::Never)
}

pub fn ret(v: Option<Expr>) -> Expr {
    e(ExprKind::Return(v.map(Box::new)), Type::Never)
}

pub fn call(func: FunctionId, args: Vec<Expr>, ty: Type) -> Expr {
    e(ExprKind::Call { func, args }, ty)
}

pub fn ptr_add(p: Expr, n: Expr) -> Expr {
    let ty = p.ty.clone();
    let n = cast(n, t::i64());
    intr(Op::PtrOffset, vec![p, n], ty)
}

pub fn sym_add(p: Expr, n: Expr) -> Expr {
    let ty = p.ty.clone();
    let n = cast(n, t::i64());
    intr(Op::SymOffset, vec![p, n], ty)
}

pub fn thread_idx() -> Expr {
    intr(Op::ThreadIdx(Dim::X), vec![], t::u32())
}

pub fn global_id() -> Expr {
    let bid = intr(Op::BlockIdx(Dim::X), vec![], t::u32());
    let bdim = intr(Op::BlockDim(Dim::X), vec![], t::u32());
    bin(BinaryOp::Add, bin(BinaryOp::Mul, bid, bdim), thread_idx())
}

/// A function under construction: declare params and locals, then finish with a body.
pub struct Func {
    name: String,
    is_kernel: bool,
    locals: Vec<Local>,
    params: usize,
    shared: Vec<SharedArray>,
    ret: Type,
}

impl Func {
    pub fn kernel(name: &str) -> Self {
        Func {
            name: name.into(),
            is_kernel: true,
            locals: vec![],
            params: 0,
            shared: vec![],
            ret: Type::Unit,
        }
    }

    pub fn device(name: &str, ret: Type) -> Self {
        Func {
            ret,
            is_kernel: false,
            ..Func::kernel(name)
        }
    }

    /// Adds a parameter (before any local); returns an expression reading it.
    pub fn param(&mut self, name: &str, ty: Type) -> Expr {
        assert_eq!(self.params, self.locals.len(), "params come first");
        self.params += 1;
        self.local(name, ty).1
    }

    /// Adds a local; returns its id and an expression reading it.
    pub fn local(&mut self, name: &str, ty: Type) -> (LocalId, Expr) {
        let id = self.locals.len();
        self.locals.push(Local {
            name: name.into(),
            ty: ty.clone(),
            mutable: true,
            span: Span::call_site(),
        });
        (id, e(ExprKind::Local(id), ty))
    }

    /// Adds a shared array; returns the `shared_array` expression.
    pub fn shared(&mut self, elem: Type, len: u64) -> Expr {
        let index = self.shared.len();
        self.shared.push(SharedArray {
            elem: elem.clone(),
            len,
        });
        intr(Op::SharedArray { index }, vec![], t::ptr(elem))
    }

    pub fn finish(self, body: Block) -> Function {
        let uses_block_barrier = format!("{body:?}").contains("SyncThreads");
        Function {
            name: self.name,
            is_kernel: self.is_kernel,
            inline_always: false,
            param_count: self.params,
            ret: self.ret,
            locals: self.locals,
            body,
            shared_arrays: self.shared,
            uses_block_barrier,
            uses_warp: false,
            uses_warpgroup_mma: false,
            waits_on_signals: false,
            max_threads: None,
            span: Span::call_site(),
            instance_of: None,
        }
    }
}

pub fn unit(name: &str, functions: Vec<Function>) -> Unit {
    Unit {
        name: name.into(),
        functions,
        peer_checks: false,
        trace_events: false,
    }
}

pub fn let_(id: LocalId, init: Expr) -> Stmt {
    Stmt::Let {
        local: id,
        init: Some(init),
    }
}

pub fn for_range(var: LocalId, start: Expr, end: Expr, inclusive: bool, body: Block) -> Expr {
    e(
        ExprKind::ForRange {
            var,
            start: Box::new(start),
            end: Box::new(end),
            inclusive,
            body,
        },
        t::unit(),
    )
}
