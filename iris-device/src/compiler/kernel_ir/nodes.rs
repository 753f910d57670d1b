//! Functions, statements and expressions.

use super::{GenericArg, Intrinsic, Type};
use proc_macro2::Span;

/// Index of a local variable (parameters first) in [`Function::locals`].
pub type LocalId = usize;

/// Index of a function in [`Unit::functions`].
pub type FunctionId = usize;

/// A compilation unit: the kernels and device functions compiled together.
#[derive(Clone, Debug)]
pub struct Unit {
    /// The unit's name (the annotated item's name).
    pub name: String,
    /// Kernels and device functions.
    pub functions: Vec<Function>,
    /// Whether remote operations check their peer index against the world size (the
    /// unit's kernels are then built with peer checks; see `crate::abi::peer_table`).
    pub peer_checks: bool,
    /// Whether `trace_event` is built in (the `trace-events` feature): without it the
    /// calls compile to nothing. See [`Unit::trace_param`].
    pub trace_events: bool,
}

impl Unit {
    /// Whether some function of the unit calls `trace_event`.
    pub fn calls_trace_event(&self) -> bool {
        self.functions.iter().any(|f| {
            let mut found = false;
            f.body.walk(&mut |e| {
                found |= matches!(e.kind, ExprKind::Intrinsic(Intrinsic::TraceEvent { .. }));
            });
            found
        })
    }

    /// Whether the unit's functions take the trace's hidden arguments (the rank's trace
    /// buffer and the launch's serial; see `crate::abi::trace`): tracing is built in and
    /// some function records an event.
    pub fn trace_param(&self) -> bool {
        self.trace_events && self.calls_trace_event()
    }
}

/// A kernel (an entry point launched from the host) or a device function.
#[derive(Clone, Debug)]
pub struct Function {
    /// The Rust name; also the symbol of a kernel.
    pub name: String,
    /// An entry point rather than a device helper.
    pub is_kernel: bool,
    /// A device function marked `#[inline(always)]`: inlined into every caller (LLVM
    /// otherwise decides, and keeps a large function called from several places out of
    /// line, where its pointers lose what LLVM knew of their address spaces).
    pub inline_always: bool,
    /// Parameters are `locals[0..param_count]`.
    pub param_count: usize,
    /// The return type (`Unit` for kernels).
    pub ret: Type,
    /// All locals: parameters, `let` bindings, loop variables.
    pub locals: Vec<Local>,
    /// The body.
    pub body: Block,
    /// The `shared_array` call sites of this function, in order.
    pub shared_arrays: Vec<SharedArray>,
    /// Whether the body calls `sync_threads`.
    pub uses_block_barrier: bool,
    /// Whether the body calls a warp operation (shuffles, votes, `warp_sync`, warp
    /// reductions): the threads of a block then run concurrently on the CPU.
    pub uses_warp: bool,
    /// A kernel's `max_threads = N`: the most threads per block its code is built for
    /// (`None`: the default, `abi_facts::MAX_BLOCK_THREADS`).
    pub max_threads: Option<u32>,
    /// Whether the body calls `wg_mma` (NVIDIA Hopper then compiles the unit for
    /// `sm_90a`, whose `wgmma` it uses).
    pub uses_warpgroup_mma: bool,
    /// Whether the body (or a device function it calls) waits on a signal: a wait that
    /// gives up writes the context's fault record, which the host then reads.
    pub waits_on_signals: bool,
    /// The function's name span.
    pub span: Span,
    /// For an instance of a generic function: which one, with which arguments.
    pub instance_of: Option<InstanceOf>,
}

/// The generic function an instance was made from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InstanceOf {
    /// The generic function's name (the instance's own name is mangled).
    pub generic: String,
    /// One argument per generic parameter, in declaration order.
    pub args: Vec<GenericArg>,
}

impl Function {
    /// The parameters.
    pub fn params(&self) -> &[Local] {
        &self.locals[..self.param_count]
    }

    /// The device functions this one calls, each once, in first-call order.
    pub fn callees(&self) -> Vec<FunctionId> {
        let mut out = Vec::new();
        self.body.walk(&mut |e| {
            if let ExprKind::Call { func, .. } = &e.kind {
                if !out.contains(func) {
                    out.push(*func);
                }
            }
        });
        out
    }
}

