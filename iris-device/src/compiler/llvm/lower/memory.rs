//! Loads, stores, pointer arithmetic, and symmetric translation.
//!
//! Translation of a `Symmetric<T>` `{ptr, base, table}` to `peer`'s copy is
//! `table[peer] + (ptr - base)`: the table entry is read as a global pointer with 8-byte
//! alignment and `!invariant.load` (LLVM hoists it out of loops), and the offset is applied
//! with `getelementptr i8` on that pointer, so the result stays a global pointer and the
//! access keeps the element's alignment (16-byte vector accesses stay single vector
//! instructions).

use super::super::super::kernel_ir::Intrinsic;
use super::super::super::kernel_ir::{Expr, Type};
use super::builder::FnBuilder;
use super::function::{pointee, sym_elem};
use super::intrinsics::not_in_family;
use super::module::INVARIANT;
use super::types;

impl FnBuilder<'_> {
    /// `load`, `store`, `get`, `put`, `copy`.
    pub(super) fn lower_memory(&mut self, op: &Intrinsic) -> Result<String, String> {
        match op {
            Intrinsic::RemoteLoad { sym, peer } => self.remote_load(sym, peer),
            Intrinsic::RemoteStore { sym, value, peer } => self.remote_store(sym, value, peer),
            Intrinsic::Get { src, dst, peer } => self.get(src, dst, peer),
            Intrinsic::Put { src, dst, peer } => self.put(src, dst, peer),
            Intrinsic::Copy {
                src,
                dst,
                from_peer,
                to_peer,
            } => self.copy(src, dst, from_peer, to_peer),
            other => Err(not_in_family(other)),
        }
    }

    /// Loads a `ty` through `ptr` (of LLVM pointer type `pty`).
    pub fn load(&mut self, ptr: &str, pty: &str, ty: &Type) -> Result<String, String> {
        if let Some((vt, et, len)) = self.array_vector(ty)? {
            let align = types::align_of(ty)?;
            let v = self.def(&format!("load {vt}, {pty} {ptr}, align {align}"));
            let at = self.reg_ty(ty)?;
            let mut acc = "poison".to_string();
            for i in 0..len {
                let e = self.def(&format!("extractelement {vt} {v}, i32 {i}"));
                acc = self.def(&format!("insertvalue {at} {acc}, {et} {e}, {i}"));
            }
            return Ok(acc);
        }
        let mt = self.mem_ty(ty)?;
        let align = types::align_of(ty)?;
        let v = self.def(&format!("load {mt}, {pty} {ptr}, align {align}"));
        Ok(self.mem_to_reg(&v, ty))
    }

    /// Stores `value` (a register value of `ty`) through `ptr`.
    pub fn store(&mut self, ptr: &str, pty: &str, ty: &Type, value: &str) -> Result<(), String> {
        if let Some((vt, et, len)) = self.array_vector(ty)? {
            let align = types::align_of(ty)?;
            let at = self.reg_ty(ty)?;
            let mut acc = "poison".to_string();
            for i in 0..len {
                let e = self.def(&format!("extractvalue {at} {value}, {i}"));
                acc = self.def(&format!("insertelement {vt} {acc}, {et} {e}, i32 {i}"));
            }
            self.inst(&format!("store {vt} {acc}, {pty} {ptr}, align {align}"));
            return Ok(());
        }
        let mt = self.mem_ty(ty)?;
        let align = types::align_of(ty)?;
        let v = self.reg_to_mem(value, ty);
        self.inst(&format!("store {mt} {v}, {pty} {ptr}, align {align}"));
        Ok(())
    }

    /// For an array of numbers: the vector type it moves through memory as, the element
    /// type, and the length (one access for the whole array).
    fn array_vector(&self, ty: &Type) -> Result<Option<(String, String, u64)>, String> {
        match ty {
            Type::Array { elem, len } => match **elem {
                Type::Scalar(s) if s != crate::compiler::kernel_ir::Scalar::Bool => {
                    let et = types::scalar_ty(s).to_string();
                    Ok(Some((format!("<{len} x {et}>"), et, *len)))
                }
                _ => Ok(None),
            },
            _ => Ok(None),
        }
    }

    /// A value read from memory, as a register value (`bool`: byte != 0).
    pub fn mem_to_reg(&mut self, v: &str, ty: &Type) -> String {
        if is_bool(ty) {
            self.def(&format!("icmp ne i8 {v}, 0"))
        } else {
            v.to_string()
        }
    }

    /// A register value, as it is written to memory (`bool`: one byte, 0 or 1).
    pub fn reg_to_mem(&mut self, v: &str, ty: &Type) -> String {
        if is_bool(ty) {
            self.def(&format!("zext i1 {v} to i8"))
        } else {
            v.to_string()
        }
    }

    /// `ptr.add(count)`: `getelementptr T` by an `i64` element count.
    pub fn ptr_offset(&mut self, p: &Expr, n: &Expr) -> Result<String, String> {
        let elem = pointee(&p.ty)?;
        let pv = self.expr(p)?;
        let nv = self.expr(n)?;
        let count = self.index64(&nv, &n.ty)?;
        let et = self.mem_ty(&elem)?;
        Ok(self.def(&format!("getelementptr {et}, ptr {pv}, i64 {count}")))
    }

    /// `sym.add(count)`: the same on the symmetric pointer, keeping base and table.
    pub fn sym_offset(&mut self, s: &Expr, n: &Expr) -> Result<String, String> {
        let elem = sym_elem(&s.ty)?;
        let sv = self.expr(s)?;
        let nv = self.expr(n)?;
        let count = self.index64(&nv, &n.ty)?;
        let st = types::sym_ty(self.arch());
        let g = self.arch().gptr();
        let et = self.mem_ty(&elem)?;
        let p = self.def(&format!("extractvalue {st} {sv}, 0"));
        let q = self.def(&format!("getelementptr {et}, {g} {p}, i64 {count}"));
        Ok(self.def(&format!("insertvalue {st} {sv}, {g} {q}, 0")))
    }

    /// `sym.local()`: the local pointer, as a generic pointer.
    pub fn sym_local(&mut self, s: &Expr) -> Result<String, String> {
        let sv = self.expr(s)?;
        let st = types::sym_ty(self.arch());
        let g = self.arch().gptr();
        let p = self.def(&format!("extractvalue {st} {sv}, 0"));
        Ok(self.global_to_flat(&p, g))
    }

    /// `sym.peer_ptr(peer)`: the peer's copy, as a generic pointer (translated as
    /// `load` translates, peer checks included).
    pub fn sym_peer_ptr(&mut self, sym: &Expr, peer: &Expr) -> Result<String, String> {
        let (addr, _) = self.translated(sym, peer)?;
        let g = self.arch().gptr();
        Ok(self.global_to_flat(&addr, g))
    }

    /// A global pointer as a generic one (a no-op on the CPU).
    pub fn global_to_flat(&mut self, p: &str, from: &str) -> String {
        if from == "ptr" {
            p.to_string()
        } else {
            self.def(&format!("addrspacecast {from} {p} to ptr"))
        }
    }

    /// `peer`'s address of the symmetric pointer `sym` (a global pointer). In a unit built
    /// with peer checks, a peer outside the world is recorded and the address is the
    /// table's sink instead (see [`super::peer_check`]).
    pub fn translate(&mut self, sym: &str, peer: &str) -> Result<String, String> {
        let st = types::sym_ty(self.arch());
        let g = self.arch().gptr();
        let p = self.def(&format!("extractvalue {st} {sym}, 0"));
        let base = self.def(&format!("extractvalue {st} {sym}, 1"));
        let table = self.def(&format!("extractvalue {st} {sym}, 2"));
        let idx = self.def(&format!("zext i32 {peer} to i64"));
        let check = if self.m.peer_checks {
            Some(self.check_peer(&table, &idx)?)
        } else {
            None
        };
        let index = check.as_ref().map_or(idx.as_str(), |c| c.index.as_str());
        let entry = self.def(&format!("getelementptr i64, {g} {table}, i64 {index}"));
        let to_base = self.def(&format!(
            "load {g}, {g} {entry}, align 8, !invariant.load {INVARIANT}"
        ));
        let addr = self.def(&format!("ptrtoint {g} {p} to i64"));
        let off = self.def(&format!("sub i64 {addr}, {base}"));
        let translated = self.def(&format!("getelementptr i8, {g} {to_base}, i64 {off}"));
        Ok(match check {
            Some(check) => self.guard_address(&check, &table, &translated),
            None => translated,
        })
    }

    /// Lowers a symmetric pointer and a peer, and translates.
    fn translated(&mut self, sym: &Expr, peer: &Expr) -> Result<(String, Type), String> {
        let elem = sym_elem(&sym.ty)?;
        let s = self.expr(sym)?;
        let p = self.expr(peer)?;
        Ok((self.translate(&s, &p)?, elem))
    }

    /// `load(sym, peer)`.
    pub fn remote_load(&mut self, sym: &Expr, peer: &Expr) -> Result<String, String> {
        let (addr, elem) = self.translated(sym, peer)?;
        let g = self.arch().gptr();
        self.load(&addr, g, &elem)
    }

    /// `store(sym, value, peer)`.
    pub fn remote_store(
        &mut self,
        sym: &Expr,
        value: &Expr,
        peer: &Expr,
    ) -> Result<String, String> {
        let elem = sym_elem(&sym.ty)?;
        let s = self.expr(sym)?;
        let v = self.expr(value)?;
        let p = self.expr(peer)?;
        let addr = self.translate(&s, &p)?;
        let g = self.arch().gptr();
        self.store(&addr, g, &elem, &v)?;
        Ok(String::new())
    }

    /// `get(src, dst, peer)`: peer's `*src` to the local `*dst`.
    pub fn get(&mut self, src: &Expr, dst: &Expr, peer: &Expr) -> Result<String, String> {
        let elem = sym_elem(&src.ty)?;
        let s = self.expr(src)?;
        let d = self.expr(dst)?;
        let p = self.expr(peer)?;
        let addr = self.translate(&s, &p)?;
        let g = self.arch().gptr();
        let v = self.load(&addr, g, &elem)?;
        self.store(&d, "ptr", &elem, &v)?;
        Ok(String::new())
    }

    /// `put(src, dst, peer)`: the local `*src` to peer's `*dst`.
    pub fn put(&mut self, src: &Expr, dst: &Expr, peer: &Expr) -> Result<String, String> {
        let elem = sym_elem(&dst.ty)?;
        let s = self.expr(src)?;
        let d = self.expr(dst)?;
        let p = self.expr(peer)?;
        let v = self.load(&s, "ptr", &elem)?;
        let addr = self.translate(&d, &p)?;
        let g = self.arch().gptr();
        self.store(&addr, g, &elem, &v)?;
        Ok(String::new())
    }

    /// `copy(src, dst, from_peer, to_peer)`: each side through its own table.
    pub fn copy(
        &mut self,
        src: &Expr,
        dst: &Expr,
        from: &Expr,
        to: &Expr,
    ) -> Result<String, String> {
        let elem = sym_elem(&src.ty)?;
        let s = self.expr(src)?;
        let d = self.expr(dst)?;
        let fp = self.expr(from)?;
        let tp = self.expr(to)?;
        let g = self.arch().gptr();
        let from_addr = self.translate(&s, &fp)?;
        let v = self.load(&from_addr, g, &elem)?;
        let to_addr = self.translate(&d, &tp)?;
        self.store(&to_addr, g, &elem, &v)?;
        Ok(String::new())
    }

    /// An integer operand as an `i64` index (sign-extended when signed).
    pub fn index64(&mut self, v: &str, ty: &Type) -> Result<String, String> {
        match ty.as_scalar() {
            Some(s) if s.is_int() => self.scalar_cast(
                v,
                s,
                if s.is_signed() {
                    super::super::super::kernel_ir::Scalar::I64
                } else {
                    super::super::super::kernel_ir::Scalar::U64
                },
            ),
            _ => Err(format!("a pointer offset must be an integer, found `{ty}`")),
        }
    }
}

fn is_bool(ty: &Type) -> bool {
    matches!(ty, Type::Scalar(crate::compiler::kernel_ir::Scalar::Bool))
}
