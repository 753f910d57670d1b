//! Signals: `world_aborted` and the intrinsics of the signal operations' expansion
//! (`compiler/frontend/signals.rs`): a word of a peer table's header, and relaxed
//! system-scope loads, stores and compare-and-swaps of `u64` words at raw device
//! addresses (the world's abort flag, the context's fault record).
//!
//! The loads are `volatile` as well as atomic: the abort flag is host memory the device
//! reads while the host may write it, and a wait polls it in a loop.

use super::super::super::kernel_ir::{Expr, Intrinsic, MemOrder, MemScope, Scalar};
use super::builder::FnBuilder;
use super::intrinsics::not_in_family;
use super::types;
use crate::abi::peer_table::{ABORT_FLAG_INDEX, ZERO_WORD_INDEX};
use crate::abi::TargetKind;

impl FnBuilder<'_> {
    /// `world_aborted`, `__iris_header`, `__iris_word_load`, `__iris_word_store`,
    /// `__iris_word_cas`.
    pub(super) fn lower_signals(&mut self, op: &Intrinsic) -> Result<String, String> {
        match op {
            Intrinsic::WorldAborted { sym } => {
                let s = self.expr(sym)?;
                let table = self.table_of(&s);
                let flag = self.table_word(&table, ABORT_FLAG_INDEX);
                // A table that names no flag (0) reads its always-zero word instead.
                let g = self.arch().gptr();
                let zero_at = self.def(&format!(
                    "getelementptr i64, {g} {table}, i64 {ZERO_WORD_INDEX}"
                ));
                let zero = self.def(&format!("ptrtoint {g} {zero_at} to i64"));
                let has = self.def(&format!("icmp ne i64 {flag}, 0"));
                let addr = self.def(&format!("select i1 {has}, i64 {flag}, i64 {zero}"));
                let word = self.word_load(&addr)?;
                Ok(self.def(&format!("icmp ne i64 {word}, 0")))
            }
            Intrinsic::HeaderWord { sym, index } => self.header_word(sym, *index),
            Intrinsic::WordLoad { addr } => {
                let a = self.expr(addr)?;
                self.word_load(&a)
            }
            Intrinsic::WordStore { addr, value } => {
                let a = self.expr(addr)?;
                let v = self.expr(value)?;
                let p = self.word_ptr(&a);
                let g = self.arch().gptr();
                let ss = self.arch().syncscope(MemScope::System);
                self.inst(&format!(
                    "store atomic volatile i64 {v}, {g} {p}{ss} monotonic, align 8"
                ));
                Ok(String::new())
            }
            Intrinsic::WordCas { addr, current, new } => {
                let a = self.expr(addr)?;
                let c = self.expr(current)?;
                let n = self.expr(new)?;
                let p = self.word_ptr(&a);
                if self.arch().kind() == TargetKind::Nvptx {
                    return self.ptx_cas(
                        MemOrder::Relaxed,
                        MemScope::System,
                        &p,
                        &c,
                        &n,
                        Scalar::U64,
                    );
                }
                let g = self.arch().gptr();
                let ss = self.arch().syncscope(MemScope::System);
                let pair = self.def(&format!(
                    "cmpxchg volatile {g} {p}, i64 {c}, i64 {n}{ss} monotonic monotonic, align 8"
                ));
                Ok(self.def(&format!("extractvalue {{ i64, i1 }} {pair}, 0")))
            }
            other => Err(not_in_family(other)),
        }
    }

    /// Word `index` of the peer table of the symmetric pointer `sym`.
    fn header_word(&mut self, sym: &Expr, index: i64) -> Result<String, String> {
        let s = self.expr(sym)?;
        let table = self.table_of(&s);
        Ok(self.table_word(&table, index))
    }

    /// The peer table (entry 0, a global pointer) of a lowered symmetric pointer.
    fn table_of(&mut self, sym: &str) -> String {
        let st = types::sym_ty(self.arch());
        self.def(&format!("extractvalue {st} {sym}, 2"))
    }

    /// Word `index` of `table`.
    fn table_word(&mut self, table: &str, index: i64) -> String {
        let g = self.arch().gptr();
        let at = self.def(&format!("getelementptr i64, {g} {table}, i64 {index}"));
        self.def(&format!("load i64, {g} {at}, align 8"))
    }

    /// The device address `addr` (an `i64`) as a global pointer.
    fn word_ptr(&mut self, addr: &str) -> String {
        let g = self.arch().gptr();
        self.def(&format!("inttoptr i64 {addr} to {g}"))
    }

    /// A relaxed, volatile, system-scope load of the word at `addr`.
    fn word_load(&mut self, addr: &str) -> Result<String, String> {
        let p = self.word_ptr(addr);
        let g = self.arch().gptr();
        let ss = self.arch().syncscope(MemScope::System);
        Ok(self.def(&format!(
            "load atomic volatile i64, {g} {p}{ss} monotonic, align 8"
        )))
    }
}
