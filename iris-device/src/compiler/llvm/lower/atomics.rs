//! Atomics on a peer's copy and fences, with explicit orderings and scopes.
//!
//! Read-modify-writes and compare-and-swap are LLVM `atomicrmw`/`cmpxchg` on AMD and the
//! CPU, and inline PTX on NVIDIA (LLVM 22 drops their ordering and scope there). Atomic
//! loads and stores are LLVM atomics on every target.

use super::super::super::kernel_ir::Intrinsic;
use super::super::super::kernel_ir::{Expr, MemOrder, MemScope, RmwOp, Scalar, Type};
use super::builder::FnBuilder;
use super::function::sym_elem;
use super::intrinsics::not_in_family;
use super::nvptx::nvptx_before_llvm22;
use super::types;
use crate::abi::TargetKind;

/// LLVM's name of an ordering.
pub(super) fn ordering(order: MemOrder) -> &'static str {
    match order {
        MemOrder::Relaxed => "monotonic",
        MemOrder::Acquire => "acquire",
        MemOrder::Release => "release",
        MemOrder::AcqRel => "acq_rel",
        MemOrder::SeqCst => "seq_cst",
    }
}

/// The failure ordering of a compare-and-swap: the strongest load ordering `order` allows.
fn failure_ordering(order: MemOrder) -> &'static str {
    match order {
        MemOrder::Relaxed | MemOrder::Release => "monotonic",
        MemOrder::Acquire | MemOrder::AcqRel => "acquire",
        MemOrder::SeqCst => "seq_cst",
    }
}

impl FnBuilder<'_> {
    /// `atomic_<op>`, `atomic_cas`, `atomic_load`, `atomic_store`.
    pub(super) fn lower_atomics(&mut self, op: &Intrinsic) -> Result<String, String> {
        match op {
            Intrinsic::AtomicRmw {
                op,
                order,
                scope,
                sym,
                value,
                peer,
            } => self.atomic_rmw(*op, *order, *scope, sym, value, peer),
            Intrinsic::AtomicCas {
                order,
                scope,
                sym,
                current,
                new,
                peer,
            } => self.atomic_cas(*order, *scope, sym, current, new, peer),
            Intrinsic::AtomicLoad {
                order,
                scope,
                sym,
                peer,
            } => self.atomic_load(*order, *scope, sym, peer),
            Intrinsic::AtomicStore {
                order,
                scope,
                sym,
                value,
                peer,
            } => self.atomic_store(*order, *scope, sym, value, peer),
            other => Err(not_in_family(other)),
        }
    }

    /// `atomic_<op>(sym, value, peer, order, scope)` -> old value.
    pub fn atomic_rmw(
        &mut self,
        op: RmwOp,
        order: MemOrder,
        scope: MemScope,
        sym: &Expr,
        value: &Expr,
        peer: &Expr,
    ) -> Result<String, String> {
        let elem = sym_elem(&sym.ty)?;
        let s = self.expr(sym)?;
        let v = self.expr(value)?;
        let p = self.expr(peer)?;
        let addr = self.translate(&s, &p)?;
        let sc = elem
            .as_scalar()
            .ok_or_else(|| format!("atomic operation on `{elem}`"))?;
        if self.arch().kind() == TargetKind::Nvptx {
            return self.ptx_rmw(op, order, scope, &addr, &v, sc);
        }
        let name = rmw_name(op, sc)?;
        let t = self.reg_ty(&elem)?;
        let g = self.arch().gptr();
        let ss = self.arch().syncscope(scope);
        let align = types::align_of(&elem)?;
        Ok(self.def(&format!(
            "atomicrmw {name} {g} {addr}, {t} {v}{ss} {}, align {align}",
            ordering(order)
        )))
    }

    /// `atomic_cas(sym, current, new, peer, order, scope)` -> old value.
    pub fn atomic_cas(
        &mut self,
        order: MemOrder,
        scope: MemScope,
        sym: &Expr,
        current: &Expr,
        new: &Expr,
        peer: &Expr,
    ) -> Result<String, String> {
        let elem = sym_elem(&sym.ty)?;
        let s = self.expr(sym)?;
        let c = self.expr(current)?;
        let n = self.expr(new)?;
        let p = self.expr(peer)?;
        let addr = self.translate(&s, &p)?;
        let sc = match elem.as_scalar() {
            Some(sc) if sc.is_int() => sc,
            _ => return Err(format!("`atomic_cas` on `{elem}`: integers only")),
        };
        if self.arch().kind() == TargetKind::Nvptx {
            return self.ptx_cas(order, scope, &addr, &c, &n, sc);
        }
        let t = types::scalar_ty(sc);
        let g = self.arch().gptr();
        let ss = self.arch().syncscope(scope);
        let pair = self.def(&format!(
            "cmpxchg {g} {addr}, {t} {c}, {t} {n}{ss} {} {}, align {}",
            ordering(order),
            failure_ordering(order),
            sc.size()
        ));
        Ok(self.def(&format!("extractvalue {{ {t}, i1 }} {pair}, 0")))
    }

    /// `atomic_load(sym, peer, order, scope)`.
    pub fn atomic_load(
        &mut self,
        order: MemOrder,
        scope: MemScope,
        sym: &Expr,
        peer: &Expr,
    ) -> Result<String, String> {
        if matches!(order, MemOrder::Release | MemOrder::AcqRel) {
            return Err(format!("`atomic_load` cannot have ordering {order:?}"));
        }
        let elem = atomic_elem(&sym.ty)?;
        let s = self.expr(sym)?;
        let p = self.expr(peer)?;
        let addr = self.translate(&s, &p)?;
        let mt = self.mem_ty(&elem)?;
        let g = self.arch().gptr();
        let ss = self.arch().syncscope(scope);
        let align = types::align_of(&elem)?;
        if self.fenced_atomics() && order != MemOrder::Relaxed {
            if order == MemOrder::SeqCst {
                self.ptx_fence(order, scope);
            }
            let v = self.def(&format!(
                "load atomic {mt}, {g} {addr}{ss} monotonic, align {align}"
            ));
            self.ptx_fence(order, scope);
            return Ok(self.mem_to_reg(&v, &elem));
        }
        let v = self.def(&format!(
            "load atomic {mt}, {g} {addr}{ss} {}, align {align}",
            ordering(order)
        ));
        Ok(self.mem_to_reg(&v, &elem))
    }

    /// `atomic_store(sym, value, peer, order, scope)`.
    pub fn atomic_store(
        &mut self,
        order: MemOrder,
        scope: MemScope,
        sym: &Expr,
        value: &Expr,
        peer: &Expr,
    ) -> Result<String, String> {
        if matches!(order, MemOrder::Acquire | MemOrder::AcqRel) {
            return Err(format!("`atomic_store` cannot have ordering {order:?}"));
        }
        let elem = atomic_elem(&sym.ty)?;
        let s = self.expr(sym)?;
        let v = self.expr(value)?;
        let p = self.expr(peer)?;
        let addr = self.translate(&s, &p)?;
        let mt = self.mem_ty(&elem)?;
        let g = self.arch().gptr();
        let ss = self.arch().syncscope(scope);
        let align = types::align_of(&elem)?;
        let v = self.reg_to_mem(&v, &elem);
        if self.fenced_atomics() && order != MemOrder::Relaxed {
            self.ptx_fence(order, scope);
            self.inst(&format!(
                "store atomic {mt} {v}, {g} {addr}{ss} monotonic, align {align}"
            ));
            if order == MemOrder::SeqCst {
                self.ptx_fence(order, scope);
            }
            return Ok(String::new());
        }
        self.inst(&format!(
            "store atomic {mt} {v}, {g} {addr}{ss} {}, align {align}",
            ordering(order)
        ));
        Ok(String::new())
    }

    /// `fence(order, scope)`; a relaxed fence orders nothing and emits nothing.
    pub fn fence(&mut self, order: MemOrder, scope: MemScope) -> String {
        if order != MemOrder::Relaxed && self.fenced_atomics() {
            self.ptx_fence(order, scope);
        } else if order != MemOrder::Relaxed {
            let ss = self.arch().syncscope(scope);
            self.inst(&format!("fence{ss} {}", ordering(order)));
        }
        String::new()
    }
}

