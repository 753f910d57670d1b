//! Functions, statements and expressions.

use super::Type;
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
}

/// A kernel (an entry point launched from the host) or a device function.
#[derive(Clone, Debug)]
pub struct Function {
    /// The Rust name; also the symbol of a kernel.
    pub name: String,
    /// An entry point rather than a device helper.
    pub is_kernel: bool,
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
    /// The function's name span.
    pub span: Span,
}

impl Function {
    /// The parameters.
    pub fn params(&self) -> &[Local] {
        &self.locals[..self.param_count]
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
    /// A device intrinsic.
    Intrinsic {
        /// Which.
        op: Intrinsic,
        /// Arguments (see each intrinsic).
        args: Vec<Expr>,
    },
}

/// Where an assignment writes.
#[derive(Clone, Debug)]
pub enum Place {
    /// A local variable.
    Local(LocalId),
    /// `*ptr`: the expression is the pointer.
    Deref(Expr),
}

/// A thread or block dimension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dim {
    /// x
    X,
    /// y
    Y,
    /// z
    Z,
}

impl Dim {
    /// 0, 1, 2.
    pub fn index(self) -> usize {
        match self {
            Dim::X => 0,
            Dim::Y => 1,
            Dim::Z => 2,
        }
    }
}

/// Memory ordering (`core::sync::atomic::Ordering`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemOrder {
    /// `Relaxed` (LLVM `monotonic`).
    Relaxed,
    /// `Acquire`.
    Acquire,
    /// `Release`.
    Release,
    /// `AcqRel`.
    AcqRel,
    /// `SeqCst`.
    SeqCst,
}

/// Memory scope (`iris::Scope`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemScope {
    /// The block.
    Block,
    /// The device.
    Device,
    /// The system: every device and the host.
    System,
}

/// Atomic read-modify-write operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RmwOp {
    /// `atomic_add` (integer or float)
    Add,
    /// `atomic_sub` (integer or float)
    Sub,
    /// `atomic_and`
    And,
    /// `atomic_or`
    Or,
    /// `atomic_xor`
    Xor,
    /// `atomic_min` (signed or unsigned by type)
    Min,
    /// `atomic_max` (signed or unsigned by type)
    Max,
    /// `atomic_xchg`
    Xchg,
}

/// Math functions on floats (and `min`/`max`/`abs` on integers).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MathFn {
    /// `x.sqrt()`
    Sqrt,
    /// `x.abs()`
    Abs,
    /// `x.min(y)`
    Min,
    /// `x.max(y)`
    Max,
}

/// Device intrinsics. Argument lists are given per variant; `sym` is a `Symmetric<T>`,
/// `peer` a `u32`.
#[derive(Clone, Debug, PartialEq)]
pub enum Intrinsic {
    /// `thread_idx_*()` -> u32.
    ThreadIdx(Dim),
    /// `block_idx_*()` -> u32.
    BlockIdx(Dim),
    /// `block_dim_*()` -> u32.
    BlockDim(Dim),
    /// `grid_dim_*()` -> u32.
    GridDim(Dim),
    /// `sync_threads()`.
    SyncThreads,
    /// `fence(order, scope)`; no arguments (both are constants).
    Fence {
        /// Ordering.
        order: MemOrder,
        /// Scope.
        scope: MemScope,
    },
    /// `shared_array::<T, N>()` -> `*mut T`: `Function::shared_arrays[index]`.
    SharedArray {
        /// Index into the function's shared arrays.
        index: usize,
    },
    /// `[ptr, count: i64]` -> ptr moved by `count` elements (`add`, `sub`, `offset`).
    PtrOffset,
    /// `[sym, count: i64]` -> sym moved by `count` elements.
    SymOffset,
    /// `[sym]` -> `*mut T`, the local pointer.
    SymLocal,
    /// `[sym]` -> `Symmetric<U>` (`self.ty`), same address.
    SymCast,
    /// `[sym, peer]` -> T: read the peer's copy.
    RemoteLoad,
    /// `[sym, value, peer]`: write the peer's copy.
    RemoteStore,
    /// `[src: sym, dst: ptr, peer]`: peer's `*src` to local `*dst`.
    Get,
    /// `[src: ptr, dst: sym, peer]`: local `*src` to peer's `*dst`.
    Put,
    /// `[src: sym, dst: sym, from_peer, to_peer]`.
    Copy,
    /// `[sym, value, peer]` -> old value.
    AtomicRmw {
        /// The operation.
        op: RmwOp,
        /// Ordering.
        order: MemOrder,
        /// Scope.
        scope: MemScope,
    },
    /// `[sym, current, new, peer]` -> old value.
    AtomicCas {
        /// Ordering (on success; failure uses the strongest load ordering it allows).
        order: MemOrder,
        /// Scope.
        scope: MemScope,
    },
    /// `[sym, peer]` -> value.
    AtomicLoad {
        /// Ordering.
        order: MemOrder,
        /// Scope.
        scope: MemScope,
    },
    /// `[sym, value, peer]`.
    AtomicStore {
        /// Ordering.
        order: MemOrder,
        /// Scope.
        scope: MemScope,
    },
    /// `[lane0, lane1, ...]` -> vector (`f32x4::new([..])`).
    VecNew,
    /// `[scalar]` -> vector with every lane set.
    VecSplat,
    /// `[vector]` -> lane.
    VecGet(u32),
    /// `[x]` or `[x, y]` -> same type.
    Math(MathFn),
    /// `global_timer_ns()` -> u64: nanoseconds of the device's shared clock.
    GlobalTimerNs,
    /// `clock64()` -> u64: the multiprocessor's cycle counter.
    Clock64,
    /// `[ns: u32]`: sleeps about `ns` nanoseconds.
    Nanosleep,
}
