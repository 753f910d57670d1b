//! Warpgroup matrix operations: a warpgroup's (128 threads) 64 x 128 `f32` accumulator,
//! fed from shared memory.
//!
//! The accumulator's layout is `wgmma.mma_async.m64n128k16`'s on every target (PTX ISA,
//! "Register fragments and shared memory matrix layouts"): thread `t` of the warpgroup
//! (`w = t / 32`, `g = t % 32 / 4`, `q = t % 4`) holds element `4i + 2h + j` =
//! `C[16w + g + 8h][8i + 2q + j]` for `i < 16`, `h, j < 2`.
//!
//! The shared tiles are K-major with rows of 64 elements (128 bytes) in the 128-byte
//! swizzle: A's element `(m, k)` at `m * 64 + ((k / 8) ^ (m % 8)) * 8 + k % 8`, and B
//! given transposed (Bᵀ, N x K), its element `(n, k)` at the same place for row `n`; each
//! tile starts on a 1024-byte boundary (GPU shared arrays are aligned so).
//!
//! - NVIDIA on `sm_90a`: `wg_mma(a, b, kstep, acc)` is `wgmma.fence` (which orders the
//!   warpgroup's earlier register accesses before it; tiles written with `copy_async`
//!   and made visible by `copy_async_wait` and a barrier need no proxy fence, as in
//!   CUTLASS's `cp.async` GMMA mainloop) and one
//!   `wgmma.mma_async.sync.aligned.m64n128k16.f32.{bf16,f16}` reading both tiles through
//!   shared-memory descriptors: 128-byte swizzle, stride byte offset 1024 (between 8-row
//!   groups), the start address moved by 32 bytes per k step (the hardware swizzles the
//!   final address, so the tile must be 1024-byte aligned: shared arrays of 1 KiB or
//!   more are laid out so, and in a unit built with peer checks a `wgmma` whose tiles
//!   the kernel's own expressions do not prove aligned traps on one off the boundary,
//!   which the hardware would otherwise read wrong without a word); neither transposed.
//!   `wg_commit` is `wgmma.commit_group`; `wg_wait(acc, n)` is `wgmma.wait_group n`, with
//!   the accumulator tied through it so nothing reads it earlier. The fence is left out
//!   of a `wg_mma` that directly follows another in the same block (nothing but address
//!   arithmetic between them): accumulators passed from one `wgmma` to the next of the
//!   same shape are ordered without it, and a run of them issues back to back.
//! - Elsewhere (`sm_80`, `sm_90` PTX, AMD, the CPU): `wg_mma` computes each thread's 64
//!   elements from shared memory in `f32`, in order `k = 16 kstep .. 16 kstep + 16`;
//!   `wg_commit` is nothing and `wg_wait` returns its argument.

use super::super::super::kernel_ir::{Dim, Expr, Scalar};
use super::builder::FnBuilder;
use super::ids::Coord;
use super::types;
use crate::compiler::Target;

/// `f32` elements a thread holds of a warpgroup accumulator.
pub(super) const ACC_LEN: u32 = 64;

const ACC: &str = "[64 x float]";

/// The thread's coordinates in the accumulator layout.
struct Place {
    /// Warp within the warpgroup, 0..4.
    w: String,
    /// Row within the warp's 8-row group, 0..8.
    g: String,
    /// Column pair within an 8-column group, 0..4.
    q: String,
}