impl FnBuilder<'_> {
    /// Whether this target's ordered atomics are relaxed ones between inline PTX fences
    /// (NVIDIA before LLVM 22: [`nvptx_before_llvm22`]).
    fn fenced_atomics(&self) -> bool {
        self.arch().kind() == TargetKind::Nvptx && nvptx_before_llvm22()
    }
}

/// The element of an atomically accessed `Symmetric<T>`: a scalar.
fn atomic_elem(ty: &Type) -> Result<Type, String> {
    let elem = sym_elem(ty)?;
    match elem {
        Type::Scalar(_) => Ok(elem),
        other => Err(format!("atomic access to `{other}`: scalars only")),
    }
}

/// The `atomicrmw` operation for `op` on `s`.
fn rmw_name(op: RmwOp, s: Scalar) -> Result<&'static str, String> {
    let float = s.is_float();
    Ok(match (op, float) {
        (RmwOp::Add, true) => "fadd",
        (RmwOp::Sub, true) => "fsub",
        (RmwOp::Xchg, _) => "xchg",
        (RmwOp::Add, false) => "add",
        (RmwOp::Sub, false) => "sub",
        (RmwOp::And, false) => "and",
        (RmwOp::Or, false) => "or",
        (RmwOp::Xor, false) => "xor",
        (RmwOp::Min, false) if s.is_signed() => "min",
        (RmwOp::Min, false) => "umin",
        (RmwOp::Max, false) if s.is_signed() => "max",
        (RmwOp::Max, false) => "umax",
        _ => return Err(format!("atomic {op:?} is not defined on `{}`", s.name())),
    })
}
