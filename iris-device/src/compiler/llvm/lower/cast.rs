//! `as` casts, with Rust's semantics: integers truncate or extend by the source's
//! signedness, float to integer saturates (NaN is 0), pointers reinterpret, and pointers and
//! integers convert through 64 bits.

use super::super::super::kernel_ir::{Scalar, Type};
use super::builder::FnBuilder;
use super::types;

impl FnBuilder<'_> {
    /// Converts `v` of type `from` to `to`.
    pub fn cast(&mut self, v: &str, from: &Type, to: &Type) -> Result<String, String> {
        if from == to || matches!(from, Type::Never) {
            return Ok(v.to_string());
        }
        match (from, to) {
            (Type::Scalar(a), Type::Scalar(b)) => self.scalar_cast(v, *a, *b),
            (Type::Ptr { .. }, Type::Ptr { .. }) => Ok(v.to_string()),
            (Type::Ptr { .. }, Type::Scalar(s)) if s.is_int() => {
                let i = self.def(&format!("ptrtoint ptr {v} to i64"));
                self.scalar_cast(&i, Scalar::U64, *s)
            }
            (Type::Scalar(s), Type::Ptr { .. }) if s.is_int() || *s == Scalar::Bool => {
                let i = self.scalar_cast(v, *s, Scalar::U64)?;
                Ok(self.def(&format!("inttoptr i64 {i} to ptr")))
            }
            (Type::Symmetric(_), Type::Symmetric(_)) => Ok(v.to_string()),
            (Type::Vector(a), Type::Vector(b))
                if a.elem.size() * a.lanes == b.elem.size() * b.lanes =>
            {
                // Same 16 bytes, other lanes (a bit cast).
                let (ta, tb) = (types::vector_ty(*a), types::vector_ty(*b));
                Ok(self.def(&format!("bitcast {ta} {v} to {tb}")))
            }
            _ => Err(format!("cast from `{from}` to `{to}` is not supported")),
        }
    }

    /// A numeric cast between scalars.
    pub fn scalar_cast(&mut self, v: &str, from: Scalar, to: Scalar) -> Result<String, String> {
        if from == to {
            return Ok(v.to_string());
        }
        let (ft, tt) = (types::scalar_ty(from), types::scalar_ty(to));
        if from.is_float() || to.is_float() {
            self.m.uses_half |= [from, to]
                .iter()
                .any(|s| matches!(s, Scalar::F16 | Scalar::BF16));
        }
        let int_like = |s: Scalar| s.is_int() || s == Scalar::Bool;
        if int_like(from) && to == Scalar::Bool {
            return Ok(self.def(&format!("icmp ne {ft} {v}, 0")));
        }
        if int_like(from) && int_like(to) {
            let (fb, tb) = (types::int_bits(from), types::int_bits(to));
            let op = if tb < fb {
                "trunc"
            } else if tb == fb {
                return Ok(v.to_string());
            } else if from.is_signed() {
                "sext"
            } else {
                "zext"
            };
            return Ok(self.def(&format!("{op} {ft} {v} to {tt}")));
        }
        if int_like(from) && to.is_float() {
            let op = if from.is_signed() { "sitofp" } else { "uitofp" };
            return Ok(self.def(&format!("{op} {ft} {v} to {tt}")));
        }
        if from.is_float() && to.is_int() {
            let kind = if to.is_signed() { "fptosi" } else { "fptoui" };
            let name = format!(
                "llvm.{kind}.sat.{}.{}",
                types::scalar_suffix(to),
                types::scalar_suffix(from)
            );
            self.m.declare(&name, tt, ft);
            return Ok(self.def(&format!("call {tt} @{name}({ft} {v})")));
        }
        if from.is_float() && to.is_float() {
            if from.size() == to.size() {
                // f16 <-> bf16: through f32, which holds both exactly.
                let wide = self.def(&format!("fpext {ft} {v} to float"));
                return Ok(self.def(&format!("fptrunc float {wide} to {tt}")));
            }
            let op = if to.size() > from.size() {
                "fpext"
            } else {
                "fptrunc"
            };
            return Ok(self.def(&format!("{op} {ft} {v} to {tt}")));
        }
        Err(format!(
            "cast from `{}` to `{}` is not supported",
            from.name(),
            to.name()
        ))
    }
}
