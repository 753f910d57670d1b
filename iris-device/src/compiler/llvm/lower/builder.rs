//! Writing one function's instructions: temporaries, basic blocks, terminators.
//!
//! After a terminator (`br`, `ret`) the builder is *terminated*; the next instruction opens
//! a fresh block with no predecessors (code after `return` or `break` is unreachable but
//! still well-formed IR). Expressions that produce no value (`!`) give `poison`, which is
//! a constant of every type.

use super::super::super::kernel_ir::{Expr, Function, LocalId, Type, Unit};
use super::arch::Arch;
use super::module::ModuleCtx;
use super::types;
use std::cell::OnceCell;
use std::collections::HashMap;
use std::fmt::Write;

/// Where `break` and `continue` go in the innermost loop.
pub(super) struct LoopTargets {
    /// The `continue` target.
    pub cont: String,
    /// The `break` target.
    pub brk: String,
}

/// A local variable's stack slot.
#[derive(Clone)]
pub(super) struct Slot {
    /// The alloca.
    pub ptr: String,
    /// The register type stored in it.
    pub ty: String,
    /// Its alignment.
    pub align: u32,
}

/// The state of lowering one function.
pub(super) struct FnBuilder<'a> {
    /// The module being built.
    pub m: &'a mut ModuleCtx,
    /// The unit (for calls).
    pub unit: &'a Unit,
    /// The function.
    pub func: &'a Function,
    /// The CPU launch context parameter (`%ctx`), passed to every function on the CPU.
    pub ctx: Option<String>,
    /// The trace's hidden arguments (`%trace.ring`, `%trace.launch`, both `i64`), passed
    /// to every function of a unit that records trace events.
    pub trace: Option<(String, String)>,
    /// Loops enclosing the current point.
    pub loops: Vec<LoopTargets>,
    slots: Vec<Option<Slot>>,
    allocas: String,
    body: String,
    next_tmp: usize,
    next_label: usize,
    cur_label: String,
    terminated: bool,
    /// Where the last `wgmma` ended (its block and the body's length then), while nothing
    /// since can have touched a warpgroup's registers: the next `wgmma` needs no fence.
    wgmma_end: Option<(String, usize)>,
    /// The initializers of the function's immutable `let`s, gathered on first use (the
    /// alignment analysis of `alignment.rs`).
    pub(super) immutable_lets: OnceCell<HashMap<LocalId, Expr>>,
    /// Each shared array's alignment in bytes, computed on first use (the same analysis).
    pub(super) shared_aligns: OnceCell<Vec<u64>>,
}

impl<'a> FnBuilder<'a> {
    /// Starts a function in its `entry` block.
    pub fn new(m: &'a mut ModuleCtx, unit: &'a Unit, func: &'a Function) -> Self {
        let ctx = (!m.arch.is_gpu()).then(|| "%ctx".to_string());
        let trace = m
            .trace
            .then(|| ("%trace.ring".to_string(), "%trace.launch".to_string()));
        FnBuilder {
            m,
            unit,
            func,
            ctx,
            trace,
            loops: Vec::new(),
            slots: Vec::new(),
            allocas: String::new(),
            body: String::new(),
            next_tmp: 0,
            next_label: 0,
            cur_label: "entry".to_string(),
            terminated: false,
            wgmma_end: None,
            immutable_lets: OnceCell::new(),
            shared_aligns: OnceCell::new(),
        }
    }

    /// The target.
    pub fn arch(&self) -> Arch {
        self.m.arch
    }

    /// The register type of `ty` (noting `half`/`bfloat` use).
    pub fn reg_ty(&mut self, ty: &Type) -> Result<String, String> {
        let t = types::reg_ty(ty, self.m.arch)?;
        self.note_half(&t);
        Ok(t)
    }

    /// The memory type of `ty`.
    pub fn mem_ty(&mut self, ty: &Type) -> Result<String, String> {
        let t = types::mem_ty(ty, self.m.arch)?;
        self.note_half(&t);
        Ok(t)
    }

    fn note_half(&mut self, t: &str) {
        if t.contains("half") || t.contains("bfloat") {
            self.m.uses_half = true;
        }
    }

    /// A fresh temporary name.
    pub fn tmp(&mut self) -> String {
        self.next_tmp += 1;
        format!("%t{}", self.next_tmp)
    }

    /// A fresh block label (without `%`).
    pub fn label(&mut self, hint: &str) -> String {
        self.next_label += 1;
        format!("{hint}{}", self.next_label)
    }

    /// The block instructions are being added to.
    pub fn current_block(&self) -> &str {
        &self.cur_label
    }

    /// Whether the current block has ended.
    pub fn is_terminated(&self) -> bool {
        self.terminated
    }

    /// Adds an instruction that defines nothing.
    pub fn inst(&mut self, text: &str) {
        if self.terminated {
            let dead = self.label("dead");
            self.open(&dead);
        }
        let _ = writeln!(self.body, "  {text}");
    }

