//! `trace_event(id, value)`: a record in the rank's trace buffer (`crate::abi::trace`).
//!
//! Without tracing built in (`Unit::trace_events`) the call lowers to its operands only,
//! which LLVM drops: the code is the same as without the call. With it, every function
//! of the unit takes the hidden `i64 %trace.ring, i64 %trace.launch`; an event is
//!
//! ```text
//! if ring != 0 {
//!     ring_of_block = block & block_mask
//!     n = atomic_add(count[ring_of_block], 1)          relaxed, system scope
//!     record[ring_of_block][n & event_mask] = { now, value, id | launch << 32,
//!                                               block | thread << 32 }
//! }
//! ```

use super::super::super::kernel_ir::{Dim, Operand};
use super::builder::FnBuilder;
use super::ids::Coord;
use crate::abi::trace::{HEADER_WORDS, RECORD_WORDS};

impl FnBuilder<'_> {
    /// `trace_event(id, value)`.
    pub(super) fn trace_event(&mut self, id: &Operand, value: &Operand) -> Result<String, String> {
        let id = self.expr(id)?;
        let value = self.expr(value)?;
        let Some((ring, launch)) = self.trace.clone() else {
            return Ok(String::new());
        };
        let g = self.arch().gptr();
        let on = self.def(&format!("icmp ne i64 {ring}, 0"));
        let write = self.label("trace.write");
        let done = self.label("trace.done");
        self.cond_br(&on, &write, &done);
        self.start_block(&write);
        let header = self.def(&format!("inttoptr i64 {ring} to {g}"));
        let word = |b: &mut Self, index: &str| -> String {
            b.def(&format!("getelementptr i64, {g} {header}, i64 {index}"))
        };
        let block_mask = self.def(&format!("load i64, {g} {header}, align 8"));
        let at = word(self, "1");
        let event_mask = self.def(&format!("load i64, {g} {at}, align 8"));
        let block = self.linear(Coord::BlockIdx, Coord::GridDim)?;
        let thread = self.linear(Coord::ThreadIdx, Coord::BlockDim)?;
        let block64 = self.def(&format!("zext i32 {block} to i64"));
        let which = self.def(&format!("and i64 {block64}, {block_mask}"));
        let count_word = self.def(&format!("add i64 {which}, {HEADER_WORDS}"));
        let count = word(self, &count_word);
        let n = self.def(&format!(
            "atomicrmw add {g} {count}, i64 1 monotonic, align 8"
        ));
        let index = self.def(&format!("and i64 {n}, {event_mask}"));
        let events = self.def(&format!("add i64 {event_mask}, 1"));
        let rings = self.def(&format!("add i64 {block_mask}, 1"));
        let in_rings = self.def(&format!("mul i64 {which}, {events}"));
        let record = self.def(&format!("add i64 {in_rings}, {index}"));
        let words = self.def(&format!("mul i64 {record}, {RECORD_WORDS}"));
        let first = self.def(&format!("add i64 {rings}, {HEADER_WORDS}"));
        let start = self.def(&format!("add i64 {first}, {words}"));
        let now = self.global_timer_ns()?;
        let id64 = self.def(&format!("zext i32 {id} to i64"));
        let serial = self.def(&format!("shl i64 {launch}, 32"));
        let tag = self.def(&format!("or i64 {id64}, {serial}"));
        let thread64 = self.def(&format!("zext i32 {thread} to i64"));
        let thread_hi = self.def(&format!("shl i64 {thread64}, 32"));
        let place = self.def(&format!("or i64 {block64}, {thread_hi}"));
        for (k, v) in [now, value, tag, place].iter().enumerate() {
            let w = self.def(&format!("add i64 {start}, {k}"));
            let p = word(self, &w);
            self.inst(&format!("store i64 {v}, {g} {p}, align 8"));
        }
        self.jump(&done);
        self.start_block(&done);
        Ok(String::new())
    }

    /// `x + dx * (y + dy * z)` of a coordinate and its extent, an `i32`.
    fn linear(&mut self, coord: Coord, extent: Coord) -> Result<String, String> {
        let x = self.coord(coord, Dim::X)?;
        let y = self.coord(coord, Dim::Y)?;
        let z = self.coord(coord, Dim::Z)?;
        let dx = self.coord(extent, Dim::X)?;
        let dy = self.coord(extent, Dim::Y)?;
        let zy = self.def(&format!("mul i32 {dy}, {z}"));
        let yz = self.def(&format!("add i32 {y}, {zy}"));
        let scaled = self.def(&format!("mul i32 {dx}, {yz}"));
        Ok(self.def(&format!("add i32 {x}, {scaled}")))
    }
}
