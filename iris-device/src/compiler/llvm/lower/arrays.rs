//! Register arrays: locals of type `[T; N]` live in their entry-block `alloca`; an element
//! is reached with `getelementptr` and indices that are constant once loops are unrolled
//! (the frontend checks that), so SROA and the targets' alloca promotion keep every
//! element in a register. `for` loops over constant ranges that index arrays carry
//! `llvm.loop.unroll.full`.

use super::super::super::kernel_ir::{Block, Expr, ExprKind, LocalId, Type};
use super::builder::FnBuilder;
use super::types;

/// Loops longer than this are left to LLVM's own unrolling heuristics.
const MAX_FORCED_UNROLL: i128 = 1024;

impl FnBuilder<'_> {
    /// `[value; len]` as an aggregate value.
    pub fn array_repeat(&mut self, ty: &Type, value: &Expr, len: u64) -> Result<String, String> {
        let v = self.expr(value)?;
        let elems = vec![v; len as usize];
        self.array_value(ty, &value.ty, &elems)
    }

    /// `[a, b, c]` as an aggregate value.
    pub fn array_list(&mut self, ty: &Type, list: &[Expr]) -> Result<String, String> {
        let elem_ty = list.first().map(|e| e.ty.clone()).unwrap_or(Type::Unit);
        let mut elems = Vec::with_capacity(list.len());
        for e in list {
            elems.push(self.expr(e)?);
        }
        self.array_value(ty, &elem_ty, &elems)
    }

    /// `(a, b)` or `S { .. }` as an aggregate value, its fields in declaration order.
    pub fn aggregate(&mut self, ty: &Type, fields: &[Expr]) -> Result<String, String> {
        let t = self.reg_ty(ty)?;
        let mut acc = "poison".to_string();
        for (i, f) in fields.iter().enumerate() {
            let v = self.expr(f)?;
            let ft = self.reg_ty(&f.ty)?;
            acc = self.def(&format!("insertvalue {t} {acc}, {ft} {v}, {i}"));
        }
        Ok(acc)
    }

    fn array_value(&mut self, ty: &Type, elem: &Type, elems: &[String]) -> Result<String, String> {
        let t = self.reg_ty(ty)?;
        let et = self.reg_ty(elem)?;
        let mut acc = "poison".to_string();
        for (i, v) in elems.iter().enumerate() {
            acc = self.def(&format!("insertvalue {t} {acc}, {et} {v}, {i}"));
        }
        Ok(acc)
    }

    /// The address of `array[indices..]`.
    pub fn element_ptr(&mut self, array: LocalId, indices: &[Expr]) -> Result<String, String> {
        let slot = self
            .slot(array)?
            .ok_or_else(|| format!("array local #{array} has no slot"))?;
        let mut ops = vec!["i64 0".to_string()];
        for i in indices {
            let v = self.expr(i)?;
            let it = self.reg_ty(&i.ty)?;
            let v = if it == "i64" {
                v
            } else {
                self.def(&format!("zext {it} {v} to i64"))
            };
            ops.push(format!("i64 {v}"));
        }
        let p = self.arch().private_ptr();
        Ok(self.def(&format!(
            "getelementptr inbounds {}, {p} {}, {}",
            slot.ty,
            slot.ptr,
            ops.join(", ")
        )))
    }

    /// Reads `array[indices..]` (an element of type `ty`).
    pub fn index_read(
        &mut self,
        ty: &Type,
        array: LocalId,
        indices: &[Expr],
    ) -> Result<String, String> {
        let ptr = self.element_ptr(array, indices)?;
        self.index_load_at(ty, &ptr)
    }

    /// Reads the element of type `ty` at `ptr` (from [`element_ptr`](Self::element_ptr)).
    pub fn index_load_at(&mut self, ty: &Type, ptr: &str) -> Result<String, String> {
        let t = self.reg_ty(ty)?;
        let align = types::align_of(ty)?;
        let p = self.arch().private_ptr();
        Ok(self.def(&format!("load {t}, {p} {ptr}, align {align}")))
    }

    /// Writes `value` to the element of type `ty` at `ptr`.
    pub fn index_write(&mut self, ty: &Type, ptr: &str, value: &str) -> Result<(), String> {
        let t = self.reg_ty(ty)?;
        let align = types::align_of(ty)?;
        let p = self.arch().private_ptr();
        self.inst(&format!("store {t} {value}, {p} {ptr}, align {align}"));
        Ok(())
    }
}

/// Whether a `for` loop from `start` to `end` with `body` is unrolled fully: its range is
/// constant and not long, and its body indexes an array.
pub(super) fn unroll_fully(start: &Expr, end: &Expr, inclusive: bool, body: &Block) -> bool {
    let (Some(lo), Some(hi)) = (constant(start), constant(end)) else {
        return false;
    };
    let trips = if inclusive { hi - lo + 1 } else { hi - lo };
    if trips > MAX_FORCED_UNROLL {
        return false;
    }
    let mut indexes = false;
    body.walk(&mut |e| {
        if matches!(e.kind, ExprKind::Index { .. })
            || matches!(&e.kind, ExprKind::Assign { place, .. } if matches!(**place, super::super::super::kernel_ir::Place::Index { .. }))
        {
            indexes = true;
        }
    });
    indexes
}

fn constant(e: &Expr) -> Option<i128> {
    match &e.kind {
        ExprKind::Int(v) => i128::try_from(*v).ok(),
        ExprKind::Cast(x) => constant(x),
        _ => None,
    }
}