    /// Adds an instruction defining a fresh temporary: `%t = rhs`. Returns the temporary.
    pub fn def(&mut self, rhs: &str) -> String {
        let t = self.tmp();
        self.inst(&format!("{t} = {rhs}"));
        t
    }

    /// Ends the current block with a terminator.
    pub fn terminate(&mut self, text: &str) {
        self.inst(text);
        self.terminated = true;
    }

    /// Branches to `label` unless the block has already ended.
    pub fn jump(&mut self, label: &str) {
        if !self.terminated {
            self.terminate(&format!("br label %{label}"));
        }
    }

    /// Ends the block with a conditional branch.
    pub fn cond_br(&mut self, cond: &str, then_label: &str, else_label: &str) {
        self.terminate(&format!(
            "br i1 {cond}, label %{then_label}, label %{else_label}"
        ));
    }

    /// Notes that a `wgmma` was just emitted.
    pub fn mark_wgmma_end(&mut self) {
        self.wgmma_end = Some((self.cur_label.clone(), self.body.len()));
    }

    /// Forgets the last `wgmma`: the next one fences.
    pub fn clear_wgmma_end(&mut self) {
        self.wgmma_end = None;
    }

    /// Whether the last instruction with an effect in this block was a `wgmma`: only
    /// computations were emitted since (the next one's operands, local variables'
    /// loads and stores), no call or inline assembly, and no other block was entered. An
    /// accumulator's registers can only be written outside `wgmma` by a call (a function
    /// returning one, `wg_wait`'s assembly), by `wg_zero` (which clears the mark), or on
    /// entering a block (a loop's or a branch's merge).
    pub fn follows_wgmma(&self) -> bool {
        self.wgmma_end.as_ref().is_some_and(|(label, at)| {
            *label == self.cur_label
                && !self.terminated
                && !self.body[*at..]
                    .lines()
                    .any(|l| l.contains("call ") || l.contains("asm "))
        })
    }

    /// Starts block `label`, falling through to it from a block that has not ended.
    pub fn start_block(&mut self, label: &str) {
        self.jump(label);
        self.open(label);
    }

    fn open(&mut self, label: &str) {
        let _ = writeln!(self.body, "{label}:");
        self.cur_label = label.to_string();
        self.terminated = false;
    }

    /// Allocates a stack slot in the entry block.
    pub fn alloca(&mut self, name: &str, ty: &str, align: u32) -> String {
        self.next_tmp += 1;
        let ptr = format!("%{}.{}", types::ident_part(name), self.next_tmp);
        let sfx = self.m.arch.alloca_suffix();
        let _ = writeln!(self.allocas, "  {ptr} = alloca {ty}, align {align}{sfx}");
        ptr
    }

    /// Creates the slots of all locals (those with a value).
    pub fn alloc_locals(&mut self) -> Result<(), String> {
        let func = self.func;
        for local in &func.locals {
            if !types::has_value(&local.ty) {
                self.slots.push(None);
                continue;
            }
            let ty = self.reg_ty(&local.ty)?;
            let align = types::align_of(&local.ty)?;
            let ptr = self.alloca(&local.name, &ty, align);
            self.slots.push(Some(Slot { ptr, ty, align }));
        }
        Ok(())
    }

    /// The slot of a local (`None` for `()`-typed locals).
    pub fn slot(&self, id: LocalId) -> Result<Option<Slot>, String> {
        self.slots
            .get(id)
            .cloned()
            .ok_or_else(|| format!("local #{id} does not exist in `{}`", self.func.name))
    }

    /// Reads a local.
    pub fn load_local(&mut self, id: LocalId) -> Result<String, String> {
        let Some(slot) = self.slot(id)? else {
            return Ok(no_value(&self.func.locals[id].ty));
        };
        let p = self.m.arch.private_ptr();
        Ok(self.def(&format!(
            "load {}, {p} {}, align {}",
            slot.ty, slot.ptr, slot.align
        )))
    }

    /// Writes a local.
    pub fn store_local(&mut self, id: LocalId, value: &str) -> Result<(), String> {
        if let Some(slot) = self.slot(id)? {
            let p = self.m.arch.private_ptr();
            self.inst(&format!(
                "store {} {value}, {p} {}, align {}",
                slot.ty, slot.ptr, slot.align
            ));
        }
        Ok(())
    }

    /// The function's text: `header { entry: allocas body }`.
    pub fn finish(self, header: &str) -> String {
        format!("{header} {{\nentry:\n{}{}}}\n", self.allocas, self.body)
    }
}

/// The operand of an expression of type `ty` that produces no value: nothing for `()`,
/// `poison` for `!` (it is never used at run time).
pub(super) fn no_value(ty: &Type) -> String {
    match ty {
        Type::Unit => String::new(),
        _ => "poison".to_string(),
    }
}
