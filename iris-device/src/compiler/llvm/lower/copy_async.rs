//! Asynchronous copies from global into block-shared memory (`copy_async`,
//! `copy_async_commit`, `copy_async_wait`): `cp.async` on NVIDIA; a load and a store on
//! AMD and the CPU, where commit and wait have nothing to do.

use super::super::super::kernel_ir::{Expr, Type};
use super::builder::FnBuilder;
use crate::abi::TargetKind;

impl FnBuilder<'_> {
    /// `copy_async(dst, src)`.
    pub(super) fn copy_async(&mut self, dst: &Expr, src: &Expr) -> Result<String, String> {
        let Type::Ptr { pointee, .. } = &src.ty else {
            return Err(format!("`copy_async` from `{}`", src.ty));
        };
        let ty = (**pointee).clone();
        let d = self.expr(dst)?;
        let s = self.expr(src)?;
        if self.arch().kind() != TargetKind::Nvptx {
            self.copy_now(&d, &s, &ty)?;
            return Ok(String::new());
        }
        let bytes = ty.size().ok_or_else(|| format!("`copy_async` of `{ty}`"))?;
        // `cp.async` when the pointers are where it needs them (after inlining LLVM
        // usually knows, and the test folds away); otherwise a load and a store.
        let shared = self.is_space(&d, "shared");
        let global = self.is_space(&s, "global");
        let ok = self.def(&format!("and i1 {shared}, {global}"));
        let (fast, slow, join) = (
            self.label("cp_async"),
            self.label("copy_now"),
            self.label("copied"),
        );
        self.cond_br(&ok, &fast, &slow);
        self.start_block(&fast);
        let kind = if bytes == 16 { "cg" } else { "ca" };
        let f = format!("llvm.nvvm.cp.async.{kind}.shared.global.{bytes}");
        self.m
            .declare(&f, "void", "ptr addrspace(3), ptr addrspace(1)");
        let d3 = self.shared_space_pointer(&d);
        let s1 = self.def(&format!("addrspacecast ptr {s} to ptr addrspace(1)"));
        self.inst(&format!(
            "call void @{f}(ptr addrspace(3) {d3}, ptr addrspace(1) {s1})"
        ));
        self.jump(&join);
        self.start_block(&slow);
        self.copy_now(&d, &s, &ty)?;
        self.jump(&join);
        self.start_block(&join);
        Ok(String::new())
    }

    /// `*d = *s` for a `ty`, at once.
    fn copy_now(&mut self, d: &str, s: &str, ty: &Type) -> Result<(), String> {
        let v = self.load(s, "ptr", ty)?;
        self.store(d, "ptr", ty, &v)
    }

    /// `copy_async_commit()`.
    pub(super) fn copy_async_commit(&mut self) {
        if self.arch().kind() == TargetKind::Nvptx {
            let f = "llvm.nvvm.cp.async.commit.group";
            self.m.declare(f, "void", "");
            self.inst(&format!("call void @{f}()"));
        }
    }

    /// `copy_async_wait(pending)`.
    pub(super) fn copy_async_wait(&mut self, pending: u32) {
        if self.arch().kind() == TargetKind::Nvptx {
            let f = "llvm.nvvm.cp.async.wait.group";
            self.m.declare(f, "void", "i32");
            self.inst(&format!("call void @{f}(i32 {pending})"));
        }
    }

    /// Whether generic pointer `p` points into `space` (`shared`, `global`).
    pub(super) fn is_space(&mut self, p: &str, space: &str) -> String {
        let f = format!("llvm.nvvm.isspacep.{space}");
        self.m.declare(&f, "i1", "ptr");
        self.def(&format!("call i1 @{f}(ptr {p})"))
    }
}
