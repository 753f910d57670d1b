//! Matrix units: a warp's 16 x 16 x 16 tile product on each target.
//!
//! Fragments are register arrays whose layout is the target's own, so loads and stores
//! put each element where the matrix instruction expects it:
//! - NVIDIA (warp 32; `g = lane / 4`, `t = lane % 4`): the operand layouts of
//!   `mma.sync.aligned.m16n8k16` (PTX ISA, "Matrix fragments for mma.m16n8k16"). A: 8
//!   elements, row `g (+8)`, column `2t + (0|1) (+8)`; B: 8 elements, two 16 x 8 halves, row
//!   `2t + (0|1) (+8)`, column `g (+8 for the second half)`; the accumulator: 8 `f32`, row
//!   `g (+8)`, column `2t + (0|1) (+8 for the second half)`. One `mma` is two
//!   `mma.sync.m16n8k16` (one per half of B and C).
//! - AMD (wave64; `r = lane % 16`, `q = lane / 16`): `v_mfma_f32_16x16x16{bf16_1k,f16}`. A: 4
//!   elements, row `r`, column `4q + i`; B: row `4q + i`, column `r`; the accumulator: row
//!   `4q + i`, column `r`.
//! - CPU (warp 32): NVIDIA's layout, and `mma` computed exactly in `f32`: each lane reads
//!   the A and B elements its outputs need from the lanes holding them, one shuffle per
//!   element per `k` (in order `k = 0..16`).

use super::super::super::kernel_ir::Intrinsic;
use super::super::super::kernel_ir::{Expr, FragmentRole, MemOrder, MemScope, RmwOp, Scalar};
use super::builder::FnBuilder;
use super::intrinsics::not_in_family;
use super::types;
use crate::abi::TargetKind;

/// Elements a lane holds of a fragment on a target kind.
pub(super) fn fragment_len(kind: TargetKind) -> u32 {
    match kind {
        TargetKind::Amdgpu => 4,
        TargetKind::Nvptx | TargetKind::Cpu => 8,
    }
}

/// Where a lane's fragment elements sit in a tile with `ld` elements between rows:
/// `(row_base + dr) * ld + col_base + dc`.
struct Layout {
    row_base: String,
    col_base: String,
    offsets: Vec<(u32, u32)>,
    /// The leading dimension, as an `i64`.
    ld: String,
}

