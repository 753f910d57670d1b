//! NVIDIA specifics: special registers, the block barrier, and read-modify-write atomics
//! as inline PTX.
//!
//! LLVM 22 lowers `atomicrmw add ... release` at system scope to `atom.global.add.u32`,
//! dropping ordering and scope (measured), so every read-modify-write and compare-and-swap
//! is written as `atom.<sem>.<scope>.global.<op>.<type>` on the global pointer.

use super::super::super::kernel_ir::{Dim, MemOrder, MemScope, RmwOp, Scalar};
use super::builder::FnBuilder;
use super::ids::Coord;
use super::types;

impl FnBuilder<'_> {
    /// A thread or block coordinate from PTX's special registers.
    pub fn ptx_coord(&mut self, coord: Coord, dim: Dim) -> String {
        let reg = match coord {
            Coord::ThreadIdx => "tid",
            Coord::BlockIdx => "ctaid",
            Coord::BlockDim => "ntid",
            Coord::GridDim => "nctaid",
        };
        let d = ["x", "y", "z"][dim.index()];
        let name = format!("llvm.nvvm.read.ptx.sreg.{reg}.{d}");
        self.m.declare(&name, "i32", "");
        self.def(&format!("call i32 @{name}()"))
    }

    /// `bar.sync 0`.
    pub fn ptx_barrier(&mut self) {
        let name = "llvm.nvvm.barrier.cta.sync.aligned.all";
        self.m.declare(name, "void", "i32");
        self.inst(&format!("call void @{name}(i32 0)"));
    }

    /// An atomic read-modify-write as inline PTX; returns the old value.
    pub fn ptx_rmw(
        &mut self,
        op: RmwOp,
        order: MemOrder,
        scope: MemScope,
        addr: &str,
        value: &str,
        s: Scalar,
    ) -> Result<String, String> {
        let t = types::scalar_ty(s);
        let bits = s.size() * 8;
        let unsupported = || format!("atomic {op:?} on `{}` is not supported on NVIDIA", s.name());
        if bits != 32 && bits != 64 {
            return Err(unsupported());
        }
        let (ptx_op, ptx_ty, operand) = match (op, s.is_float()) {
            (RmwOp::Add, true) => ("add", format!("f{bits}"), value.to_string()),
            (RmwOp::Sub, true) => (
                "add",
                format!("f{bits}"),
                self.def(&format!("fneg {t} {value}")),
            ),
            (RmwOp::Add, false) => ("add", format!("u{bits}"), value.to_string()),
            (RmwOp::Sub, false) => (
                "add",
                format!("u{bits}"),
                self.def(&format!("sub {t} 0, {value}")),
            ),
            (RmwOp::And, false) => ("and", format!("b{bits}"), value.to_string()),
            (RmwOp::Or, false) => ("or", format!("b{bits}"), value.to_string()),
            (RmwOp::Xor, false) => ("xor", format!("b{bits}"), value.to_string()),
            (RmwOp::Min, false) => ("min", signed_ty(s, bits), value.to_string()),
            (RmwOp::Max, false) => ("max", signed_ty(s, bits), value.to_string()),
            (RmwOp::Xchg, _) => {
                let it = format!("i{bits}");
                let v = if s.is_float() {
                    self.def(&format!("bitcast {t} {value} to {it}"))
                } else {
                    value.to_string()
                };
                let old = self.ptx_atom(
                    "exch",
                    &format!("b{bits}"),
                    order,
                    scope,
                    addr,
                    &[&v],
                    &it,
                    bits,
                    false,
                );
                return Ok(if s.is_float() {
                    self.def(&format!("bitcast {it} {old} to {t}"))
                } else {
                    old
                });
            }
            _ => return Err(unsupported()),
        };
        Ok(self.ptx_atom(
            ptx_op,
            &ptx_ty,
            order,
            scope,
            addr,
            &[&operand],
            t,
            bits,
            s.is_float(),
        ))
    }

    /// Compare-and-swap as inline PTX; returns the old value.
    pub fn ptx_cas(
        &mut self,
        order: MemOrder,
        scope: MemScope,
        addr: &str,
        current: &str,
        new: &str,
        s: Scalar,
    ) -> Result<String, String> {
        let bits = s.size() * 8;
        if bits != 32 && bits != 64 {
            return Err(format!(
                "`atomic_cas` on `{}` is not supported on NVIDIA",
                s.name()
            ));
        }
        let t = types::scalar_ty(s);
        Ok(self.ptx_atom(
            "cas",
            &format!("b{bits}"),
            order,
            scope,
            addr,
            &[current, new],
            t,
            bits,
            false,
        ))
    }

    /// `atom.<sem>.<scope>.global.<op>.<ty> $0, [$1], $2(, $3);` with a `fence.sc` first
    /// for `SeqCst`.
    #[allow(clippy::too_many_arguments)]
    fn ptx_atom(
        &mut self,
        op: &str,
        ptx_ty: &str,
        order: MemOrder,
        scope: MemScope,
        addr: &str,
        operands: &[&str],
        t: &str,
        bits: u32,
        float: bool,
    ) -> String {
        let sc = match scope {
            MemScope::Block => "cta",
            MemScope::Device => "gpu",
            MemScope::System => "sys",
        };
        let (fence, sem) = match order {
            MemOrder::Relaxed => (String::new(), "relaxed"),
            MemOrder::Acquire => (String::new(), "acquire"),
            MemOrder::Release => (String::new(), "release"),
            MemOrder::AcqRel => (String::new(), "acq_rel"),
            MemOrder::SeqCst => (format!("fence.sc.{sc};\\0A\\09"), "acq_rel"),
        };
        let reg = match (float, bits) {
            (true, 32) => "f",
            (true, _) => "d",
            (false, 32) => "r",
            (false, _) => "l",
        };
        let places: Vec<String> = (0..operands.len()).map(|i| format!("${}", i + 2)).collect();
        let text = format!(
            "{fence}atom.{sem}.{sc}.global.{op}.{ptx_ty} $0, [$1], {};",
            places.join(", ")
        );
        let mut constraints = format!("={reg},l");
        let g = self.arch().gptr();
        let mut args = format!("{g} {addr}");
        for o in operands {
            constraints.push_str(&format!(",{reg}"));
            args.push_str(&format!(", {t} {o}"));
        }
        constraints.push_str(",~{memory}");
        self.def(&format!(
            "call {t} asm sideeffect \"{text}\", \"{constraints}\"({args})"
        ))
    }
}

fn signed_ty(s: Scalar, bits: u32) -> String {
    format!("{}{bits}", if s.is_signed() { "s" } else { "u" })
}
