//! Device intrinsics: dispatch to each family's lowering (the intrinsic table in
//! `kernel_ir` names them), and the methods of values: vector construction and lanes,
//! math functions.

use super::super::super::kernel_ir::{Expr, Family, Intrinsic, MathFn, Scalar, Type};
use super::builder::FnBuilder;
use super::types;
use crate::abi::TargetKind;

impl FnBuilder<'_> {
    /// Lowers an intrinsic call `e`: its family's lowering (see the intrinsic table).
    pub fn intrinsic(&mut self, e: &Expr, op: &Intrinsic) -> Result<String, String> {
        match op.family() {
            Family::Ids => self.lower_ids(op),
            Family::Block => self.lower_block(op),
            Family::Time => self.lower_time(op),
            Family::Memory => self.lower_memory(op),
            Family::Atomics => self.lower_atomics(op),
            Family::Signals => self.lower_signals(op),
            Family::Warp => self.lower_warp(op),
            Family::Matrix => self.lower_matrix(op),
            Family::Element | Family::Values => self.lower_values(e, op),
        }
    }

    /// Methods of values: pointer and `Symmetric<T>` offsets, vector lanes, math.
    fn lower_values(&mut self, e: &Expr, op: &Intrinsic) -> Result<String, String> {
        use Intrinsic::*;
        match op {
            PtrOffset { ptr, count } => self.ptr_offset(ptr, count),
            SymOffset { sym, count } => self.sym_offset(sym, count),
            SymLocal { sym } => self.sym_local(sym),
            SymPeerPtr { sym, peer } => self.sym_peer_ptr(sym, peer),
            SymCast { sym } => self.expr(sym),
            VecNew { lanes } => self.vec_new(&e.ty, lanes),
            VecSplat { value } => self.vec_splat(&e.ty, value),
            VecGet { vector, lane } => self.vec_get(*lane, vector),
            Math { f, x, y } => self.math(*f, &e.ty, x, y.as_deref()),
            other => Err(not_in_family(other)),
        }
    }

    fn vec_new(&mut self, ty: &Type, args: &[Expr]) -> Result<String, String> {
        let Type::Vector(v) = ty else {
            return Err(format!("vector constructor of type `{ty}`"));
        };
        if args.len() != v.lanes as usize {
            return Err(format!(
                "`{}::new` takes {} lanes, got {}",
                v.name(),
                v.lanes,
                args.len()
            ));
        }
        let t = types::vector_ty(*v);
        let et = types::scalar_ty(v.elem);
        let mut acc = "poison".to_string();
        for (lane, a) in args.iter().enumerate() {
            let x = self.expr(a)?;
            acc = self.def(&format!("insertelement {t} {acc}, {et} {x}, i32 {lane}"));
        }
        Ok(acc)
    }

    fn vec_splat(&mut self, ty: &Type, a: &Expr) -> Result<String, String> {
        let Type::Vector(v) = ty else {
            return Err(format!("`splat` of type `{ty}`"));
        };
        let t = types::vector_ty(*v);
        let et = types::scalar_ty(v.elem);
        let x = self.expr(a)?;
        let one = self.def(&format!("insertelement {t} poison, {et} {x}, i32 0"));
        Ok(self.def(&format!(
            "shufflevector {t} {one}, {t} poison, <{} x i32> zeroinitializer",
            v.lanes
        )))
    }

    fn vec_get(&mut self, lane: u32, a: &Expr) -> Result<String, String> {
        let Type::Vector(v) = &a.ty else {
            return Err(format!("`get` on `{}`", a.ty));
        };
        if lane >= v.lanes {
            return Err(format!(
                "lane {lane} of `{}`, which has {} lanes",
                v.name(),
                v.lanes
            ));
        }
        let t = types::vector_ty(*v);
        let x = self.expr(a)?;
        Ok(self.def(&format!("extractelement {t} {x}, i32 {lane}")))
    }

    /// `sqrt`, `abs`, `min`, `max` on floats (IEEE `minNum`/`maxNum`, as Rust's `f32::min`)
    /// and integers.
    fn math(&mut self, f: MathFn, ty: &Type, x: &Expr, y: Option<&Expr>) -> Result<String, String> {
        let mut vals = vec![self.expr(x)?];
        if let Some(y) = y {
            vals.push(self.expr(y)?);
        }
        let half = matches!(ty, Type::Scalar(Scalar::F16 | Scalar::BF16));
        if half && self.arch().kind() == TargetKind::Cpu {
            // The CPU has no 16-bit float math; LLVM would call libm's `fminf` and the
            // like. Through `f32` the result is exact (min, max, abs) or correctly
            // rounded (sqrt).
            let t = self.reg_ty(ty)?;
            let wide: Vec<String> = vals
                .iter()
                .map(|v| self.def(&format!("fpext {t} {v} to float")))
                .collect();
            let r = self.math_values(f, &Type::Scalar(Scalar::F32), wide)?;
            return Ok(self.def(&format!("fptrunc float {r} to {t}")));
        }
        self.math_values(f, ty, vals)
    }

    pub(super) fn math_values(
        &mut self,
        f: MathFn,
        ty: &Type,
        mut vals: Vec<String>,
    ) -> Result<String, String> {
        let s = types::elem_scalar(ty).ok_or_else(|| format!("math function on `{ty}`"))?;
        let t = self.reg_ty(ty)?;
        if s.is_float()
            && matches!(f, MathFn::Min | MathFn::Max)
            && vals.len() == 2
            && self.arch().kind() == TargetKind::Cpu
        {
            // minNum/maxNum as compare and select: LLVM may otherwise call libm's
            // `fminf`, which a CPU code object does not link.
            let (a, b) = (&vals[0], &vals[1]);
            let cmp = if f == MathFn::Min { "olt" } else { "ogt" };
            let better = self.def(&format!("fcmp {cmp} {t} {b}, {a}"));
            let a_nan = self.def(&format!("fcmp uno {t} {a}, {a}"));
            let take_b = self.def(&format!("or i1 {better}, {a_nan}"));
            return Ok(self.def(&format!("select i1 {take_b}, {t} {b}, {t} {a}")));
        }
        let sfx = types::suffix(ty)?;
        let (name, extra) = match (f, s.is_float(), vals.len()) {
            (MathFn::Sqrt, true, 1) => ("sqrt", ""),
            (MathFn::Abs, true, 1) => ("fabs", ""),
            (MathFn::Min, true, 2) => ("minnum", ""),
            (MathFn::Max, true, 2) => ("maxnum", ""),
            (MathFn::Abs, false, 1) if s.is_signed() => ("abs", ", i1 false"),
            (MathFn::Abs, false, 1) if s.is_int() => return Ok(vals.remove(0)),
            (MathFn::Min, false, 2) if s.is_int() => {
                (if s.is_signed() { "smin" } else { "umin" }, "")
            }
            (MathFn::Max, false, 2) if s.is_int() => {
                (if s.is_signed() { "smax" } else { "umax" }, "")
            }
            _ => {
                return Err(format!(
                    "{f:?} with {} argument(s) is not defined on `{ty}`",
                    vals.len()
                ))
            }
        };
        let full = format!("llvm.{name}.{sfx}");
        let params: Vec<&str> = vals.iter().map(|_| t.as_str()).collect();
        let mut decl_params = params.join(", ");
        if !extra.is_empty() {
            decl_params.push_str(", i1");
        }
        self.m.declare(&full, &t, &decl_params);
        let ops: Vec<String> = vals.iter().map(|v| format!("{t} {v}")).collect();
        Ok(self.def(&format!("call {t} @{full}({}{extra})", ops.join(", "))))
    }
}

/// An intrinsic handed to a family's lowering that is not of that family (the intrinsic
/// table and the dispatch disagree: a compiler bug, reported as an error).
pub(super) fn not_in_family(op: &Intrinsic) -> String {
    format!(
        "internal: {op:?} lowered as a member of the wrong family ({:?})",
        op.family()
    )
}
