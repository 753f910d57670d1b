//! The state of building one function's IR: locals in scope, inference, loop depth.

use super::super::kernel_ir::{Expr, ExprKind, Function, Local, LocalId, SharedArray, Type};
use super::super::CompileError;
use super::infer::InferTable;
use super::registry::Registry;
use proc_macro2::Span;
use std::collections::HashMap;

/// A function's signature, known before any body is built so calls resolve.
#[derive(Clone, Debug)]
pub struct Signature {
    /// Name.
    pub name: String,
    /// Kernel or device function.
    pub is_kernel: bool,
    /// Parameter names, types, mutability and spans.
    pub params: Vec<Local>,
    /// Return type.
    pub ret: Type,
    /// Marked `#[inline(always)]`: inlined into every caller.
    pub inline_always: bool,
    /// Name span.
    pub span: Span,
}

/// Builds one function body.
pub struct FnBuilder<'u> {
    /// Every function of the unit, by index (instances of generic device functions are
    /// added as calls ask for them).
    pub unit: &'u Registry,
    /// This function's index.
    pub this: usize,
    /// This function's signature.
    pub sig: Signature,
    /// Locals so far.
    pub locals: Vec<Local>,
    scopes: Vec<HashMap<String, LocalId>>,
    /// Literal inference.
    pub infer: InferTable,
    /// `shared_array` call sites.
    pub shared_arrays: Vec<SharedArray>,
    /// Whether `sync_threads` is called.
    pub uses_block_barrier: bool,
    /// Whether a warp operation is called.
    pub uses_warp: bool,
    /// Whether `wg_mma` is called.
    pub uses_warpgroup_mma: bool,
    /// Whether a signal wait is called.
    pub waits_on_signals: bool,
    /// How deep the module constants being expanded nest.
    pub const_depth: usize,
    /// Nesting depth of loops (for `break`/`continue`).
    pub loop_depth: usize,
    /// The enclosing `for` loops whose ranges are constant (array indices may use
    /// their variables).
    pub static_loops: Vec<super::arrays::StaticLoop>,
}

impl<'u> FnBuilder<'u> {
    /// A builder with the parameters of function `this` in scope.
    pub fn new(unit: &'u Registry, this: usize) -> Self {
        let sig = unit.sig(this);
        let params = sig.params.clone();
        let mut b = FnBuilder {
            unit,
            this,
            sig,
            locals: Vec::new(),
            scopes: vec![HashMap::new()],
            infer: InferTable::default(),
            shared_arrays: Vec::new(),
            uses_block_barrier: false,
            uses_warp: false,
            uses_warpgroup_mma: false,
            waits_on_signals: false,
            const_depth: 0,
            loop_depth: 0,
            static_loops: Vec::new(),
        };
        for p in params {
            b.declare(p);
        }
        b
    }

    /// The function's return type.
    pub fn ret(&self) -> Type {
        self.sig.ret.clone()
    }

    /// Adds a local to the innermost scope (shadowing any of the same name).
    pub fn declare(&mut self, local: Local) -> LocalId {
        let id = self.locals.len();
        if let Some(scope) = self.scopes.last_mut() {
            scope.insert(local.name.clone(), id);
        }
        self.locals.push(local);
        id
    }

    /// Looks a name up, innermost scope first.
    pub fn lookup(&self, name: &str) -> Option<LocalId> {
        self.scopes.iter().rev().find_map(|s| s.get(name).copied())
    }

    /// Opens a block scope.
    pub fn push_scope(&mut self) {
        self.scopes.push(HashMap::new());
    }

    /// Closes a block scope.
    pub fn pop_scope(&mut self) {
        self.scopes.pop();
    }

    /// An expression node.
    pub fn expr(&self, kind: ExprKind, ty: Type, span: Span) -> Expr {
        Expr { kind, ty, span }
    }

    /// Makes `e`'s type `want`, or errors at `e`.
    pub fn expect(&mut self, e: &Expr, want: &Type) -> Result<(), CompileError> {
        self.infer.unify(&e.ty, want, e.span).map(|_| ())
    }

    /// Assembles the function once its body is built.
    pub fn finish(self, body: super::super::kernel_ir::Block) -> Function {
        let sig = &self.sig;
        Function {
            name: sig.name.clone(),
            is_kernel: sig.is_kernel,
            inline_always: sig.inline_always,
            param_count: sig.params.len(),
            ret: sig.ret.clone(),
            locals: self.locals,
            body,
            shared_arrays: self.shared_arrays,
            uses_block_barrier: self.uses_block_barrier,
            uses_warp: self.uses_warp,
            uses_warpgroup_mma: self.uses_warpgroup_mma,
            waits_on_signals: self.waits_on_signals,
            max_threads: None,
            span: sig.span,
            instance_of: None,
        }
    }
}
