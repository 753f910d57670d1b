//! Peer checks: the peer of a symmetric translation compared with the world size, for
//! units built with `peer_checks`.
//!
//! The table's header (`crate::abi::peer_table`) holds the world size at `table[-1]`, the
//! address of the context's error word at `table[-2]` and a 16-byte sink at
//! `table[-4..-3]`. The peer, zero-extended to `i64`, is valid when it is below the world
//! size (so a negative `i32` cast to the `u32` peer fails too). A bad peer swaps its error
//! code into the error word if the word is still 0 (the first error wins, in a branch
//! LLVM is told is unlikely), reads entry 0 instead of entry `peer` (never past the
//! table) and sends the access to the sink (a `select`): nothing outside the table's
//! allocation is touched.

use super::super::super::kernel_ir::{MemOrder, MemScope, Scalar};
use super::builder::FnBuilder;
use super::module::INVARIANT;
use crate::abi::peer_table::{ERROR_FLAG, ERROR_WORD_INDEX, SINK_INDEX, WORLD_SIZE_INDEX};
use crate::abi::TargetKind;

/// The outcome of a peer check.
pub(super) struct PeerCheck {
    /// `i1`: the peer is in range.
    pub ok: String,
    /// The `i64` table index to read: the peer when in range, else 0.
    pub index: String,
}

impl FnBuilder<'_> {
    /// Checks peer index `idx` (an `i64`, the zero-extended `u32` peer) against the world
    /// size in the header of `table` (a global pointer to entry 0), and records a bad peer
    /// in the error word.
    pub(super) fn check_peer(&mut self, table: &str, idx: &str) -> Result<PeerCheck, String> {
        let g = self.arch().gptr();
        let world_at = self.def(&format!(
            "getelementptr i64, {g} {table}, i64 {WORLD_SIZE_INDEX}"
        ));
        let world = self.def(&format!(
            "load i64, {g} {world_at}, align 8, !invariant.load {INVARIANT}"
        ));
        let ok = self.def(&format!("icmp ult i64 {idx}, {world}"));
        let index = self.def(&format!("select i1 {ok}, i64 {idx}, i64 0"));
        self.m.declare("llvm.expect.i1", "i1", "i1, i1");
        let likely = self.def(&format!("call i1 @llvm.expect.i1(i1 {ok}, i1 true)"));
        let bad_l = self.label("peer.bad");
        let cont_l = self.label("peer.ok");
        self.cond_br(&likely, &cont_l, &bad_l);
        self.start_block(&bad_l);
        self.record_bad_peer(table, idx, &world)?;
        self.start_block(&cont_l);
        Ok(PeerCheck { ok, index })
    }

    /// `addr` if the check passed, else the table's sink.
    pub(super) fn guard_address(&mut self, check: &PeerCheck, table: &str, addr: &str) -> String {
        let g = self.arch().gptr();
        let sink_offset = SINK_INDEX * 8;
        let sink = self.def(&format!("getelementptr i8, {g} {table}, i64 {sink_offset}"));
        self.def(&format!("select i1 {}, {g} {addr}, {g} {sink}", check.ok))
    }

    /// Swaps the error code of (`idx`, `world`) into the error word if it is 0.
    fn record_bad_peer(&mut self, table: &str, idx: &str, world: &str) -> Result<(), String> {
        let g = self.arch().gptr();
        let word_at = self.def(&format!(
            "getelementptr i64, {g} {table}, i64 {ERROR_WORD_INDEX}"
        ));
        let word = self.def(&format!(
            "load {g}, {g} {word_at}, align 8, !invariant.load {INVARIANT}"
        ));
        let world30 = self.def(&format!("and i64 {world}, {}", 0x3fff_ffffu64));
        let high = self.def(&format!("shl i64 {world30}, 32"));
        let flagged = self.def(&format!("or i64 {high}, {}", ERROR_FLAG as i64));
        let code = self.def(&format!("or i64 {flagged}, {idx}"));
        if self.arch().kind() == TargetKind::Nvptx {
            // As every compare-and-swap on NVIDIA: inline PTX.
            self.ptx_cas(
                MemOrder::Relaxed,
                MemScope::System,
                &word,
                "0",
                &code,
                Scalar::U64,
            )?;
        } else {
            self.inst(&format!(
                "cmpxchg {g} {word}, i64 0, i64 {code} monotonic monotonic, align 8"
            ));
        }
        Ok(())
    }
}