impl Block {
    /// Calls `f` on every expression of the block, outer ones first.
    pub fn walk(&self, f: &mut impl FnMut(&Expr)) {
        for s in &self.stmts {
            match s {
                Stmt::Let { init: Some(e), .. } | Stmt::Expr(e) => e.walk(f),
                Stmt::Let { init: None, .. } => {}
            }
        }
        if let Some(t) = &self.tail {
            t.walk(f);
        }
    }
}

impl Expr {
    /// Calls `f` on this expression and every expression inside it, outer ones first.
    pub fn walk(&self, f: &mut impl FnMut(&Expr)) {
        f(self);
        match &self.kind {
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
            | ExprKind::ArrayRepeat { value: x, .. } => x.walk(f),
            ExprKind::Binary(_, a, b) => {
                a.walk(f);
                b.walk(f);
            }
            ExprKind::Assign { place, value, .. } => {
                value.walk(f);
                match &**place {
                    Place::Deref(p) => p.walk(f),
                    Place::Index { indices, .. } => indices.iter().for_each(|i| i.walk(f)),
                    Place::Local(_) | Place::Field { .. } => {}
                }
            }
            ExprKind::If {
                cond,
                then_block,
                else_block,
            } => {
                cond.walk(f);
                then_block.walk(f);
                if let Some(b) = else_block {
                    b.walk(f);
                }
            }
            ExprKind::Block(b) | ExprKind::Loop { body: b } => b.walk(f),
            ExprKind::While { cond, body } => {
                cond.walk(f);
                body.walk(f);
            }
            ExprKind::ForRange {
                start, end, body, ..
            } => {
                start.walk(f);
                end.walk(f);
                body.walk(f);
            }
            ExprKind::Call { args: list, .. }
            | ExprKind::ArrayList(list)
            | ExprKind::Aggregate(list) => list.iter().for_each(|a| a.walk(f)),
            ExprKind::Field { base, .. } => base.walk(f),
            ExprKind::Index { indices, .. } => indices.iter().for_each(|i| i.walk(f)),
            ExprKind::Intrinsic(op) => op.operands().into_iter().for_each(|a| a.walk(f)),
        }
    }
}

/// One `shared_array::<T, N>()` call site.
#[derive(Clone, Debug)]
pub struct SharedArray {
    /// Element type.
    pub elem: Type,
    /// Number of elements.
    pub len: u64,
}

/// A local variable.
#[derive(Clone, Debug)]
pub struct Local {
    /// The name as written.
    pub name: String,
    /// Its type.
    pub ty: Type,
    /// Declared `mut`.
    pub mutable: bool,
    /// Where it was declared.
    pub span: Span,
}

/// A `{ ... }` block: statements and an optional tail expression giving its value.
#[derive(Clone, Debug)]
pub struct Block {
    /// The statements in order.
    pub stmts: Vec<Stmt>,
    /// The value of the block, if it has a tail expression.
    pub tail: Option<Box<Expr>>,
    /// The block's type: the tail's, `Unit` without one, `Never` if it cannot finish.
    pub ty: Type,
}

/// A statement.
#[derive(Clone, Debug)]
pub enum Stmt {
    /// `let x = init;` (an uninitialised `let x;` has no init).
    Let {
        /// The bound local.
        local: LocalId,
        /// The initialiser.
        init: Option<Expr>,
    },
    /// An expression evaluated for its effect.
    Expr(Expr),
}

/// A typed expression.
#[derive(Clone, Debug)]
pub struct Expr {
    /// What it does.
    pub kind: ExprKind,
    /// Its type.
    pub ty: Type,
    /// Where it is in the source.
    pub span: Span,
}

/// Unary operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnaryOp {
    /// `-x` (wrapping for integers).
    Neg,
    /// `!x` (logical for bool, bitwise for integers).
    Not,
}

/// Binary operators. Integer arithmetic wraps; division by zero is undefined, as on GPUs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinaryOp {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/`
    Div,
    /// `%`
    Rem,
    /// `&`
    BitAnd,
    /// `|`
    BitOr,
    /// `^`
    BitXor,
    /// `<<` (shift amount masked to the bit width, as `wrapping_shl`)
    Shl,
    /// `>>` (arithmetic for signed, logical for unsigned)
    Shr,
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `&&` (short-circuit)
    And,
    /// `||` (short-circuit)
    Or,
}

impl BinaryOp {
    /// A comparison, whose result is `bool`.
    pub fn is_comparison(self) -> bool {
        matches!(
            self,
            BinaryOp::Eq | BinaryOp::Ne | BinaryOp::Lt | BinaryOp::Le | BinaryOp::Gt | BinaryOp::Ge
        )
    }

