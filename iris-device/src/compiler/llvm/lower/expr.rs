//! Arithmetic, bitwise, comparison and logical operators on scalars and vectors.
//!
//! Integer arithmetic wraps (no `nsw`/`nuw`), division and shifts follow the signedness of
//! the type, shift amounts are masked to the bit width (`wrapping_shl`), float `%` is the
//! exact remainder, `&&`/`||` short-circuit.

use super::super::super::kernel_ir::{BinaryOp, Expr, Scalar, Type, UnaryOp};
use super::builder::FnBuilder;
use super::helpers::Helper;
use super::types;

impl FnBuilder<'_> {
    /// `-x`, `!x`.
    pub fn unary(&mut self, op: UnaryOp, x: &Expr, ty: &Type) -> Result<String, String> {
        let v = self.expr(x)?;
        let s = types::elem_scalar(ty).ok_or_else(|| format!("unary operator on `{ty}`"))?;
        let t = self.reg_ty(ty)?;
        match op {
            UnaryOp::Neg if s.is_float() => Ok(self.def(&format!("fneg {t} {v}"))),
            UnaryOp::Neg if s.is_int() => {
                let zero = splat(ty, "0");
                Ok(self.def(&format!("sub {t} {zero}, {v}")))
            }
            UnaryOp::Not if s.is_int() || s == Scalar::Bool => {
                let ones = splat(ty, if s == Scalar::Bool { "true" } else { "-1" });
                Ok(self.def(&format!("xor {t} {v}, {ones}")))
            }
            _ => Err(format!("operator {op:?} is not defined on `{ty}`")),
        }
    }

    /// A binary expression.
    pub fn binary(
        &mut self,
        op: BinaryOp,
        l: &Expr,
        r: &Expr,
        ty: &Type,
    ) -> Result<String, String> {
        if op.is_logical() {
            return self.short_circuit(op == BinaryOp::And, l, r);
        }
        let a = self.expr(l)?;
        let b = self.expr(r)?;
        self.binary_values(op, &a, &l.ty, &b, &r.ty, ty)
    }

    /// `a && b` / `a || b`: `b` runs only when it decides the result.
    fn short_circuit(&mut self, is_and: bool, l: &Expr, r: &Expr) -> Result<String, String> {
        let a = self.expr(l)?;
        let from = self.current_block().to_string();
        let rhs_l = self.label(if is_and { "and.rhs" } else { "or.rhs" });
        let end_l = self.label(if is_and { "and.end" } else { "or.end" });
        if is_and {
            self.cond_br(&a, &rhs_l, &end_l);
        } else {
            self.cond_br(&a, &end_l, &rhs_l);
        }
        self.start_block(&rhs_l);
        let b = self.expr(r)?;
        let mut arms = vec![format!(
            "[ {}, %{from} ]",
            if is_and { "false" } else { "true" }
        )];
        if !self.is_terminated() {
            arms.push(format!("[ {b}, %{} ]", self.current_block()));
        }
        self.start_block(&end_l);
        Ok(self.def(&format!("phi i1 {}", arms.join(", "))))
    }

    /// Applies a (non-logical) binary operator to two lowered operands.
    pub fn binary_values(
        &mut self,
        op: BinaryOp,
        a: &str,
        aty: &Type,
        b: &str,
        bty: &Type,
        _result: &Type,
    ) -> Result<String, String> {
        if op.is_logical() {
            let name = if op == BinaryOp::And { "and" } else { "or" };
            return Ok(self.def(&format!("{name} i1 {a}, {b}")));
        }
        if op.is_comparison() {
            return self.compare(op, a, b, aty);
        }
        let s = types::elem_scalar(aty).ok_or_else(|| format!("`{op:?}` on `{aty}`"))?;
        let t = self.reg_ty(aty)?;
        if op.is_shift() {
            return self.shift(op, a, aty, s, b, bty);
        }
        let name = if s.is_float() {
            match op {
                BinaryOp::Add => "fadd",
                BinaryOp::Sub => "fsub",
                BinaryOp::Mul => "fmul",
                BinaryOp::Div => "fdiv",
                BinaryOp::Rem => return self.float_rem(a, b, aty),
                _ => return Err(format!("`{op:?}` is not defined on `{aty}`")),
            }
        } else {
            let int_only =
                !s.is_int() && !matches!(op, BinaryOp::BitAnd | BinaryOp::BitOr | BinaryOp::BitXor);
            if int_only {
                return Err(format!("`{op:?}` is not defined on `{aty}`"));
            }
            match op {
                BinaryOp::Add => "add",
                BinaryOp::Sub => "sub",
                BinaryOp::Mul => "mul",
                BinaryOp::Div if s.is_signed() => "sdiv",
                BinaryOp::Div => "udiv",
                BinaryOp::Rem if s.is_signed() => "srem",
                BinaryOp::Rem => "urem",
                BinaryOp::BitAnd => "and",
                BinaryOp::BitOr => "or",
                BinaryOp::BitXor => "xor",
                _ => return Err(format!("`{op:?}` is not defined on `{aty}`")),
            }
        };
        Ok(self.def(&format!("{name} {t} {a}, {b}")))
    }

    /// `<<` / `>>`: the amount converted to the value's width and masked to it.
    fn shift(
        &mut self,
        op: BinaryOp,
        a: &str,
        aty: &Type,
        s: Scalar,
        b: &str,
        bty: &Type,
    ) -> Result<String, String> {
        let bs = types::elem_scalar(bty).filter(|x| x.is_int());
        let (Some(bs), true) = (bs, s.is_int()) else {
            return Err(format!("shift of `{aty}` by `{bty}`"));
        };
        if matches!(aty, Type::Vector(_)) != matches!(bty, Type::Vector(_)) {
            return Err(format!("shift of `{aty}` by `{bty}`"));
        }
        let t = self.reg_ty(aty)?;
        let bt = self.reg_ty(bty)?;
        let (bits, bbits) = (s.size() * 8, bs.size() * 8);
        let amount = if bbits > bits {
            self.def(&format!("trunc {bt} {b} to {t}"))
        } else if bbits < bits {
            self.def(&format!("zext {bt} {b} to {t}"))
        } else {
            b.to_string()
        };
        let mask = splat(aty, &(bits - 1).to_string());
        let masked = self.def(&format!("and {t} {amount}, {mask}"));
        let name = match op {
            BinaryOp::Shl => "shl",
            _ if s.is_signed() => "ashr",
            _ => "lshr",
        };
        Ok(self.def(&format!("{name} {t} {a}, {masked}")))
    }

    /// `==`, `<`, ...: on integers by signedness, floats ordered (`!=` unordered), bools
    /// and pointers unsigned; vectors compare equal when every lane does.
    fn compare(&mut self, op: BinaryOp, a: &str, b: &str, ty: &Type) -> Result<String, String> {
        let t = self.reg_ty(ty)?;
        let (is_float, signed) = match ty {
            Type::Ptr { .. } => (false, false),
            _ => {
                let s = types::elem_scalar(ty).ok_or_else(|| format!("comparison of `{ty}`"))?;
                (s.is_float(), s.is_signed())
            }
        };
        let pred = match (op, is_float, signed) {
            (BinaryOp::Eq, true, _) => "oeq",
            (BinaryOp::Ne, true, _) => "une",
            (BinaryOp::Lt, true, _) => "olt",
            (BinaryOp::Le, true, _) => "ole",
            (BinaryOp::Gt, true, _) => "ogt",
            (BinaryOp::Ge, true, _) => "oge",
            (BinaryOp::Eq, false, _) => "eq",
            (BinaryOp::Ne, false, _) => "ne",
            (BinaryOp::Lt, false, true) => "slt",
            (BinaryOp::Le, false, true) => "sle",
            (BinaryOp::Gt, false, true) => "sgt",
            (BinaryOp::Ge, false, true) => "sge",
            (BinaryOp::Lt, false, false) => "ult",
            (BinaryOp::Le, false, false) => "ule",
            (BinaryOp::Gt, false, false) => "ugt",
            (BinaryOp::Ge, false, false) => "uge",
            _ => return Err(format!("`{op:?}` is not a comparison")),
        };
        let inst = if is_float { "fcmp" } else { "icmp" };
        if let Type::Vector(v) = ty {
            if !matches!(op, BinaryOp::Eq | BinaryOp::Ne) {
                return Err(format!("`{op:?}` is not defined on `{ty}`"));
            }
            // Lane-wise equality, all lanes equal.
            let eq_pred = if is_float { "oeq" } else { "eq" };
            let lanes = self.def(&format!("{inst} {eq_pred} {t} {a}, {b}"));
            let name = format!("llvm.vector.reduce.and.v{}i1", v.lanes);
            let vt = format!("<{} x i1>", v.lanes);
            self.m.declare(&name, "i1", &vt);
            let all = self.def(&format!("call i1 @{name}({vt} {lanes})"));
            return Ok(if op == BinaryOp::Eq {
                all
            } else {
                self.def(&format!("xor i1 {all}, true"))
            });
        }
        Ok(self.def(&format!("{inst} {pred} {t} {a}, {b}")))
    }

    /// Float `%`: the exact remainder helper (16-bit floats through `f32`, vectors lane by
    /// lane).
    fn float_rem(&mut self, a: &str, b: &str, ty: &Type) -> Result<String, String> {
        match ty {
            Type::Scalar(s) => self.scalar_rem(a, b, *s),
            Type::Vector(v) => {
                let t = types::vector_ty(*v);
                let et = types::scalar_ty(v.elem);
                let mut acc = "poison".to_string();
                for lane in 0..v.lanes {
                    let x = self.def(&format!("extractelement {t} {a}, i32 {lane}"));
                    let y = self.def(&format!("extractelement {t} {b}, i32 {lane}"));
                    let r = self.scalar_rem(&x, &y, v.elem)?;
                    acc = self.def(&format!("insertelement {t} {acc}, {et} {r}, i32 {lane}"));
                }
                Ok(acc)
            }
            other => Err(format!("`%` is not defined on `{other}`")),
        }
    }

    fn scalar_rem(&mut self, a: &str, b: &str, s: Scalar) -> Result<String, String> {
        match s {
            Scalar::F32 | Scalar::F64 => {
                let (h, t) = if s == Scalar::F32 {
                    (Helper::FmodF32, "float")
                } else {
                    (Helper::FmodF64, "double")
                };
                let f = self.m.helper(h);
                Ok(self.def(&format!("call {t} {f}({t} {a}, {t} {b})")))
            }
            Scalar::F16 | Scalar::BF16 => {
                let t = types::scalar_ty(s);
                let x = self.def(&format!("fpext {t} {a} to float"));
                let y = self.def(&format!("fpext {t} {b} to float"));
                let r = self.scalar_rem(&x, &y, Scalar::F32)?;
                Ok(self.def(&format!("fptrunc float {r} to {t}")))
            }
            other => Err(format!("float remainder of `{}`", other.name())),
        }
    }
}

/// A constant of `ty` with every lane `lit` (the scalar itself for scalars).
pub(super) fn splat(ty: &Type, lit: &str) -> String {
    match ty {
        Type::Vector(v) => format!("splat ({} {lit})", types::scalar_ty(v.elem)),
        _ => lit.to_string(),
    }
}