impl FnBuilder<'_> {
    /// Fragment loads, `mma_zero`, `mma`, fragment stores.
    pub(super) fn lower_matrix(&mut self, op: &Intrinsic) -> Result<String, String> {
        match op {
            Intrinsic::MmaLoad {
                role,
                elem,
                tile,
                ld,
            } => self.mma_load(*role, *elem, tile, ld),
            Intrinsic::MmaLoadSwizzled {
                role,
                elem,
                tile,
                row,
                col,
            } => self.mma_load_swizzled(*role, *elem, tile, row, col),
            Intrinsic::MmaZero => Ok(self.mma_zero()),
            Intrinsic::Mma { elem, a, b, acc } => self.mma(*elem, a, b, acc),
            Intrinsic::MmaStore {
                add,
                tile,
                ld,
                acc,
                peer,
            } => self.mma_store(tile, ld, acc, peer.as_deref(), *add),
            Intrinsic::WgZero => {
                // Its registers are written outside `wgmma`: the next one fences.
                self.clear_wgmma_end();
                Ok(self.mma_zero())
            }
            Intrinsic::WgMma {
                elem,
                a,
                b,
                kstep,
                acc,
            } => self.wg_mma(*elem, a, b, kstep, acc),
            Intrinsic::WgCommit => Ok(self.wg_commit()),
            Intrinsic::WgWait { acc, pending } => self.wg_wait(acc, *pending),
            Intrinsic::WgStore {
                tile,
                ld,
                acc,
                peer,
            } => self.wg_store(tile, ld, acc, peer.as_deref()),
            other => Err(not_in_family(other)),
        }
    }

    fn layout(&mut self, role: FragmentRole, ld: &str) -> Result<Layout, String> {
        if role == FragmentRole::WgAcc {
            return Err("a warpgroup accumulator has no warp-tile layout (a checker bug)".into());
        }
        let lane = self.lane_id()?;
        let ld = self.def(&format!("zext i32 {ld} to i64"));
        Ok(match self.arch().kind() {
            TargetKind::Amdgpu => {
                let r = self.def(&format!("and i32 {lane}, 15"));
                let q = self.def(&format!("lshr i32 {lane}, 4"));
                let q4 = self.def(&format!("shl i32 {q}, 2"));
                let (row_base, col_base, offsets) = match role {
                    FragmentRole::A => (r, q4, (0..4).map(|i| (0, i)).collect()),
                    FragmentRole::B | FragmentRole::Acc | FragmentRole::WgAcc => {
                        (q4, r, (0..4).map(|i| (i, 0)).collect())
                    }
                };
                Layout {
                    row_base,
                    col_base,
                    offsets,
                    ld,
                }
            }
            TargetKind::Nvptx | TargetKind::Cpu => {
                let g = self.def(&format!("lshr i32 {lane}, 2"));
                let t = self.def(&format!("and i32 {lane}, 3"));
                let t2 = self.def(&format!("shl i32 {t}, 1"));
                match role {
                    FragmentRole::A => Layout {
                        row_base: g,
                        col_base: t2,
                        offsets: (0..8u32)
                            .map(|i| (8 * ((i >> 1) & 1), (i & 1) + 8 * (i >> 2)))
                            .collect(),
                        ld,
                    },
                    FragmentRole::B => Layout {
                        row_base: t2,
                        col_base: g,
                        offsets: (0..8u32)
                            .map(|j| {
                                let (h, i) = (j >> 2, j & 3);
                                ((i & 1) + 8 * (i >> 1), 8 * h)
                            })
                            .collect(),
                        ld,
                    },
                    FragmentRole::Acc | FragmentRole::WgAcc => Layout {
                        row_base: g,
                        col_base: t2,
                        offsets: (0..8u32)
                            .map(|j| {
                                let (h, i) = (j >> 2, j & 3);
                                (8 * (i >> 1), 8 * h + (i & 1))
                            })
                            .collect(),
                        ld,
                    },
                }
            }
        })
    }

    /// `row * ld + col` as an `i64` element offset.
    fn tile_offset(&mut self, layout: &Layout, (dr, dc): (u32, u32)) -> String {
        let row = self.def(&format!("add i32 {}, {dr}", layout.row_base));
        let col = self.def(&format!("add i32 {}, {dc}", layout.col_base));
        let row = self.def(&format!("zext i32 {row} to i64"));
        let col = self.def(&format!("zext i32 {col} to i64"));
        let start = self.def(&format!("mul i64 {row}, {}", layout.ld));
        self.def(&format!("add i64 {start}, {col}"))
    }

    /// `mma_load_a` / `mma_load_b`: this lane's elements of the tile at `tile`.
    pub fn mma_load(
        &mut self,
        role: FragmentRole,
        elem: Scalar,
        tile: &Expr,
        ld: &Expr,
    ) -> Result<String, String> {
        let (tile_expr, ld_expr) = (tile, ld);
        let p = self.expr(tile)?;
        let ld = self.expr(ld)?;
        if self.arch().kind() != TargetKind::Nvptx || role == FragmentRole::Acc {
            return self.mma_load_elements(role, elem, &p, &ld);
        }
        // Proven from the kernel's own expressions: a shared tile, rows on 16-byte
        // boundaries. Then `ldmatrix` alone, with no run-time test or fallback.
        if self.proves_shared_aligned(tile_expr, 16) && self.proves_multiple(ld_expr, 8) {
            return self.ldmatrix(role, elem, &p, &ld);
        }
        // NVIDIA: from block-shared memory with rows on 16-byte boundaries, one
        // `ldmatrix` per fragment; otherwise element by element. Every lane passes the
        // same tile and `ld` (the prelude requires it), so the branch is uniform, and it
        // folds away where LLVM can tell the address space and the alignment.
        let shared = self.is_space(&p, "shared");
        let local = self.shared_space_pointer(&p);
        let addr = self.def(&format!("ptrtoint ptr addrspace(3) {local} to i32"));
        let low = self.def(&format!("and i32 {addr}, 15"));
        let aligned = self.def(&format!("icmp eq i32 {low}, 0"));
        let ld_low = self.def(&format!("and i32 {ld}, 7"));
        let ld_aligned = self.def(&format!("icmp eq i32 {ld_low}, 0"));
        let ok = self.def(&format!("and i1 {shared}, {aligned}"));
        let all = self.def(&format!("and i1 {ok}, {ld_aligned}"));
        self.by_matrix_or_elements(
            &all,
            elem,
            ["ldmatrix", "elements", "loaded"],
            |s| s.ldmatrix(role, elem, &p, &ld),
            |s| s.mma_load_elements(role, elem, &p, &ld),
        )
    }

    /// A fragment from `by_matrix` (one `ldmatrix`) where `ok`, else from `by_element`:
    /// a uniform branch (every lane passes the same tile), the two joined by a `phi`.
    /// `labels` name the two blocks and the join.
    fn by_matrix_or_elements(
        &mut self,
        ok: &str,
        elem: Scalar,
        labels: [&str; 3],
        by_matrix: impl FnOnce(&mut Self) -> Result<String, String>,
        by_element: impl FnOnce(&mut Self) -> Result<String, String>,
    ) -> Result<String, String> {
        let (fast, slow, join) = (
            self.label(labels[0]),
            self.label(labels[1]),
            self.label(labels[2]),
        );
        self.cond_br(ok, &fast, &slow);
        self.start_block(&fast);
        let from_matrix = by_matrix(self)?;
        let from_fast = self.current_block().to_string();
        self.jump(&join);
        self.start_block(&slow);
        let from_elements = by_element(self)?;
        let from_slow = self.current_block().to_string();
        self.jump(&join);
        self.start_block(&join);
        let et = types::scalar_ty(elem);
        Ok(self.def(&format!(
            "phi [8 x {et}] [ {from_matrix}, %{from_fast} ], [ {from_elements}, %{from_slow} ]"
        )))
    }

    /// A fragment of the 16 x 16 tile at shared-memory `p` with one
    /// `ldmatrix.sync.aligned.m8n8.x4` (`.trans` for B): lane `l` gives the address of row
    /// `l % 16`, columns `8 * (l / 16)..`, so the four 8 x 8 matrices are the tile's
    /// top-left, bottom-left, top-right and bottom-right quarters, which are this lane's
    /// four registers in the `mma.m16n8k16` layout (for B, read transposed: rows are k).
    fn ldmatrix(
        &mut self,
        role: FragmentRole,
        elem: Scalar,
        p: &str,
        ld: &str,
    ) -> Result<String, String> {
        let (row, col) = self.ldmatrix_lane()?;
        let start = self.def(&format!("mul i32 {row}, {ld}"));
        let at = self.def(&format!("add i32 {start}, {col}"));
        let at = self.def(&format!("zext i32 {at} to i64"));
        let et = types::scalar_ty(elem);
        let addr = self.def(&format!("getelementptr inbounds {et}, ptr {p}, i64 {at}"));
        self.ldmatrix_at(role, elem, &addr)
    }

    /// The row (`l % 16`) and first column (`8 (l / 16)`) of the 16 x 16 tile whose
    /// address lane `l` gives `ldmatrix`.
    fn ldmatrix_lane(&mut self) -> Result<(String, String), String> {
        let lane = self.lane_id()?;
        let row = self.def(&format!("and i32 {lane}, 15"));
        let half = self.def(&format!("lshr i32 {lane}, 4"));
        let col = self.def(&format!("shl i32 {half}, 3"));
        Ok((row, col))
    }

    /// `ldmatrix.sync.aligned.m8n8.x4` (`.trans` for B) with this lane's row address
    /// `addr` (see [`ldmatrix`](Self::ldmatrix) for which row each lane gives).
    fn ldmatrix_at(
        &mut self,
        role: FragmentRole,
        elem: Scalar,
        addr: &str,
    ) -> Result<String, String> {
        let et = types::scalar_ty(elem);
        let shared = self.shared_space_pointer(addr);
        let f = if role == FragmentRole::B {
            "llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.trans.b16"
        } else {
            "llvm.nvvm.ldmatrix.sync.aligned.m8n8.x4.b16"
        };
        let quad = "{ i32, i32, i32, i32 }";
        self.m.declare(f, quad, "ptr addrspace(3)");
        let regs = self.def(&format!("call {quad} @{f}(ptr addrspace(3) {shared})"));
        let mut frag = "poison".to_string();
        for r in 0..4 {
            let word = self.def(&format!("extractvalue {quad} {regs}, {r}"));
            let pair = self.def(&format!("bitcast i32 {word} to <2 x {et}>"));
            for h in 0..2 {
                let v = self.def(&format!("extractelement <2 x {et}> {pair}, i32 {h}"));
                frag = self.def(&format!(
                    "insertvalue [8 x {et}] {frag}, {et} {v}, {}",
                    2 * r + h
                ));
            }
        }
        Ok(frag)
    }

    /// `mma_load_a_swizzled` / `mma_load_b_swizzled`: this lane's elements of the 16 x 16
    /// tile at (`row`, `col`) of a box in the 128-byte swizzle (rows of 64 elements, the
    /// 8-element chunk `c` of row `r` at chunk `c ^ (r % 8)`). NVIDIA: one `ldmatrix` when
    /// the box is in shared memory and `col` a multiple of 8 (each lane's 8 elements one
    /// chunk); otherwise, and elsewhere, element by element.
    pub fn mma_load_swizzled(
        &mut self,
        role: FragmentRole,
        elem: Scalar,
        tile: &Expr,
        row: &Expr,
        col: &Expr,
    ) -> Result<String, String> {
        let p = self.expr(tile)?;
        let row = self.expr(row)?;
        let col = self.expr(col)?;
        if self.arch().kind() != TargetKind::Nvptx {
            return self.swizzled_elements(role, elem, &p, &row, &col);
        }
        let shared = self.is_space(&p, "shared");
        let low = self.def(&format!("and i32 {col}, 7"));
        let on_chunk = self.def(&format!("icmp eq i32 {low}, 0"));
        let ok = self.def(&format!("and i1 {shared}, {on_chunk}"));
        self.by_matrix_or_elements(
            &ok,
            elem,
            ["ldmatrix_swizzled", "elements_swizzled", "loaded_swizzled"],
            |s| {
                // This lane's row and 8 columns: one chunk of the box.
                let (lr, lc) = s.ldmatrix_lane()?;
                let r = s.def(&format!("add i32 {row}, {lr}"));
                let c = s.def(&format!("add i32 {col}, {lc}"));
                let at = s.swizzled_at(&r, &c);
                let et = types::scalar_ty(elem);
                let addr = s.def(&format!("getelementptr inbounds {et}, ptr {p}, i64 {at}"));
                s.ldmatrix_at(role, elem, &addr)
            },
            |s| s.swizzled_elements(role, elem, &p, &row, &col),
        )
    }

    /// The element offset (`i64`) of (`r`, `c`) in a 128-byte-swizzled box of 2-byte
    /// elements: `64 r + 8 ((c / 8) ^ (r % 8)) + c % 8`.
    fn swizzled_at(&mut self, r: &str, c: &str) -> String {
        let line = self.def(&format!("shl i32 {r}, 6"));
        let chunk = self.def(&format!("lshr i32 {c}, 3"));
        let r8 = self.def(&format!("and i32 {r}, 7"));
        let sw = self.def(&format!("xor i32 {chunk}, {r8}"));
        let sw = self.def(&format!("shl i32 {sw}, 3"));
        let within = self.def(&format!("and i32 {c}, 7"));
        let at = self.def(&format!("add i32 {line}, {sw}"));
        let at = self.def(&format!("add i32 {at}, {within}"));
        self.def(&format!("zext i32 {at} to i64"))
    }

    /// This lane's elements of the tile at (`row`, `col`) of the swizzled box at `p`.
    fn swizzled_elements(
        &mut self,
        role: FragmentRole,
        elem: Scalar,
        p: &str,
        row: &str,
        col: &str,
    ) -> Result<String, String> {
        self.load_elements(role, elem, p, "64", |s, layout, (dr, dc)| {
            let r = s.def(&format!("add i32 {}, {dr}", layout.row_base));
            let r = s.def(&format!("add i32 {r}, {row}"));
            let c = s.def(&format!("add i32 {}, {dc}", layout.col_base));
            let c = s.def(&format!("add i32 {c}, {col}"));
            s.swizzled_at(&r, &c)
        })
    }

    /// This lane's elements of the tile at `p`, one load each.
    fn mma_load_elements(
        &mut self,
        role: FragmentRole,
        elem: Scalar,
        p: &str,
        ld: &str,
    ) -> Result<String, String> {
        self.load_elements(role, elem, p, ld, |s, layout, off| {
            s.tile_offset(layout, off)
        })
    }

    /// This lane's elements of a tile at `p`, one load each, element `i` at the offset
    /// `at` gives for the layout's `i`th (row, column) (rows `ld` apart in the layout).
    fn load_elements(
        &mut self,
        role: FragmentRole,
        elem: Scalar,
        p: &str,
        ld: &str,
        mut at: impl FnMut(&mut Self, &Layout, (u32, u32)) -> String,
    ) -> Result<String, String> {
        let layout = self.layout(role, ld)?;
        let et = types::scalar_ty(elem);
        let n = layout.offsets.len();
        let ty = format!("[{n} x {et}]");
        let mut acc = "poison".to_string();
        for (i, &off) in layout.offsets.iter().enumerate() {
            let o = at(self, &layout, off);
            let addr = self.def(&format!("getelementptr inbounds {et}, ptr {p}, i64 {o}"));
            let v = self.def(&format!("load {et}, ptr {addr}, align 2"));
            acc = self.def(&format!("insertvalue {ty} {acc}, {et} {v}, {i}"));
        }
        Ok(acc)
    }

    /// `mma_zero()`.
    pub fn mma_zero(&mut self) -> String {
        "zeroinitializer".to_string()
    }

    /// `mma_store(tile, ld, acc)` and `mma_store_peer(tile, ld, acc, peer)`.
    pub fn mma_store(
        &mut self,
        tile: &Expr,
        ld: &Expr,
        acc: &Expr,
        peer: Option<&Expr>,
        add: bool,
    ) -> Result<String, String> {
        let t = self.expr(tile)?;
        let ld = self.expr(ld)?;
        let c = self.expr(acc)?;
        let (base, pty) = self.store_base(t, peer)?;
        let layout = self.layout(FragmentRole::Acc, &ld)?;
        let n = layout.offsets.len();
        if !add && adjacent_pairs(&layout.offsets) {
            return self.mma_store_pairs(&base, &pty, &ld, &layout, &c);
        }
        for (i, &off) in layout.offsets.iter().enumerate() {
            let o = self.tile_offset(&layout, off);
            let addr = self.def(&format!(
                "getelementptr inbounds float, {pty} {base}, i64 {o}"
            ));
            let v = self.def(&format!("extractvalue [{n} x float] {c}, {i}"));
            if !add {
                self.inst(&format!("store float {v}, {pty} {addr}, align 4"));
            } else if self.arch().kind() == TargetKind::Nvptx {
                let (order, scope) = (MemOrder::Relaxed, MemScope::System);
                self.ptx_rmw(RmwOp::Add, order, scope, &addr, &v, Scalar::F32)?;
            } else {
                let ss = self.arch().syncscope(MemScope::System);
                self.inst(&format!(
                    "atomicrmw fadd {pty} {addr}, float {v}{ss} monotonic, align 4"
                ));
            }
        }
        Ok(String::new())
    }

    /// The plain store of an accumulator whose elements come in pairs of adjacent columns
    /// (NVIDIA's layout, and the CPU's): where the tile's address is 8-byte aligned and
    /// `ld` even, each pair is one 8-byte store (a warp's covering 32 contiguous bytes of
    /// each of its rows), else single 4-byte stores.
    fn mma_store_pairs(
        &mut self,
        base: &str,
        pty: &str,
        ld: &str,
        layout: &Layout,
        acc: &str,
    ) -> Result<String, String> {
        let n = layout.offsets.len();
        let paired = self.pairs_fit(base, pty, ld);
        let (pairs, singles, done) = (
            self.label("mma_pairs"),
            self.label("mma_singles"),
            self.label("mma_stored"),
        );
        self.cond_br(&paired, &pairs, &singles);
        for (label, width) in [(&pairs, 2usize), (&singles, 1usize)] {
            self.start_block(label);
            for i in (0..n).step_by(width) {
                let o = self.tile_offset(layout, layout.offsets[i]);
                let addr = self.def(&format!(
                    "getelementptr inbounds float, {pty} {base}, i64 {o}"
                ));
                let v = self.def(&format!("extractvalue [{n} x float] {acc}, {i}"));
                let v1 = (width == 2)
                    .then(|| self.def(&format!("extractvalue [{n} x float] {acc}, {}", i + 1)));
                self.store_f32s(pty, &addr, &v, v1.as_deref());
            }
            self.jump(&done);
        }
        self.start_block(&done);
        Ok(String::new())
    }

    /// Whether an accumulator's pairs of adjacent columns can be stored 8 bytes at a
    /// time: the tile at `base` 8-byte aligned and `ld` (an `i32`) even. An `i1`.
    pub(super) fn pairs_fit(&mut self, base: &str, pty: &str, ld: &str) -> String {
        let addr = self.def(&format!("ptrtoint {pty} {base} to i64"));
        let low = self.def(&format!("and i64 {addr}, 7"));
        let low = self.def(&format!("trunc i64 {low} to i32"));
        let odd = self.def(&format!("and i32 {ld}, 1"));
        let either = self.def(&format!("or i32 {low}, {odd}"));
        self.def(&format!("icmp eq i32 {either}, 0"))
    }

    /// Stores `v` at `addr`, or `v` and `next` (the element after it) with one 8-byte
    /// store.
    pub(super) fn store_f32s(&mut self, pty: &str, addr: &str, v: &str, next: Option<&str>) {
        match next {
            Some(v1) => {
                let pair = self.def(&format!(
                    "insertelement <2 x float> poison, float {v}, i32 0"
                ));
                let pair = self.def(&format!(
                    "insertelement <2 x float> {pair}, float {v1}, i32 1"
                ));
                self.inst(&format!("store <2 x float> {pair}, {pty} {addr}, align 8"));
            }
            None => self.inst(&format!("store float {v}, {pty} {addr}, align 4")),
        }
    }

    /// Where an accumulator store writes: the tile `t` itself (a generic pointer), or its
    /// copy on `peer` (translated once, a global pointer); with the pointer's LLVM type.
    pub(super) fn store_base(
        &mut self,
        t: String,
        peer: Option<&Expr>,
    ) -> Result<(String, String), String> {
        Ok(match peer {
            Some(peer) => {
                let who = self.expr(peer)?;
                (self.translate(&t, &who)?, self.arch().gptr().to_string())
            }
            None => (t, "ptr".to_string()),
        })
    }

    /// `mma(a, b, acc)`.
    pub fn mma(&mut self, elem: Scalar, a: &Expr, b: &Expr, acc: &Expr) -> Result<String, String> {
        let a = self.expr(a)?;
        let b = self.expr(b)?;
        let c = self.expr(acc)?;
        match self.arch().kind() {
            TargetKind::Nvptx => self.mma_nvptx(elem, &a, &b, &c),
            TargetKind::Amdgpu => self.mma_amdgpu(elem, &a, &b, &c),
            TargetKind::Cpu => self.mma_cpu(elem, &a, &b, &c),
        }
    }

    /// Two `mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}`: columns 0..8, then 8..16.
    fn mma_nvptx(&mut self, elem: Scalar, a: &str, b: &str, c: &str) -> Result<String, String> {
        let et = types::scalar_ty(elem);
        let frag = format!("[8 x {et}]");
        // Two elements per 32-bit register, the lower-indexed in the low half.
        let pair = |b_: &mut Self, src: &str, i: u32, j: u32| -> String {
            let x = b_.def(&format!("extractvalue {frag} {src}, {i}"));
            let y = b_.def(&format!("extractvalue {frag} {src}, {j}"));
            let v = b_.def(&format!("insertelement <2 x {et}> poison, {et} {x}, i32 0"));
            let v = b_.def(&format!("insertelement <2 x {et}> {v}, {et} {y}, i32 1"));
            if elem == Scalar::BF16 {
                b_.def(&format!("bitcast <2 x {et}> {v} to i32"))
            } else {
                v
            }
        };
        let (name, reg) = if elem == Scalar::BF16 {
            ("llvm.nvvm.mma.m16n8k16.row.col.bf16", "i32".to_string())
        } else {
            (
                "llvm.nvvm.mma.m16n8k16.row.col.f32.f32",
                format!("<2 x {et}>"),
            )
        };
        let ret = "{float, float, float, float}";
        self.m.declare(
            name,
            ret,
            &format!("{reg}, {reg}, {reg}, {reg}, {reg}, {reg}, float, float, float, float"),
        );
        let aregs: Vec<String> = (0..4).map(|j| pair(self, a, 2 * j, 2 * j + 1)).collect();
        let mut out = "poison".to_string();
        for h in 0..2u32 {
            let b0 = pair(self, b, 4 * h, 4 * h + 1);
            let b1 = pair(self, b, 4 * h + 2, 4 * h + 3);
            let cs: Vec<String> = (0..4)
                .map(|i| self.def(&format!("extractvalue [8 x float] {c}, {}", 4 * h + i)))
                .collect();
            let args = format!(
                "{reg} {}, {reg} {}, {reg} {}, {reg} {}, {reg} {b0}, {reg} {b1}, float {}, float {}, float {}, float {}",
                aregs[0], aregs[1], aregs[2], aregs[3], cs[0], cs[1], cs[2], cs[3]
            );
            let d = self.def(&format!("call {ret} @{name}({args})"));
            for i in 0..4 {
                let v = self.def(&format!("extractvalue {ret} {d}, {i}"));
                out = self.def(&format!(
                    "insertvalue [8 x float] {out}, float {v}, {}",
                    4 * h + i
                ));
            }
        }
        Ok(out)
    }

    /// `v_mfma_f32_16x16x16bf16_1k` / `v_mfma_f32_16x16x16f16`.
    fn mma_amdgpu(&mut self, elem: Scalar, a: &str, b: &str, c: &str) -> Result<String, String> {
        let et = types::scalar_ty(elem);
        let to_vec = |s: &mut Self, src: &str, t: &str| -> String {
            let mut v = "poison".to_string();
            for i in 0..4 {
                let x = s.def(&format!("extractvalue [4 x {t}] {src}, {i}"));
                v = s.def(&format!("insertelement <4 x {t}> {v}, {t} {x}, i32 {i}"));
            }
            v
        };
        let (name, opty) = if elem == Scalar::BF16 {
            ("llvm.amdgcn.mfma.f32.16x16x16bf16.1k", "<4 x i16>")
        } else {
            ("llvm.amdgcn.mfma.f32.16x16x16f16", "<4 x half>")
        };
        let mut av = to_vec(self, a, et);
        let mut bv = to_vec(self, b, et);
        if elem == Scalar::BF16 {
            av = self.def(&format!("bitcast <4 x bfloat> {av} to <4 x i16>"));
            bv = self.def(&format!("bitcast <4 x bfloat> {bv} to <4 x i16>"));
        }
        let cv = to_vec(self, c, "float");
        self.m.declare(
            name,
            "<4 x float>",
            &format!("{opty}, {opty}, <4 x float>, i32, i32, i32"),
        );
        let d = self.def(&format!(
            "call <4 x float> @{name}({opty} {av}, {opty} {bv}, <4 x float> {cv}, i32 0, i32 0, i32 0)"
        ));
        let mut out = "poison".to_string();
        for i in 0..4 {
            let x = self.def(&format!("extractelement <4 x float> {d}, i32 {i}"));
            out = self.def(&format!("insertvalue [4 x float] {out}, float {x}, {i}"));
        }
        Ok(out)
    }

    /// The product computed exactly in `f32` over the CPU's warp, in NVIDIA's layout: the
    /// lane's fragments, widened to `f32`, go to the runtime's `warp_mma`, which computes
    /// the tile once the warp's lanes have all called it (one exchange, not a shuffle per
    /// element).
    fn mma_cpu(&mut self, elem: Scalar, a: &str, b: &str, c: &str) -> Result<String, String> {
        let et = types::scalar_ty(elem);
        let frag = format!("[8 x {et}]");
        let pa = self.alloca("mma.a", "[8 x float]", 4);
        let pb = self.alloca("mma.b", "[8 x float]", 4);
        let pc = self.alloca("mma.c", "[8 x float]", 4);
        for i in 0..8u32 {
            for (src, dst) in [(a, &pa), (b, &pb)] {
                let x = self.def(&format!("extractvalue {frag} {src}, {i}"));
                let w = self.scalar_cast(&x, elem, Scalar::F32)?;
                let at = self.def(&format!("getelementptr inbounds float, ptr {dst}, i64 {i}"));
                self.inst(&format!("store float {w}, ptr {at}, align 4"));
            }
            let x = self.def(&format!("extractvalue [8 x float] {c}, {i}"));
            let at = self.def(&format!("getelementptr inbounds float, ptr {pc}, i64 {i}"));
            self.inst(&format!("store float {x}, ptr {at}, align 4"));
        }
        let f = self.cpu_ctx_field("ptr", super::warp::WARP_MMA_OFFSET, 8)?;
        let warp = self.cpu_ctx_field("ptr", super::warp::WARP_OFFSET, 8)?;
        self.inst(&format!(
            "call void {f}(ptr {warp}, ptr {pa}, ptr {pb}, ptr {pc})"
        ));
        let mut out = "poison".to_string();
        for i in 0..8u32 {
            let at = self.def(&format!("getelementptr inbounds float, ptr {pc}, i64 {i}"));
            let v = self.def(&format!("load float, ptr {at}, align 4"));
            out = self.def(&format!("insertvalue [8 x float] {out}, float {v}, {i}"));
        }
        Ok(out)
    }
}

/// Whether a fragment's elements come in pairs of adjacent columns: elements `2m` and
/// `2m + 1` at the same row, one column apart, starting on an even column offset.
fn adjacent_pairs(offsets: &[(u32, u32)]) -> bool {
    offsets.len() % 2 == 0
        && offsets
            .chunks(2)
            .all(|p| p[0].1 % 2 == 0 && p[1] == (p[0].0, p[0].1 + 1))
}