    /// `&&` or `||`.
    pub fn is_logical(self) -> bool {
        matches!(self, BinaryOp::And | BinaryOp::Or)
    }

    /// `<<` or `>>`: the right operand may have another integer type.
    pub fn is_shift(self) -> bool {
        matches!(self, BinaryOp::Shl | BinaryOp::Shr)
    }
}

/// Expressions.
#[derive(Clone, Debug)]
pub enum ExprKind {
    /// An integer literal (of an integer type, or `bool` never).
    Int(u128),
    /// A float literal.
    Float(f64),
    /// `true` / `false`.
    Bool(bool),
    /// A local variable's value.
    Local(LocalId),
    /// A unary operation.
    Unary(UnaryOp, Box<Expr>),
    /// A binary operation; both operands have the same type except for shifts.
    Binary(BinaryOp, Box<Expr>, Box<Expr>),
    /// `e as T` (and `to_f32`/`from_f32`): converts to `self.ty`. Numeric casts follow
    /// Rust (float to int saturates), pointer casts reinterpret, pointer <-> integer.
    Cast(Box<Expr>),
    /// `*p`: a load through a raw pointer.
    Deref(Box<Expr>),
    /// `place = value` or `place op= value`.
    Assign {
        /// Where to write.
        place: Box<Place>,
        /// `Some(op)` for compound assignment.
        op: Option<BinaryOp>,
        /// The value.
        value: Box<Expr>,
    },
    /// `if cond { .. } else { .. }`, a value when both branches give one.
    If {
        /// A `bool`.
        cond: Box<Expr>,
        /// The then-branch.
        then_block: Block,
        /// The else-branch (an `else if` is a block holding an `If`).
        else_block: Option<Block>,
    },
    /// A nested block.
    Block(Block),
    /// `while cond { .. }`.
    While {
        /// A `bool`, tested before each iteration.
        cond: Box<Expr>,
        /// The body.
        body: Block,
    },
    /// `loop { .. }`.
    Loop {
        /// The body.
        body: Block,
    },
    /// `for var in start..end { .. }` (or `..=`), counting up by one.
    ForRange {
        /// The loop variable (a fresh local each iteration in Rust; one slot here).
        var: LocalId,
        /// First value.
        start: Box<Expr>,
        /// Bound (exclusive, or inclusive with `inclusive`).
        end: Box<Expr>,
        /// `..=`.
        inclusive: bool,
        /// The body.
        body: Block,
    },
    /// `break` out of the innermost loop.
    Break,
    /// `continue` the innermost loop.
    Continue,
    /// `return` or `return value`.
    Return(Option<Box<Expr>>),
    /// A call to a device function of the unit.
    Call {
        /// The callee.
        func: FunctionId,
        /// Arguments.
        args: Vec<Expr>,
    },
    /// A device intrinsic, with its operands.
    Intrinsic(Intrinsic),
    /// `[value; len]`: an array of `len` copies.
    ArrayRepeat {
        /// The element.
        value: Box<Expr>,
        /// How many.
        len: u64,
    },
    /// `[a, b, c]`: an array of its elements.
    ArrayList(Vec<Expr>),
    /// `(a, b)` or `S { x: a, y: b }`: a tuple or struct (`self.ty`) of its fields' values,
    /// in declaration order.
    Aggregate(Vec<Expr>),
    /// `t.0` or `s.x`: field `index` of a tuple or struct value.
    Field {
        /// The tuple or struct.
        base: Box<Expr>,
        /// The field's position.
        index: usize,
    },
    /// `a[i]` or `a[i][j]`: an element of a local array (of arrays). Every index is known
    /// at compile time once loops are unrolled, and in bounds (the frontend checks both).
    Index {
        /// The array.
        array: LocalId,
        /// One index per dimension, outermost first, each a `u64`.
        indices: Vec<Expr>,
    },
}

/// Where an assignment writes.
// One per assignment, boxed there: the small variants' waste is not worth an indirection.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug)]
pub enum Place {
    /// A local variable.
    Local(LocalId),
    /// `*ptr`: the expression is the pointer.
    Deref(Expr),
    /// `a[i]` (or `a[i][j]`) of a local array.
    Index {
        /// The array.
        local: LocalId,
        /// One index per dimension, outermost first, each a `u64`.
        indices: Vec<Expr>,
    },
    /// `s.x` (or `t.0`) of a local tuple or struct.
    Field {
        /// The tuple or struct.
        local: LocalId,
        /// The field's position.
        index: usize,
    },
}
