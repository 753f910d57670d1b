//! `copy_tile(dst, map, col, row, barrier)`: one box of a tile-mapped matrix into shared
//! memory, in the 128-byte swizzle (box row `r` at byte `128 r`, its 16-byte chunk `c` at
//! chunk `c ^ (r % 8)`).
//!
//! - sm_90 and sm_90a: `cp.async.bulk.tensor.2d` with the copy engine's description, the
//!   map's first 128 bytes, counted on the barrier.
//! - Elsewhere the calling thread copies the box from the map's plain description (words
//!   16 to 20: the matrix's address, rows, columns, element bytes, box rows), 16 bytes at
//!   a time, with zeros outside the matrix, as the engine fills them.

use super::super::super::kernel_ir::Expr;
use super::builder::FnBuilder;

impl FnBuilder<'_> {
    /// `copy_tile(dst, map, col, row, barrier)`.
    pub(super) fn copy_tile(
        &mut self,
        dst: &Expr,
        map: &Expr,
        col: &Expr,
        row: &Expr,
        barrier: &Expr,
    ) -> Result<String, String> {
        let d = self.expr(dst)?;
        let m = self.expr(map)?;
        let c = self.expr(col)?;
        let r = self.expr(row)?;
        let b = self.expr(barrier)?;
        if self.has_copy_engine() {
            let to = self.shared_address(&d);
            let bar = self.shared_address(&b);
            let desc = self.def(&format!("ptrtoint ptr {m} to i64"));
            self.ptx(
                "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [$0], [$1, {$2, $3}], [$4];",
                "l,l,r,r,l",
                &[
                    format!("i64 {to}"),
                    format!("i64 {desc}"),
                    format!("i32 {c}"),
                    format!("i32 {r}"),
                    format!("i64 {bar}"),
                ],
            );
        } else {
            self.copy_box_now(&d, &m, &c, &r);
        }
        Ok(String::new())
    }

    /// The box at (`col`, `row`) of the map at `m` into `d`, by this thread, at once.
    fn copy_box_now(&mut self, d: &str, m: &str, col: &str, row: &str) {
        let word = |s: &mut Self, i: u32| -> String {
            let at = s.def(&format!("getelementptr inbounds i64, ptr {m}, i64 {i}"));
            s.def(&format!("load i64, ptr {at}, align 8"))
        };
        let base = word(self, 16);
        let rows = word(self, 17);
        let cols = word(self, 18);
        let elem = word(self, 19);
        let box_rows = word(self, 20);
        let col = self.def(&format!("zext i32 {col} to i64"));
        let row = self.def(&format!("zext i32 {row} to i64"));
        // Elements per 16-byte chunk, and chunks in the box (eight a row).
        let per = self.def(&format!("udiv i64 16, {elem}"));
        let chunks = self.def(&format!("shl i64 {box_rows}, 3"));
        let entry = self.current_block().to_string();
        let (head, body, copy, zero, latch, done) = (
            self.label("tile_chunk"),
            self.label("tile_body"),
            self.label("tile_copy"),
            self.label("tile_zero"),
            self.label("tile_next"),
            self.label("tile_done"),
        );
        self.jump(&head);
        self.start_block(&head);
        let i = self.tmp();
        let next = self.tmp();
        self.inst(&format!(
            "{i} = phi i64 [ 0, %{entry} ], [ {next}, %{latch} ]"
        ));
        let more = self.def(&format!("icmp ult i64 {i}, {chunks}"));
        self.cond_br(&more, &body, &done);
        self.start_block(&body);
        let r = self.def(&format!("lshr i64 {i}, 3"));
        let c = self.def(&format!("and i64 {i}, 7"));
        // Where the chunk lands: byte 128 r + 16 (c ^ (r % 8)).
        let r8 = self.def(&format!("and i64 {r}, 7"));
        let sw = self.def(&format!("xor i64 {c}, {r8}"));
        let sw = self.def(&format!("shl i64 {sw}, 4"));
        let line = self.def(&format!("shl i64 {r}, 7"));
        let off = self.def(&format!("add i64 {line}, {sw}"));
        let to = self.def(&format!("getelementptr inbounds i8, ptr {d}, i64 {off}"));
        // Where it comes from: element (row + r, col + c per), whole inside the matrix.
        let grow = self.def(&format!("add i64 {row}, {r}"));
        let cper = self.def(&format!("mul i64 {c}, {per}"));
        let gcol = self.def(&format!("add i64 {col}, {cper}"));
        let end = self.def(&format!("add i64 {gcol}, {per}"));
        let in_rows = self.def(&format!("icmp ult i64 {grow}, {rows}"));
        let in_cols = self.def(&format!("icmp ule i64 {end}, {cols}"));
        let inside = self.def(&format!("and i1 {in_rows}, {in_cols}"));
        self.cond_br(&inside, &copy, &zero);
        self.start_block(&copy);
        let lin = self.def(&format!("mul i64 {grow}, {cols}"));
        let lin = self.def(&format!("add i64 {lin}, {gcol}"));
        let byte = self.def(&format!("mul i64 {lin}, {elem}"));
        let addr = self.def(&format!("add i64 {base}, {byte}"));
        let from = self.def(&format!("inttoptr i64 {addr} to ptr"));
        let v = self.def(&format!("load <16 x i8>, ptr {from}, align 1"));
        self.inst(&format!("store <16 x i8> {v}, ptr {to}, align 16"));
        self.jump(&latch);
        self.start_block(&zero);
        self.inst(&format!(
            "store <16 x i8> zeroinitializer, ptr {to}, align 16"
        ));
        self.jump(&latch);
        self.start_block(&latch);
        self.inst(&format!("{next} = add i64 {i}, 1"));
        self.jump(&head);
        self.start_block(&done);
    }
}
