//! Warp operations in a split warp, and block barriers in a split block, found at compile
//! time.
//!
//! Every lane of a warp must call a warp operation (shuffles, votes, `warp_sync`, warp
//! reductions, `mma` and its fragment loads, `wg_mma`) together, and every thread of a
//! block must reach `sync_threads` together: inside a branch that some lanes take and
//! others skip, a GPU's result is undefined and the CPU backend leaves the skipping lanes
//! out. This pass finds such calls.
//!
//! Each value gets the widest group of threads that is certain to agree on it: the
//! block (literals, parameters, `block_idx`, `block_dim`, `grid_dim`, `warp_size`, loads
//! from an address the block agrees on), the warp (`warp_id`, votes, warp reductions, a
//! broadcast `shfl(v, lane)` from a lane the warp agrees on, a thread index divided by the
//! warp size or by a multiple of 64), or only the thread (`thread_idx`, `lane_id`, other
//! shuffles, atomics' results, clocks). The walk follows the program: a local has the
//! level of the value it holds there, and after a branch the narrower of the levels each
//! way left it (loops repeat to a fixed point). A branch or a loop, or the code after a
//! `break` or `continue` (or, in a device function, a `return`) taken under a condition,
//! runs for the threads that agree on that condition; a warp operation there needs a
//! condition the warp agrees on, a `sync_threads` one the block agrees on, and a call of a
//! device function that uses either counts as one. A kernel's `return` ends the thread:
//! lanes that left are not waited for. A thread index divided into warps assumes, as
//! warp-level code does, that a block's x dimension is a multiple of the warp size.
//!
//! Device functions assume their parameters agree across the block (the call sites are
//! checked instead): the pass reports what is certainly split, never a correct program.
//! A call's result has the level of what the function returns, found the same way: a
//! function that meets the block barrier and returns a word every thread read from the
//! same shared address returns a value the block agrees on, one that returns what a
//! thread's own wait saw does not.

use super::super::kernel_ir::{
    BinaryOp, Block, Dim, Expr, ExprKind, Function, Intrinsic, Place, ShuffleKind, Stmt,
};
use super::super::CompileError;

/// The widest group of threads certain to agree on a value, narrowest last.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Level {
    Block,
    Warp,
    Thread,
}

/// What a call site or an intrinsic needs its threads to do together.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Together {
    Warp,
    Block,
}

/// The first split warp operation or block barrier of each function, as errors.
pub fn check(functions: &[Function]) -> Vec<CompileError> {
    let results = result_levels(functions);
    let mut errors = Vec::new();
    for f in functions {
        let mut pass = Pass::new(f, functions, &results, true);
        pass.block(&f.body, Level::Block);
        errors.extend(pass.error);
    }
    errors
}

