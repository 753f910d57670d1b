//! Type inference for unsuffixed literals: `let mut i = 0; while i < n` makes `i` a `u64`
//! when `n` is one, as rustc does. Literals start as variables, unification binds them,
//! and unbound ones default to `i32` and `f64`.

use super::super::kernel_ir::{Scalar, StructType, Type};
use super::super::CompileError;
use proc_macro2::Span;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum VarKind {
    Int,
    Float,
}

#[derive(Clone, Debug)]
enum Binding {
    /// Points at another variable of the same kind.
    Link(u32),
    /// Not yet known.
    Free,
    /// Known.
    Bound(Scalar),
}

/// The inference variables of one function.
#[derive(Default, Debug)]
pub struct InferTable {
    vars: Vec<(VarKind, Binding)>,
}

impl InferTable {
    /// A fresh integer-literal variable.
    pub fn new_int(&mut self) -> Type {
        self.vars.push((VarKind::Int, Binding::Free));
        Type::IntVar(self.vars.len() as u32 - 1)
    }

    /// A fresh float-literal variable.
    pub fn new_float(&mut self) -> Type {
        self.vars.push((VarKind::Float, Binding::Free));
        Type::FloatVar(self.vars.len() as u32 - 1)
    }

    fn root(&self, mut v: u32) -> u32 {
        while let Some((_, Binding::Link(next))) = self.vars.get(v as usize) {
            v = *next;
        }
        v
    }

    /// The type as far as it is known now (variables replaced by what they are bound to).
    pub fn shallow(&self, ty: &Type) -> Type {
        match ty {
            Type::IntVar(v) | Type::FloatVar(v) => {
                let r = self.root(*v);
                match &self.vars[r as usize] {
                    (_, Binding::Bound(s)) => Type::Scalar(*s),
                    (VarKind::Int, _) => Type::IntVar(r),
                    (VarKind::Float, _) => Type::FloatVar(r),
                }
            }
            other => other.clone(),
        }
    }

    /// The final type: unbound integer variables become `i32`, float ones `f64`.
    pub fn resolve(&self, ty: &Type) -> Type {
        match self.shallow(ty) {
            Type::IntVar(_) => Type::Scalar(Scalar::I32),
            Type::FloatVar(_) => Type::Scalar(Scalar::F64),
            Type::Ptr { pointee, mutable } => Type::Ptr {
                pointee: Box::new(self.resolve(&pointee)),
                mutable,
            },
            Type::Symmetric(t) => Type::Symmetric(Box::new(self.resolve(&t))),
            Type::Array { elem, len } => Type::Array {
                elem: Box::new(self.resolve(&elem)),
                len,
            },
            Type::Struct(st) => Type::Struct(st.map_fields(|t| self.resolve(t))),
            other => other,
        }
    }

    /// The type as far as it is known now, all the way down (free variables stay).
    pub fn known(&self, ty: &Type) -> Type {
        match self.shallow(ty) {
            Type::Ptr { pointee, mutable } => Type::Ptr {
                pointee: Box::new(self.known(&pointee)),
                mutable,
            },
            Type::Symmetric(t) => Type::Symmetric(Box::new(self.known(&t))),
            Type::Array { elem, len } => Type::Array {
                elem: Box::new(self.known(&elem)),
                len,
            },
            Type::Struct(st) => Type::Struct(st.map_fields(|t| self.known(t))),
            other => other,
        }
    }

    /// Makes `a` and `b` the same type, or says why they cannot be. Returns the unified type.
    /// `Never` unifies with anything.
    pub fn unify(&mut self, a: &Type, b: &Type, span: Span) -> Result<Type, CompileError> {
        let a = self.shallow(a);
        let b = self.shallow(b);
        match (&a, &b) {
            (Type::Never, _) => Ok(b),
            (_, Type::Never) => Ok(a),
            (x, y) if x == y => Ok(a),
            (Type::IntVar(x), Type::IntVar(y)) | (Type::FloatVar(x), Type::FloatVar(y)) => {
                self.vars[*x as usize].1 = Binding::Link(*y);
                Ok(b)
            }
            (Type::IntVar(v), Type::Scalar(s)) | (Type::Scalar(s), Type::IntVar(v))
                if s.is_int() =>
            {
                self.vars[*v as usize].1 = Binding::Bound(*s);
                Ok(Type::Scalar(*s))
            }
            (Type::FloatVar(v), Type::Scalar(s)) | (Type::Scalar(s), Type::FloatVar(v))
                if s.is_float() =>
            {
                self.vars[*v as usize].1 = Binding::Bound(*s);
                Ok(Type::Scalar(*s))
            }
            (
                Type::Ptr {
                    pointee: p,
                    mutable: m,
                },
                Type::Ptr {
                    pointee: q,
                    mutable: n,
                },
            ) if m == n => {
                let t = self.unify(p, q, span)?;
                Ok(Type::Ptr {
                    pointee: Box::new(t),
                    mutable: *m,
                })
            }
            (Type::Struct(x), Type::Struct(y))
                if x.name == y.name && x.fields.len() == y.fields.len() =>
            {
                let mut fields = Vec::with_capacity(x.fields.len());
                for ((name, p), (_, q)) in x.fields.iter().zip(&y.fields) {
                    fields.push((name.clone(), self.unify(p, q, span)?));
                }
                Ok(Type::Struct(StructType {
                    name: x.name.clone(),
                    fields,
                }))
            }
            (Type::Array { elem: p, len: m }, Type::Array { elem: q, len: n }) if m == n => {
                let t = self.unify(p, q, span)?;
                Ok(Type::Array {
                    elem: Box::new(t),
                    len: *m,
                })
            }
            _ => Err(CompileError::new(
                span,
                format!(
                    "mismatched types: expected `{}`, found `{}`",
                    self.describe(&b),
                    self.describe(&a)
                ),
            )),
        }
    }

    /// The type for messages.
    pub fn describe(&self, ty: &Type) -> String {
        match self.shallow(ty) {
            Type::Ptr { pointee, mutable } => {
                format!(
                    "*{} {}",
                    if mutable { "mut" } else { "const" },
                    self.describe(&pointee)
                )
            }
            Type::Symmetric(t) => format!("Symmetric<{}>", self.describe(&t)),
            Type::Array { elem, len } => format!("[{}; {len}]", self.describe(&elem)),
            other => other.to_string(),
        }
    }

    /// Integer (or integer variable).
    pub fn is_int(&self, ty: &Type) -> bool {
        match self.shallow(ty) {
            Type::IntVar(_) => true,
            Type::Scalar(s) => s.is_int(),
            _ => false,
        }
    }

    /// Float (or float variable).
    pub fn is_float(&self, ty: &Type) -> bool {
        match self.shallow(ty) {
            Type::FloatVar(_) => true,
            Type::Scalar(s) => s.is_float(),
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_takes_the_type_it_meets() {
        let mut t = InferTable::default();
        let i = t.new_int();
        let j = t.new_int();
        t.unify(&i, &j, Span::call_site()).unwrap();
        t.unify(&j, &Type::Scalar(Scalar::U64), Span::call_site())
            .unwrap();
        assert_eq!(t.resolve(&i), Type::Scalar(Scalar::U64));
        let f = t.new_float();
        assert_eq!(t.resolve(&f), Type::Scalar(Scalar::F64));
        assert!(t
            .unify(&f, &Type::Scalar(Scalar::U32), Span::call_site())
            .is_err());
        let k = t.new_int();
        assert_eq!(t.resolve(&k), Type::Scalar(Scalar::I32));
    }
}