impl FnBuilder<'_> {
    fn wg_place(&mut self) -> Result<Place, String> {
        let tid = self.coord(Coord::ThreadIdx, Dim::X)?;
        let t = self.def(&format!("and i32 {tid}, 127"));
        let w = self.def(&format!("lshr i32 {t}, 5"));
        let lane = self.def(&format!("and i32 {t}, 31"));
        let g = self.def(&format!("lshr i32 {lane}, 2"));
        let q = self.def(&format!("and i32 {lane}, 3"));
        Ok(Place { w, g, q })
    }

    /// `wg_mma(a, b, kstep, acc)`.
    pub(super) fn wg_mma(
        &mut self,
        elem: Scalar,
        a: &Expr,
        b: &Expr,
        kstep: &Expr,
        acc: &Expr,
    ) -> Result<String, String> {
        // The swizzle needs both tiles on 1024-byte boundaries: in a unit built with peer
        // checks, checked as the `wgmma` runs unless the kernel's own expressions prove it
        // (not always: two instructions before each `wgmma` made the GEMMs' main loop 25%
        // slower on an H100).
        let check = self.arch().target == Target::Sm90a
            && self.m.peer_checks
            && !(self.proves_shared_aligned(a, 1024) && self.proves_shared_aligned(b, 1024));
        let a = self.expr(a)?;
        let b = self.expr(b)?;
        let kc = self.expr(kstep)?;
        let acc = self.expr(acc)?;
        if self.arch().target == Target::Sm90a {
            self.wgmma(elem, &a, &b, &kc, &acc, check)
        } else {
            self.wg_mma_elements(elem, &a, &b, &kc, &acc)
        }
    }

    /// The shared-memory descriptor of k step `kstep` of the tile at `p` (128-byte
    /// swizzle; see the module docs).
    fn wg_descriptor(&mut self, p: &str, kstep: &str) -> String {
        let shared = self.shared_space_pointer(p);
        let addr = self.def(&format!("ptrtoint ptr addrspace(3) {shared} to i32"));
        let step = self.def(&format!("shl i32 {kstep}, 5"));
        let addr = self.def(&format!("add i32 {addr}, {step}"));
        let addr = self.def(&format!("zext i32 {addr} to i64"));
        let addr = self.def(&format!("and i64 {addr}, 262143"));
        let start = self.def(&format!("lshr i64 {addr}, 4"));
        // Leading byte offset (unused with a swizzle): 1, in bits 16..30; stride byte
        // offset 1024 (>> 4 = 64) in bits 32..46; the 128-byte swizzle (1) in bits 62..64.
        let fields = (1u64 << 16) | (64u64 << 32) | (1u64 << 62);
        self.def(&format!("or i64 {start}, {fields}"))
    }

    /// The low ten bits of the shared addresses of the tiles at `a` and `b`, or-ed: 0
    /// when both start on a 1024-byte boundary.
    fn wg_misalignment(&mut self, a: &str, b: &str) -> String {
        let mut bits = Vec::with_capacity(2);
        for p in [a, b] {
            let shared = self.shared_space_pointer(p);
            bits.push(self.def(&format!("ptrtoint ptr addrspace(3) {shared} to i32")));
        }
        let both = self.def(&format!("or i32 {}, {}", bits[0], bits[1]));
        self.def(&format!("and i32 {both}, 1023"))
    }

    /// `wgmma` of the tiles at `a` and `b`; with `check`, one that traps (the kernel
    /// fails, named at the host's next wait) when a tile is off its 1024-byte boundary,
    /// which the hardware would read wrong without a word.
    fn wgmma(
        &mut self,
        elem: Scalar,
        a: &str,
        b: &str,
        kc: &str,
        acc: &str,
        check: bool,
    ) -> Result<String, String> {
        let misaligned = check.then(|| self.wg_misalignment(a, b));
        let da = self.wg_descriptor(a, kc);
        let db = self.wg_descriptor(b, kc);
        let ty = if elem == Scalar::BF16 { "bf16" } else { "f16" };
        let n = ACC_LEN as usize;
        let regs: Vec<String> = (0..n).map(|i| format!("${i}")).collect();
        // One fence before a run of `wgmma` in a block: those after the first touch no
        // register in between (accumulators passed from one to the next of the same
        // shape are ordered without one).
        let fence = if self.follows_wgmma() {
            ""
        } else {
            "wgmma.fence.sync.aligned; "
        };
        let trap = if misaligned.is_some() {
            format!(
                ".reg .pred off; setp.ne.b32 off, ${}, 0; @off trap; ",
                2 * n + 3
            )
        } else {
            String::new()
        };
        let text = format!(
            "{{ .reg .pred p; {trap}setp.ne.b32 p, ${}, 0; {fence}wgmma.mma_async.sync.aligned.m64n128k16.f32.{ty}.{ty} {{{}}}, ${}, ${}, p, 1, 1, 0, 0; }}",
            2 * n + 2,
            regs.join(", "),
            2 * n,
            2 * n + 1
        );
        let mut extra = vec![
            format!("i64 {da}"),
            format!("i64 {db}"),
            "i32 1".to_string(),
        ];
        let mut constraints = "l,l,r,".to_string();
        if let Some(bits) = misaligned {
            extra.push(format!("i32 {bits}"));
            constraints.push_str("r,");
        }
        let out = self.tied_asm(&text, acc, &constraints, &extra)?;
        self.mark_wgmma_end();
        Ok(out)
    }

    /// Inline assembly that reads and rewrites the 64 accumulator registers of `acc`
    /// (operands `$0..$63`, tied), with `extra` operands after them (`extra_constraints`,
    /// each followed by a comma); the result rebuilt as an accumulator.
    fn tied_asm(
        &mut self,
        text: &str,
        acc: &str,
        extra_constraints: &str,
        extra: &[String],
    ) -> Result<String, String> {
        let n = ACC_LEN as usize;
        let constraints = format!(
            "{},{},{extra_constraints}~{{memory}}",
            vec!["=f"; n].join(","),
            (0..n).map(|i| i.to_string()).collect::<Vec<_>>().join(",")
        );
        let mut args: Vec<String> = (0..n)
            .map(|i| {
                let v = self.def(&format!("extractvalue {ACC} {acc}, {i}"));
                format!("float {v}")
            })
            .collect();
        args.extend_from_slice(extra);
        let ret = format!("{{ {} }}", vec!["float"; n].join(", "));
        let r = self.def(&format!(
            "call {ret} asm sideeffect \"{text}\", \"{constraints}\"({})",
            args.join(", ")
        ));
        let mut out = "poison".to_string();
        for i in 0..ACC_LEN {
            let v = self.def(&format!("extractvalue {ret} {r}, {i}"));
            out = self.def(&format!("insertvalue {ACC} {out}, float {v}, {i}"));
        }
        Ok(out)
    }

    /// `wg_commit()`.
    pub(super) fn wg_commit(&mut self) -> String {
        if self.arch().target == Target::Sm90a {
            self.inst(
                "call void asm sideeffect \"wgmma.commit_group.sync.aligned;\", \"~{memory}\"()",
            );
        }
        String::new()
    }

    /// `wg_wait(acc, pending)`.
    pub(super) fn wg_wait(&mut self, acc: &Expr, pending: u32) -> Result<String, String> {
        let acc = self.expr(acc)?;
        if self.arch().target != Target::Sm90a {
            return Ok(acc);
        }
        self.tied_asm(
            &format!("wgmma.wait_group.sync.aligned {pending};"),
            &acc,
            "",
            &[],
        )
    }

    /// `wg_mma` computed by each thread from shared memory: a loop over the 16 k of the
    /// step.
    fn wg_mma_elements(
        &mut self,
        elem: Scalar,
        a: &str,
        b: &str,
        kstep: &str,
        acc: &str,
    ) -> Result<String, String> {
        let Place { w, g, q } = self.wg_place()?;
        let et = types::scalar_ty(elem);
        // Rows 16w + g + 8h of A (row % 8 = g) and 8i + 2q + j of Bᵀ (row % 8 = 2q + j).
        let w16 = self.def(&format!("shl i32 {w}, 4"));
        let a_row0 = self.def(&format!("add i32 {w16}, {g}"));
        let q2 = self.def(&format!("shl i32 {q}, 1"));
        let k0 = self.def(&format!("shl i32 {kstep}, 4"));
        let entry = self.current_block().to_string();
        let (body, done) = (self.label("wg_k"), self.label("wg_done"));
        self.jump(&body);
        self.start_block(&body);
        let kk = self.tmp();
        let sums = self.tmp();
        let next_kk = self.tmp();
        let next_sums = self.tmp();
        self.inst(&format!(
            "{kk} = phi i32 [ 0, %{entry} ], [ {next_kk}, %{body} ]"
        ));
        self.inst(&format!(
            "{sums} = phi {ACC} [ {acc}, %{entry} ], [ {next_sums}, %{body} ]"
        ));
        let k = self.def(&format!("add i32 {k0}, {kk}"));
        let chunk = self.def(&format!("lshr i32 {k}, 3"));
        let within = self.def(&format!("and i32 {k}, 7"));
        // Element (row, k): row * 64 + ((k / 8) ^ (row % 8)) * 8 + k % 8.
        let at = |s: &mut Self, row: &str, low: &str| -> String {
            let base = s.def(&format!("shl i32 {row}, 6"));
            let sw = s.def(&format!("xor i32 {chunk}, {low}"));
            let sw = s.def(&format!("shl i32 {sw}, 3"));
            let o = s.def(&format!("add i32 {base}, {sw}"));
            s.def(&format!("add i32 {o}, {within}"))
        };
        let load = |s: &mut Self, p: &str, at: &str| -> Result<String, String> {
            let at = s.def(&format!("zext i32 {at} to i64"));
            let addr = s.def(&format!("getelementptr inbounds {et}, ptr {p}, i64 {at}"));
            let v = s.def(&format!("load {et}, ptr {addr}, align 2"));
            s.scalar_cast(&v, elem, Scalar::F32)
        };
        let mut av = Vec::new();
        for h in 0..2u32 {
            let row = self.def(&format!("add i32 {a_row0}, {}", 8 * h));
            let o = at(self, &row, &g);
            av.push(load(self, a, &o)?);
        }
        let mut out = sums.clone();
        for i in 0..16u32 {
            for j in 0..2u32 {
                let low = self.def(&format!("add i32 {q2}, {j}"));
                let row = self.def(&format!("add i32 {low}, {}", 8 * i));
                let o = at(self, &row, &low);
                let bv = load(self, b, &o)?;
                for (h, a_h) in av.iter().enumerate() {
                    let slot = 4 * i + 2 * h as u32 + j;
                    let old = self.def(&format!("extractvalue {ACC} {sums}, {slot}"));
                    let p = self.def(&format!("fmul float {a_h}, {bv}"));
                    let new = self.def(&format!("fadd float {old}, {p}"));
                    out = self.def(&format!("insertvalue {ACC} {out}, float {new}, {slot}"));
                }
            }
        }
        // The loop's next accumulator, under the name the phi above refers to.
        self.inst(&format!(
            "{next_sums} = select i1 true, {ACC} {out}, {ACC} {out}"
        ));
        self.inst(&format!("{next_kk} = add i32 {kk}, 1"));
        let more = self.def(&format!("icmp ult i32 {next_kk}, 16"));
        self.cond_br(&more, &body, &done);
        self.start_block(&done);
        Ok(next_sums)
    }

    /// `wg_store(tile, ld, acc)` and `wg_store_peer(tile, ld, acc, peer)`: each thread's
    /// 64 elements (into `peer`'s copy: the tile's address translated once). A thread's
    /// elements come in pairs of adjacent columns (`8i + 2q`, `+ 1`): where the tile's
    /// address is 8-byte aligned and `ld` even, each pair is one 8-byte store (32 stores
    /// per thread, a warp's covering 32 contiguous bytes of 8 rows), else 64 single ones.
    pub(super) fn wg_store(
        &mut self,
        tile: &Expr,
        ld: &Expr,
        acc: &Expr,
        peer: Option<&Expr>,
    ) -> Result<String, String> {
        let t = self.expr(tile)?;
        let ld = self.expr(ld)?;
        let acc = self.expr(acc)?;
        let (p, pty) = self.store_base(t, peer)?;
        let Place { w, g, q } = self.wg_place()?;
        let w16 = self.def(&format!("shl i32 {w}, 4"));
        let row0 = self.def(&format!("add i32 {w16}, {g}"));
        let q2 = self.def(&format!("shl i32 {q}, 1"));
        let ld64 = self.def(&format!("zext i32 {ld} to i64"));
        let paired = self.pairs_fit(&p, &pty, &ld);
        let (pairs, singles, done) = (
            self.label("wg_pairs"),
            self.label("wg_singles"),
            self.label("wg_stored"),
        );
        self.cond_br(&paired, &pairs, &singles);
        for (label, width) in [(&pairs, 2u32), (&singles, 1u32)] {
            self.start_block(label);
            for h in 0..2u32 {
                let row = self.def(&format!("add i32 {row0}, {}", 8 * h));
                let row = self.def(&format!("zext i32 {row} to i64"));
                let start = self.def(&format!("mul i64 {row}, {ld64}"));
                for i in 0..16u32 {
                    for j in (0..2u32).step_by(width as usize) {
                        let col = self.def(&format!("add i32 {q2}, {}", 8 * i + j));
                        let col = self.def(&format!("zext i32 {col} to i64"));
                        let at = self.def(&format!("add i64 {start}, {col}"));
                        let addr = self.def(&format!(
                            "getelementptr inbounds float, {pty} {p}, i64 {at}"
                        ));
                        let slot = 4 * i + 2 * h + j;
                        let v = self.def(&format!("extractvalue {ACC} {acc}, {slot}"));
                        let v1 = (width == 2)
                            .then(|| self.def(&format!("extractvalue {ACC} {acc}, {}", slot + 1)));
                        self.store_f32s(&pty, &addr, &v, v1.as_deref());
                    }
                }
            }
            self.jump(&done);
        }
        self.start_block(&done);
        Ok(String::new())
    }
}
