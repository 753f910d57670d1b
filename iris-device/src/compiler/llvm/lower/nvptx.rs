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

    /// `bar.sync 0`: `llvm.nvvm.barrier.cta.sync.aligned.all` from LLVM 22 on, the older
    /// `llvm.nvvm.barrier0` before (LLVM 19 takes the newer name for an external function
    /// and emits a call to it).
    pub fn ptx_barrier(&mut self) {
        if nvptx_before_llvm22() {
            let name = "llvm.nvvm.barrier0";
            self.m.declare(name, "void", "");
            self.inst(&format!("call void @{name}()"));
            return;
        }
        let name = "llvm.nvvm.barrier.cta.sync.aligned.all";
        self.m.declare(name, "void", "i32");
        self.inst(&format!("call void @{name}(i32 0)"));
    }

    /// Generic pointer `p` as a block-shared one (`ptr addrspace(3)`): an `addrspacecast`,
    /// or `cvta.to.shared` before LLVM 22 on NVIDIA (see [`nvptx_before_llvm22`]).
    pub fn shared_space_pointer(&mut self, p: &str) -> String {
        if self.arch().kind() == crate::abi::TargetKind::Nvptx && nvptx_before_llvm22() {
            let a = self.def(&format!(
                "call i64 asm \"cvta.to.shared.u64 $0, $1;\", \"=l,l\"(ptr {p})"
            ));
            return self.def(&format!("inttoptr i64 {a} to ptr addrspace(3)"));
        }
        self.def(&format!("addrspacecast ptr {p} to ptr addrspace(3)"))
    }

    /// `fence.sc.<scope>` (`SeqCst`) or `fence.acq_rel.<scope>` (any other ordering) as
    /// inline PTX: before LLVM 22, NVPTX cannot select LLVM's `fence` (see
    /// [`nvptx_before_llvm22`]).
    pub fn ptx_fence(&mut self, order: MemOrder, scope: MemScope) {
        let sc = ptx_scope(scope);
        let sem = if order == MemOrder::SeqCst {
            "sc"
        } else {
            "acq_rel"
        };
        self.inst(&format!(
            "call void asm sideeffect \"fence.{sem}.{sc};\", \"~{{memory}}\"()"
        ));
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
        let sc = ptx_scope(scope);
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

/// Whether the NVPTX backend is older than LLVM 22's, which the lowering otherwise relies on
/// (measured with LLVM 19; 20 and 21 take the same path, untested):
/// - atomic loads and stores with an ordering, and fences, are a relaxed LLVM atomic with
///   inline PTX fences (`fence.acq_rel` / `fence.sc`) around it: LLVM 19 cannot select
///   `load atomic .. acquire`, `store atomic .. release` or `fence` ("Cannot select"). The
///   mapping is the PTX memory model's: a release is a fence then a relaxed store, an
///   acquire a relaxed load then a fence. LLVM 22 emits `st.release` / `ld.acquire`.
/// - the block barrier is `llvm.nvvm.barrier0`;
/// - a generic pointer becomes a shared one through `cvta.to.shared` (inline PTX), not an
///   `addrspacecast`: LLVM 19's address-space inference turns the cast on a branch it
///   cannot prove dead (a shared-memory test on a global pointer) into a global-to-shared
///   cast, which its instruction selection rejects by aborting.
pub(super) fn nvptx_before_llvm22() -> bool {
    crate::compiler::llvm::LLVM_MAJOR < 22
}

/// PTX's name of a scope.
fn ptx_scope(scope: MemScope) -> &'static str {
    match scope {
        MemScope::Block => "cta",
        MemScope::Device => "gpu",
        MemScope::System => "sys",
    }
}

fn signed_ty(s: Scalar, bits: u32) -> String {
    format!("{}{bits}", if s.is_signed() { "s" } else { "u" })
}
