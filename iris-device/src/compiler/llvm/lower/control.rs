//! Control flow: `if`/`else` with values, `while`, `loop`, `for` over ranges (the bound
//! evaluated once; an inclusive range stops at its end without overflowing),
//! `break`/`continue`/`return`.

use super::super::super::kernel_ir::{Block, Expr, LocalId};
use super::builder::{no_value, FnBuilder, LoopTargets};
use super::function::emit_return;
use super::types;

impl FnBuilder<'_> {
    /// `if cond { .. } else { .. }`, with a `phi` when it has a value.
    pub fn if_expr(
        &mut self,
        e: &Expr,
        cond: &Expr,
        then_block: &Block,
        else_block: Option<&Block>,
    ) -> Result<String, String> {
        let c = self.expr(cond)?;
        let then_l = self.label("then");
        let end_l = self.label("endif");
        let else_l = match else_block {
            Some(_) => self.label("else"),
            None => end_l.clone(),
        };
        self.cond_br(&c, &then_l, &else_l);
        let mut incoming = Vec::new();
        self.start_block(&then_l);
        let tv = self.block(then_block)?;
        if !self.is_terminated() {
            incoming.push((tv, self.current_block().to_string()));
            self.jump(&end_l);
        }
        if let Some(else_block) = else_block {
            self.start_block(&else_l);
            let ev = self.block(else_block)?;
            if !self.is_terminated() {
                incoming.push((ev, self.current_block().to_string()));
                self.jump(&end_l);
            }
        }
        self.start_block(&end_l);
        if !types::has_value(&e.ty) || incoming.is_empty() || else_block.is_none() {
            return Ok(no_value(&e.ty));
        }
        let ty = self.reg_ty(&e.ty)?;
        let arms: Vec<String> = incoming
            .iter()
            .map(|(v, l)| {
                let v = if v.is_empty() { "poison" } else { v.as_str() };
                format!("[ {v}, %{l} ]")
            })
            .collect();
        Ok(self.def(&format!("phi {ty} {}", arms.join(", "))))
    }

    /// `while cond { body }`.
    pub fn while_expr(&mut self, cond: &Expr, body: &Block) -> Result<String, String> {
        let cond_l = self.label("while.cond");
        let body_l = self.label("while.body");
        let exit_l = self.label("while.end");
        self.start_block(&cond_l);
        let c = self.expr(cond)?;
        self.cond_br(&c, &body_l, &exit_l);
        self.start_block(&body_l);
        self.loop_body(body, &cond_l, &exit_l)?;
        self.jump(&cond_l);
        self.start_block(&exit_l);
        Ok(String::new())
    }

    /// `loop { body }`.
    pub fn loop_expr(&mut self, e: &Expr, body: &Block) -> Result<String, String> {
        let body_l = self.label("loop.body");
        let exit_l = self.label("loop.end");
        self.start_block(&body_l);
        self.loop_body(body, &body_l, &exit_l)?;
        self.jump(&body_l);
        self.start_block(&exit_l);
        Ok(no_value(&e.ty))
    }

    fn loop_body(&mut self, body: &Block, cont: &str, brk: &str) -> Result<(), String> {
        self.loops.push(LoopTargets {
            cont: cont.to_string(),
            brk: brk.to_string(),
        });
        let r = self.block(body);
        self.loops.pop();
        r.map(|_| ())
    }

    /// `for var in start..end` / `start..=end`, counting up by one. The bound is evaluated
    /// once; an inclusive range stops at `end` without computing `end + 1`.
    pub fn for_range(
        &mut self,
        var: LocalId,
        start: &Expr,
        end: &Expr,
        inclusive: bool,
        body: &Block,
    ) -> Result<String, String> {
        let ty = &self
            .func
            .locals
            .get(var)
            .ok_or("for-loop variable out of range")?
            .ty;
        let s = match ty.as_scalar() {
            Some(s) if s.is_int() => s,
            _ => return Err(format!("`for` over a range of `{ty}` is not supported")),
        };
        let ity = types::scalar_ty(s);
        let unroll = super::arrays::unroll_fully(start, end, inclusive, body);
        let lo = self.expr(start)?;
        let hi = self.expr(end)?;
        let counter = self.alloca("for.counter", ity, s.size());
        let pp = self.arch().private_ptr();
        let align = s.size();
        self.inst(&format!("store {ity} {lo}, {pp} {counter}, align {align}"));
        let (lt, le) = if s.is_signed() {
            ("slt", "sle")
        } else {
            ("ult", "ule")
        };
        let body_l = self.label("for.body");
        let step_l = self.label("for.step");
        let exit_l = self.label("for.end");
        let load_counter = format!("load {ity}, {pp} {counter}, align {align}");
        if inclusive {
            let c = self.def(&format!("icmp {le} {ity} {lo}, {hi}"));
            self.cond_br(&c, &body_l, &exit_l);
            self.start_block(&body_l);
            let iv = self.def(&load_counter);
            self.store_local(var, &iv)?;
            self.loop_body(body, &step_l, &exit_l)?;
            self.start_block(&step_l);
            let iv = self.def(&load_counter);
            let done = self.def(&format!("icmp eq {ity} {iv}, {hi}"));
            let inc_l = self.label("for.inc");
            self.cond_br(&done, &exit_l, &inc_l);
            self.start_block(&inc_l);
            let next = self.def(&format!("add {ity} {iv}, 1"));
            self.inst(&format!(
                "store {ity} {next}, {pp} {counter}, align {align}"
            ));
            self.back_edge(&body_l, unroll);
        } else {
            let cond_l = self.label("for.cond");
            self.start_block(&cond_l);
            let iv = self.def(&load_counter);
            let c = self.def(&format!("icmp {lt} {ity} {iv}, {hi}"));
            self.cond_br(&c, &body_l, &exit_l);
            self.start_block(&body_l);
            self.store_local(var, &iv)?;
            self.loop_body(body, &step_l, &exit_l)?;
            self.start_block(&step_l);
            let iv = self.def(&load_counter);
            let next = self.def(&format!("add {ity} {iv}, 1"));
            self.inst(&format!(
                "store {ity} {next}, {pp} {counter}, align {align}"
            ));
            self.back_edge(&cond_l, unroll);
        }
        self.start_block(&exit_l);
        Ok(String::new())
    }

    /// The jump back to a loop's head, carrying full-unroll metadata when asked.
    fn back_edge(&mut self, head: &str, unroll: bool) {
        if unroll && !self.is_terminated() {
            let md = self.m.unroll_full_loop();
            self.terminate(&format!("br label %{head}, !llvm.loop {md}"));
        } else {
            self.jump(head);
        }
    }

    /// `break` / `continue`.
    pub fn loop_jump(&mut self, is_break: bool) -> Result<String, String> {
        let target = self
            .loops
            .last()
            .map(|l| {
                if is_break {
                    l.brk.clone()
                } else {
                    l.cont.clone()
                }
            })
            .ok_or_else(|| {
                format!(
                    "`{}` outside a loop in `{}`",
                    if is_break { "break" } else { "continue" },
                    self.func.name
                )
            })?;
        self.jump(&target);
        Ok("poison".to_string())
    }

    /// `return` / `return value`.
    pub fn return_expr(&mut self, value: Option<&Expr>) -> Result<String, String> {
        let func = self.func;
        let ret = self.reg_ty(&func.ret)?;
        let v = match value {
            Some(e) => self.expr(e)?,
            None => String::new(),
        };
        emit_return(self, &ret, &v);
        Ok("poison".to_string())
    }
}
