//! Bulk copies (`bulk_barrier_init`, `bulk_expect`, `copy_bulk`, `bulk_wait`).
//!
//! - sm_90 and sm_90a: Hopper's copy engine, `cp.async.bulk` from global into shared
//!   memory completing on an `mbarrier` (`mbarrier.init`, `mbarrier.arrive.expect_tx`,
//!   `mbarrier.try_wait.parity`). A copy whose pointers are not a shared and a global
//!   16-byte aligned address is made by the thread at once, and its bytes counted on the
//!   barrier with `mbarrier.complete_tx`. A wait that has not seen its phase complete
//!   after [`WAIT_LIMIT_NS`] traps (the launch fails) rather than hang.
//! - sm_80, AMD and the CPU: the copy is made at once (16 bytes at a time where both
//!   pointers are 16-byte aligned), announcing and initializing do nothing, and the wait
//!   is the block barrier (`sync_threads`), after which every thread's copies are seen.

use super::super::super::kernel_ir::{Expr, Intrinsic, Type};
use super::builder::FnBuilder;
use crate::compiler::Target;

/// How long `bulk_wait` waits for a phase before it traps: ten seconds, far beyond any
/// copy (a batch announced with more bytes than are copied never completes).
pub(super) const WAIT_LIMIT_NS: u64 = 10_000_000_000;