/// For each function, the widest group of threads certain to agree on its result when
/// they agree on its arguments: the narrowest level of the values it returns and of the
/// conditions it returns under (`if thread_idx_x() == 0 { return 1; }` makes the result
/// the thread's). A call's result is at that level, or its arguments' if narrower.
/// Calls form no cycles, so repeating until nothing changes ends within as many rounds
/// as the call chain is deep.
fn result_levels(functions: &[Function]) -> Vec<Level> {
    let mut levels = vec![Level::Block; functions.len()];
    for _ in 0..=functions.len() {
        let mut changed = false;
        for (i, f) in functions.iter().enumerate() {
            let mut pass = Pass::new(f, functions, &levels, false);
            let tail = pass.block(&f.body, Level::Block);
            let level = pass.result.max(tail).max(pass.returned);
            if level > levels[i] {
                levels[i] = level;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    levels
}

/// The level of an intrinsic's result when it does not follow its operands'.
fn intrinsic_result(op: &Intrinsic) -> Option<Level> {
    use Intrinsic::*;
    match op {
        BlockIdx(_) | BlockDim(_) | GridDim(_) | WarpSize | SharedArray { .. } => {
            Some(Level::Block)
        }
        WarpId | Vote { .. } | WarpReduce { .. } => Some(Level::Warp),
        ThreadIdx(_)
        | LaneId
        | Shuffle { .. }
        | AtomicRmw { .. }
        | AtomicCas { .. }
        | GlobalTimerNs
        | WorldAborted { .. }
        | WordLoad { .. }
        | WordCas { .. }
        | MmaLoad { .. }
        | MmaLoadSwizzled { .. }
        | Mma { .. }
        | WgMma { .. }
        | WgWait { .. } => Some(Level::Thread),
        _ => None,
    }
}

/// What the lanes of an intrinsic must do together, and its name for messages.
fn intrinsic_needs(op: &Intrinsic) -> Option<(Together, &'static str)> {
    use Intrinsic::*;
    let warp = |name| Some((Together::Warp, name));
    match op {
        SyncThreads => Some((Together::Block, "`sync_threads`")),
        Shuffle { .. } => warp("a warp shuffle (`shfl*`)"),
        Vote { .. } => warp("a warp vote (`ballot`, `any`, `all`)"),
        WarpSync => warp("`warp_sync`"),
        WarpReduce { .. } => warp("a warp reduction (`warp_reduce_*`)"),
        MmaLoad { .. } | MmaLoadSwizzled { .. } => warp("a matrix fragment load (`mma_load_*`)"),
        Mma { .. } => warp("`mma`"),
        WgMma { .. } => warp("`wg_mma`"),
        WgCommit | WgWait { .. } => warp("`wg_commit` / `wg_wait`"),
        _ => None,
    }
}

/// The walk of one function, in program order: the locals' levels are those of the
/// values they hold at the point walked (an assignment replaces one; after a branch, a
/// local has the narrower of the levels each way gave it; a loop repeats until they stop
/// changing).
struct Pass<'a> {
    f: &'a Function,
    functions: &'a [Function],
    /// Per function: the level of its result (see [`result_levels`]).
    results: &'a [Level],
    locals: Vec<Level>,
    /// Per local: whether it holds a thread index plus a value the block agrees on.
    thread_index: Vec<bool>,
    /// Per enclosing loop: the narrowest level a `break` or `continue` of it was taken at.
    loop_exits: Vec<Level>,
    /// In a device function: the narrowest level a `return` was taken at so far.
    returned: Level,
    /// The narrowest level of a value returned so far.
    result: Level,
    error: Option<CompileError>,
    /// Whether to report (off while a loop's levels are still changing).
    report: bool,
}

/// The locals' levels and thread-index facts at one point.
type State = (Vec<Level>, Vec<bool>);

impl<'a> Pass<'a> {
    fn new(f: &'a Function, functions: &'a [Function], results: &'a [Level], report: bool) -> Self {
        Pass {
            f,
            functions,
            results,
            locals: vec![Level::Block; f.locals.len()],
            thread_index: vec![false; f.locals.len()],
            loop_exits: Vec::new(),
            returned: Level::Block,
            result: Level::Block,
            error: None,
            report,
        }
    }

    fn assign(&mut self, local: usize, level: Level, value: Option<&Expr>) {
        self.thread_index[local] = value.is_some_and(|v| self.is_thread_index(v));
        self.locals[local] = level;
    }

    fn state(&self) -> State {
        (self.locals.clone(), self.thread_index.clone())
    }

    fn set_state(&mut self, state: State) {
        (self.locals, self.thread_index) = state;
    }

    /// The state after one of two ways: each local at the narrower level.
    fn join(a: &State, b: &State) -> State {
        let locals = a.0.iter().zip(&b.0).map(|(x, y)| (*x).max(*y)).collect();
        let index = a.1.iter().zip(&b.1).map(|(x, y)| *x && *y).collect();
        (locals, index)
    }

    fn block(&mut self, b: &Block, control: Level) -> Level {
        let mut control = control;
        for s in &b.stmts {
            match s {
                Stmt::Let { local, init } => {
                    if let Some(init) = init {
                        let level = self.expr(init, control).max(control);
                        self.assign(*local, level, Some(init));
                    }
                }
                Stmt::Expr(e) => {
                    self.expr(e, control);
                }
            }
            // Code after a `return` some threads took runs for the others only.
            control = control.max(self.returned);
        }
        match &b.tail {
            Some(t) => self.expr(t, control),
            None => Level::Block,
        }
    }

    fn require(&mut self, needs: Together, what: &str, control: Level, e: &Expr) {
        let allowed = match needs {
            Together::Warp => Level::Warp,
            Together::Block => Level::Block,
        };
        if !self.report || control <= allowed || self.error.is_some() {
            return;
        }
        let message = match needs {
            Together::Warp => format!(
                "{what} inside a branch whose condition can differ between the lanes of a warp: every lane of a warp must call it together (on a GPU the result is undefined; the CPU backend leaves the lanes that skip it out). Compute the value in the branch and call it outside (`let v = if cond {{ x }} else {{ 0 }}; warp_reduce_add(v)`), or branch on what the warp agrees on (`warp_id()`, `thread_idx_x() / warp_size()`; a group of 32 threads splits AMD's 64-lane warps)"
            ),
            Together::Block => format!(
                "{what} inside a branch whose condition can differ between the threads of a block: every thread of a block must reach it (threads that skip it leave the others waiting). Move it out of the branch, or branch on what the block agrees on (parameters, `block_idx_x()`, values every thread loaded from the same address)"
            ),
        };
        self.error = Some(CompileError::new(e.span, message));
    }

    fn expr(&mut self, e: &Expr, control: Level) -> Level {
        match &e.kind {
            ExprKind::Int(_) | ExprKind::Float(_) | ExprKind::Bool(_) => Level::Block,
            ExprKind::Local(id) => self.locals[*id],
            ExprKind::Unary(_, x) | ExprKind::Cast(x) | ExprKind::Deref(x) => self.expr(x, control),
            ExprKind::Binary(op, a, b) => {
                let (la, lb) = (self.expr(a, control), self.expr(b, control));
                if la == Level::Thread && self.is_thread_index(a) && divides_into_warps(*op, b) {
                    Level::Warp.max(lb)
                } else {
                    la.max(lb)
                }
            }
            ExprKind::Assign { place, value, .. } => {
                let lv = self.expr(value, control).max(control);
                match &**place {
                    Place::Local(id) => self.assign(*id, lv, Some(value)),
                    Place::Index { local, indices } => {
                        // One element changes: the array holds the old ones too.
                        let mut l = lv.max(self.locals[*local]);
                        for i in indices {
                            l = l.max(self.expr(i, control));
                        }
                        self.assign(*local, l, None);
                    }
                    Place::Field { local, .. } => {
                        // One field changes: the value holds the others too.
                        let l = lv.max(self.locals[*local]);
                        self.assign(*local, l, None);
                    }
                    Place::Deref(p) => {
                        self.expr(p, control);
                    }
                }
                Level::Block
            }
            ExprKind::If {
                cond,
                then_block,
                else_block,
            } => {
                let lc = self.expr(cond, control);
                let inner = control.max(lc);
                let before = self.state();
                let lt = self.block(then_block, inner);
                let after_then = self.state();
                self.set_state(before);
                let le = else_block
                    .as_ref()
                    .map_or(Level::Block, |b| self.block(b, inner));
                let joined = Self::join(&after_then, &self.state());
                self.set_state(joined);
                lc.max(lt).max(le)
            }
            ExprKind::Block(b) => self.block(b, control),
            ExprKind::While { cond, body } => {
                self.loop_body(Some(cond), body, control);
                Level::Block
            }
            ExprKind::Loop { body } => {
                self.loop_body(None, body, control);
                Level::Block
            }
            ExprKind::ForRange {
                var,
                start,
                end,
                body,
                ..
            } => {
                let bounds = self.expr(start, control).max(self.expr(end, control));
                let inner = control.max(bounds);
                self.assign(*var, inner, None);
                self.loop_body(None, body, inner);
                Level::Block
            }
            ExprKind::Break | ExprKind::Continue => {
                if let Some(exit) = self.loop_exits.last_mut() {
                    *exit = (*exit).max(control);
                }
                Level::Block
            }
            ExprKind::Return(value) => {
                if let Some(v) = value {
                    let level = self.expr(v, control);
                    self.result = self.result.max(level);
                }
                if !self.f.is_kernel {
                    self.returned = self.returned.max(control);
                }
                Level::Block
            }
            ExprKind::Call { func, args } => {
                let mut level = Level::Block;
                for a in args {
                    level = level.max(self.expr(a, control));
                }
                let callee = &self.functions[*func];
                if callee.uses_block_barrier {
                    let what = format!(
                        "a call of `{}`, which meets at `sync_threads`,",
                        callee.name
                    );
                    self.require(Together::Block, &what, control, e);
                }
                if callee.uses_warp {
                    let what = format!("a call of `{}`, which uses warp operations,", callee.name);
                    self.require(Together::Warp, &what, control, e);
                }
                level.max(self.results[*func])
            }
            ExprKind::Intrinsic(op) => {
                let mut level = Level::Block;
                for x in op.operands() {
                    level = level.max(self.expr(x, control));
                }
                if let Some((needs, what)) = intrinsic_needs(op) {
                    self.require(needs, what, control, e);
                }
                match op {
                    // `shfl(v, src)` from a lane the warp agrees on: every lane gets its value.
                    Intrinsic::Shuffle {
                        kind: ShuffleKind::Index,
                        lane,
                        ..
                    } if self.level_of(lane) <= Level::Warp => Level::Warp,
                    _ => intrinsic_result(op).unwrap_or(level),
                }
            }
            ExprKind::ArrayRepeat { value, .. } => self.expr(value, control),
            ExprKind::Field { base, .. } => self.expr(base, control),
            ExprKind::ArrayList(list) | ExprKind::Aggregate(list) => {
                let mut level = Level::Block;
                for x in list {
                    level = level.max(self.expr(x, control));
                }
                level
            }
            ExprKind::Index { array, indices } => {
                let mut level = self.locals[*array];
                for i in indices {
                    level = level.max(self.expr(i, control));
                }
                level
            }
        }
    }

    /// A loop: its condition (a `while`'s) and body, repeated without reporting until the
    /// levels at its head stop changing, then once more reporting. A condition the warp
    /// does not agree on, or a `break` or `continue` taken at a narrower level, makes the
    /// later iterations run at that level.
    fn loop_body(&mut self, cond: Option<&Expr>, body: &Block, control: Level) {
        let report = self.report;
        self.report = false;
        let mut head = self.state();
        let mut inner = control;
        // Levels only narrow at the head (three per local): this ends well before.
        for _ in 0..3 * (self.locals.len() + 2) {
            self.set_state(head.clone());
            let (next_head, next_inner) = self.iterate(cond, body, control, inner);
            if next_head == head && next_inner == inner {
                break;
            }
            (head, inner) = (next_head, next_inner);
        }
        self.report = report;
        self.set_state(head);
        let (exit, _) = self.iterate(cond, body, control, inner);
        self.set_state(exit);
    }

    /// One walk of a loop from the state at its head: the state joined with the head's,
    /// and the level the next iteration runs at.
    fn iterate(
        &mut self,
        cond: Option<&Expr>,
        body: &Block,
        control: Level,
        inner: Level,
    ) -> (State, Level) {
        let head = self.state();
        let mut inner = inner;
        if let Some(c) = cond {
            inner = inner.max(self.expr(c, inner));
        }
        self.loop_exits.push(inner);
        self.block(body, inner);
        let exit = self.loop_exits.pop().unwrap_or(inner);
        (
            Self::join(&head, &self.state()),
            inner.max(exit).max(control),
        )
    }

    /// `thread_idx_x()`, or it plus a value the block agrees on (`block_idx_x() *
    /// block_dim_x() + thread_idx_x()`), through casts and locals holding such values.
    fn is_thread_index(&self, e: &Expr) -> bool {
        match &e.kind {
            ExprKind::Cast(x) => self.is_thread_index(x),
            ExprKind::Intrinsic(Intrinsic::ThreadIdx(Dim::X)) => true,
            ExprKind::Local(id) => self.thread_index[*id],
            ExprKind::Binary(BinaryOp::Add, a, b) => {
                (self.is_thread_index(a) && self.level_of(b) == Level::Block)
                    || (self.is_thread_index(b) && self.level_of(a) == Level::Block)
            }
            _ => false,
        }
    }

    /// `e`'s level from the locals' current levels (no side effects).
    fn level_of(&self, e: &Expr) -> Level {
        let mut level = Level::Block;
        e.walk(&mut |x| {
            level = level.max(match &x.kind {
                ExprKind::Local(id) => self.locals[*id],
                ExprKind::Intrinsic(op) => intrinsic_result(op).unwrap_or(Level::Block),
                ExprKind::Call { func, .. } => self.results[*func],
                _ => Level::Block,
            })
        });
        level
    }
}

/// `x / warp_size()`, `x / N` or `x >> s` with `N`, `2^s` a multiple of 64: groups of
/// whole warps on every target (32 lanes on NVIDIA and the CPU, 64 on AMD).
fn divides_into_warps(op: BinaryOp, divisor: &Expr) -> bool {
    let literal = |e: &Expr| match &e.kind {
        ExprKind::Int(v) => Some(*v),
        ExprKind::Cast(x) => match &x.kind {
            ExprKind::Int(v) => Some(*v),
            _ => None,
        },
        _ => None,
    };
    match op {
        BinaryOp::Div => {
            matches!(divisor.kind, ExprKind::Intrinsic(Intrinsic::WarpSize))
                || literal(divisor).is_some_and(|n| n > 0 && n % 64 == 0)
        }
        BinaryOp::Shr => literal(divisor).is_some_and(|s| (6..64).contains(&s)),
        _ => false,
    }
}