impl FnBuilder<'_> {
    /// Whether the target has the copy engine and its barriers.
    pub(super) fn has_copy_engine(&self) -> bool {
        matches!(self.arch().target, Target::Sm90 | Target::Sm90a)
    }

    /// Inline PTX with no result.
    pub(super) fn ptx(&mut self, text: &str, constraints: &str, args: &[String]) {
        self.inst(&format!(
            "call void asm sideeffect \"{text}\", \"{constraints},~{{memory}}\"({})",
            args.join(", ")
        ));
    }

    /// The shared-window address (`i64`) of generic pointer `p`.
    pub(super) fn shared_address(&mut self, p: &str) -> String {
        let s = self.shared_space_pointer(p);
        self.def(&format!("ptrtoint ptr addrspace(3) {s} to i64"))
    }

    /// `bulk_barrier_init(barrier)`.
    pub(super) fn bulk_barrier_init(&mut self, barrier: &Expr) -> Result<String, String> {
        let b = self.expr(barrier)?;
        if self.has_copy_engine() {
            let addr = self.shared_address(&b);
            self.ptx(
                "mbarrier.init.shared::cta.b64 [$0], 1;\\0A\\09fence.mbarrier_init.release.cluster;",
                "l",
                &[format!("i64 {addr}")],
            );
        }
        Ok(String::new())
    }

    /// `bulk_expect(barrier, bytes)`.
    pub(super) fn bulk_expect(&mut self, barrier: &Expr, bytes: &Expr) -> Result<String, String> {
        let b = self.expr(barrier)?;
        let n = self.expr(bytes)?;
        if self.has_copy_engine() {
            let addr = self.shared_address(&b);
            self.ptx(
                "mbarrier.arrive.expect_tx.shared::cta.b64 _, [$0], $1;",
                "l,r",
                &[format!("i64 {addr}"), format!("i32 {n}")],
            );
        }
        Ok(String::new())
    }

    /// `copy_bulk(dst, src, barrier)`.
    pub(super) fn copy_bulk(
        &mut self,
        dst: &Expr,
        src: &Expr,
        barrier: &Expr,
    ) -> Result<String, String> {
        let Type::Ptr { pointee, .. } = &src.ty else {
            return Err(format!("`copy_bulk` from `{}`", src.ty));
        };
        let ty = (**pointee).clone();
        let bytes = ty.size().ok_or_else(|| format!("`copy_bulk` of `{ty}`"))?;
        let d = self.expr(dst)?;
        let s = self.expr(src)?;
        let b = self.expr(barrier)?;
        if !self.has_copy_engine() {
            self.copy_chunks(&d, &s, &ty, bytes)?;
            return Ok(String::new());
        }
        // The copy engine when the pointers are a shared and a global 16-byte aligned
        // address (after inlining LLVM usually knows, and the test folds away).
        let shared = self.is_space(&d, "shared");
        let global = self.is_space(&s, "global");
        let spaces = self.def(&format!("and i1 {shared}, {global}"));
        let aligned = self.both_aligned_16(&d, &s);
        let ok = self.def(&format!("and i1 {spaces}, {aligned}"));
        let (engine, now, join) = (
            self.label("bulk_copy"),
            self.label("bulk_copy_now"),
            self.label("bulk_copied"),
        );
        self.cond_br(&ok, &engine, &now);
        self.start_block(&engine);
        let dsh = self.shared_address(&d);
        let bar = self.shared_address(&b);
        let sg = self.def(&format!("addrspacecast ptr {s} to ptr addrspace(1)"));
        let sgi = self.def(&format!("ptrtoint ptr addrspace(1) {sg} to i64"));
        self.ptx(
            "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [$0], [$1], $2, [$3];",
            "l,l,r,l",
            &[
                format!("i64 {dsh}"),
                format!("i64 {sgi}"),
                format!("i32 {bytes}"),
                format!("i64 {bar}"),
            ],
        );
        self.jump(&join);
        self.start_block(&now);
        self.copy_chunks(&d, &s, &ty, bytes)?;
        let bar = self.shared_address(&b);
        // The thread's stores before the count that completes the phase.
        self.ptx(
            "fence.acq_rel.cta;\\0A\\09mbarrier.complete_tx.shared::cta.b64 [$0], $1;",
            "l,r",
            &[format!("i64 {bar}"), format!("i32 {bytes}")],
        );
        self.jump(&join);
        self.start_block(&join);
        Ok(String::new())
    }

    /// Whether generic pointers `d` and `s` are both 16-byte aligned (an `i1`).
    fn both_aligned_16(&mut self, d: &str, s: &str) -> String {
        let di = self.def(&format!("ptrtoint ptr {d} to i64"));
        let si = self.def(&format!("ptrtoint ptr {s} to i64"));
        let both = self.def(&format!("or i64 {di}, {si}"));
        let low = self.def(&format!("and i64 {both}, 15"));
        self.def(&format!("icmp eq i64 {low}, 0"))
    }

    /// `*d = *s` for a `ty` of `bytes` bytes (a multiple of 16, as the frontend checks),
    /// at once: 16 bytes at a time where both pointers are 16-byte aligned, else as a `ty`.
    fn copy_chunks(&mut self, d: &str, s: &str, ty: &Type, bytes: u32) -> Result<(), String> {
        let aligned = self.both_aligned_16(d, s);
        let (chunks, whole, join) = (
            self.label("chunks"),
            self.label("whole"),
            self.label("copied_now"),
        );
        self.cond_br(&aligned, &chunks, &whole);
        self.start_block(&chunks);
        for i in 0..bytes / 16 {
            let from = self.def(&format!("getelementptr i8, ptr {s}, i64 {}", 16 * i));
            let to = self.def(&format!("getelementptr i8, ptr {d}, i64 {}", 16 * i));
            let v = self.def(&format!("load <4 x i32>, ptr {from}, align 16"));
            self.inst(&format!("store <4 x i32> {v}, ptr {to}, align 16"));
        }
        self.jump(&join);
        self.start_block(&whole);
        let v = self.load(s, "ptr", ty)?;
        self.store(d, "ptr", ty, &v)?;
        self.jump(&join);
        self.start_block(&join);
        Ok(())
    }

    /// `bulk_wait(barrier, parity)`.
    pub(super) fn bulk_wait(&mut self, barrier: &Expr, parity: &Expr) -> Result<String, String> {
        let b = self.expr(barrier)?;
        let p = self.expr(parity)?;
        if !self.has_copy_engine() {
            return self.lower_block(&Intrinsic::SyncThreads);
        }
        let addr = self.shared_address(&b);
        let start = self.global_timer_ns()?;
        let (spin, late, done) = (
            self.label("bulk_wait"),
            self.label("bulk_wait_late"),
            self.label("bulk_waited"),
        );
        self.start_block(&spin);
        let r = self.def(&format!(
            "call i32 asm sideeffect \"{{\\0A\\09.reg .pred p;\\0A\\09mbarrier.try_wait.parity.shared::cta.b64 p, [$1], $2;\\0A\\09selp.u32 $0, 1, 0, p;\\0A\\09}}\", \"=r,l,r,~{{memory}}\"(i64 {addr}, i32 {p})"
        ));
        let landed = self.def(&format!("icmp ne i32 {r}, 0"));
        self.cond_br(&landed, &done, &late);
        self.start_block(&late);
        let now = self.global_timer_ns()?;
        let waited = self.def(&format!("sub i64 {now}, {start}"));
        let over = self.def(&format!("icmp ugt i64 {waited}, {WAIT_LIMIT_NS}"));
        let (trap, again) = (self.label("bulk_wait_trap"), spin.clone());
        self.cond_br(&over, &trap, &again);
        self.start_block(&trap);
        self.m.declare("llvm.trap", "void", "");
        self.inst("call void @llvm.trap()");
        self.terminate("unreachable");
        self.start_block(&done);
        Ok(String::new())
    }
}
