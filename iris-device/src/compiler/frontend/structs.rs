//! Tuples and the structs of a unit's module: their types, values (`(a, b)`,
//! `S { x: a, y: b }`), fields (`t.0`, `s.x`, read, and assigned on a local), and tuples
//! taken apart by `let (a, b) = f(..)`.
//!
//! A struct is declared in the `#[iris::kernels]` module (`#[derive(Clone, Copy)] struct S
//! { x: f32, n: u32 }`) with fields of kernel value types; kernels and device functions
//! use it by name. The unit's structs are known while it is built (a thread-local table,
//! set by [`with_structs`]), so that every place that reads a type sees them.

use std::cell::RefCell;
use std::collections::HashMap;

use syn::spanned::Spanned;

use super::super::kernel_ir::Expr;
use super::super::kernel_ir::{ExprKind, Place, StructType, Type};
use super::super::CompileError;
use super::builder::FnBuilder;
use super::types::parse_type;

thread_local! {
    /// The structs of the unit being built, by name.
    static STRUCTS: RefCell<HashMap<String, Type>> = RefCell::new(HashMap::new());
}

/// Runs `build` with `items` as the unit's structs (checked first: named fields of kernel
/// value types, `#[derive(Clone, Copy)]`, no generics).
pub fn with_structs<R>(
    items: &[syn::ItemStruct],
    build: impl FnOnce() -> Result<R, Vec<CompileError>>,
) -> Result<R, Vec<CompileError>> {
    STRUCTS.with(|s| s.borrow_mut().clear());
    let mut errors = Vec::new();
    // In declaration order: a struct's fields may name the structs declared before it.
    for item in items {
        match struct_type(item) {
            Ok(ty) => {
                let name = item.ident.to_string();
                if STRUCTS.with(|s| s.borrow_mut().insert(name, ty)).is_some() {
                    errors.push(CompileError::new(
                        item.ident.span(),
                        format!("the struct `{}` is declared twice", item.ident),
                    ));
                }
            }
            Err(e) => errors.push(e),
        }
    }
    if !errors.is_empty() {
        STRUCTS.with(|s| s.borrow_mut().clear());
        return Err(errors);
    }
    let result = build();
    STRUCTS.with(|s| s.borrow_mut().clear());
    result
}

/// The struct named `name` of the unit being built.
pub fn lookup(name: &str) -> Option<Type> {
    STRUCTS.with(|s| s.borrow().get(name).cloned())
}

fn struct_type(item: &syn::ItemStruct) -> Result<Type, CompileError> {
    if !item.generics.params.is_empty() {
        return Err(CompileError::new(
            item.generics.span(),
            "a struct of a kernels module has no generic parameters",
        ));
    }
    if !derives_copy(item) {
        return Err(CompileError::new(
            item.ident.span(),
            format!(
                "kernels copy struct values: add `#[derive(Clone, Copy)]` to `{}`",
                item.ident
            ),
        ));
    }
    let syn::Fields::Named(named) = &item.fields else {
        return Err(CompileError::new(
            item.fields.span(),
            "a struct of a kernels module has named fields: `struct S { x: f32, n: u32 }`",
        ));
    };
    let mut fields = Vec::new();
    for f in &named.named {
        let ty = parse_type(&f.ty)?;
        if !is_value_type(&ty) {
            return Err(CompileError::new(
                f.ty.span(),
                format!("a struct field holds a number, a vector, a pointer, a `Symmetric<T>`, an array or another struct, not `{ty}`"),
            ));
        }
        let name = f
            .ident
            .as_ref()
            .map(ToString::to_string)
            .unwrap_or_default();
        fields.push((name, ty));
    }
    if fields.is_empty() {
        return Err(CompileError::new(
            item.ident.span(),
            "a struct of a kernels module has at least one field",
        ));
    }
    Ok(Type::Struct(StructType {
        name: Some(item.ident.to_string()),
        fields,
    }))
}

fn derives_copy(item: &syn::ItemStruct) -> bool {
    item.attrs.iter().any(|a| {
        a.path().is_ident("derive")
            && a.parse_args_with(
                syn::punctuated::Punctuated::<syn::Path, syn::Token![,]>::parse_terminated,
            )
            .is_ok_and(|list| list.iter().any(|p| p.is_ident("Copy")))
    })
}

/// What a field, a tuple element or a struct value may hold.
pub fn is_value_type(ty: &Type) -> bool {
    matches!(
        ty,
        Type::Scalar(_)
            | Type::Vector(_)
            | Type::Ptr { .. }
            | Type::Symmetric(_)
            | Type::Array { .. }
            | Type::Struct(_)
    )
}

/// Whether a kernel may take `ty` (a struct) by value: the host passes its bytes as
/// they are, so it is a struct (not a tuple) of numbers other than `bool`, 16-byte vectors
/// and such structs, without padding (`Err` says why not).
pub fn kernel_parameter(ty: &Type) -> Result<(), String> {
    let Type::Struct(st) = ty else {
        return Ok(());
    };
    let Some(name) = &st.name else {
        return Err(format!(
            "kernels do not take tuples: pass `{ty}`'s values as parameters, or a struct"
        ));
    };
    for (field, t) in &st.fields {
        match t {
            Type::Scalar(s) if *s != super::super::kernel_ir::Scalar::Bool => {}
            Type::Vector(_) => {}
            Type::Struct(_) => kernel_parameter(t)?,
            other => {
                return Err(format!(
                    "a kernel takes `{name}` by value only if its fields are numbers (not `bool`), 16-byte vectors or such structs; `{field}` is `{other}` (pass it as its own parameter)"
                ))
            }
        }
    }
    let fields: u32 = st.fields.iter().filter_map(|(_, t)| t.size()).sum();
    if ty.size() != Some(fields) {
        return Err(format!(
            "a kernel takes `{name}` by value only without padding: its fields take {fields} bytes, its layout {} (order the fields largest first, or add explicit padding fields)",
            ty.size().unwrap_or(0)
        ));
    }
    Ok(())
}

impl FnBuilder<'_> {
    /// `(a, b, ..)`: a tuple of its values.
    pub fn tuple_expr(&mut self, t: &syn::ExprTuple) -> Result<Expr, CompileError> {
        let mut elems = Vec::new();
        for e in &t.elems {
            let v = self.expr_tree(e)?;
            let ty = self.infer.shallow(&v.ty);
            if matches!(ty, Type::Unit | Type::Never | Type::Fragment(_)) {
                return Err(CompileError::new(
                    e.span(),
                    format!("a tuple holds values (numbers, vectors, pointers, arrays, structs), not `{}`", self.infer.describe(&ty)),
                ));
            }
            elems.push(v);
        }
        let ty = Type::Struct(StructType::tuple(
            elems.iter().map(|e| e.ty.clone()).collect(),
        ));
        Ok(self.expr(ExprKind::Aggregate(elems), ty, t.span()))
    }

    /// `S { x: a, y: b }`: every field once, in any order (no `..base`).
    pub fn struct_expr(&mut self, s: &syn::ExprStruct) -> Result<Expr, CompileError> {
        let name = s
            .path
            .get_ident()
            .map(ToString::to_string)
            .unwrap_or_default();
        let Some(Type::Struct(st)) = lookup(&name) else {
            return Err(CompileError::new(
                s.path.span(),
                format!("`{}` is not a struct of this kernels module: declare it there, with `#[derive(Clone, Copy)]`", quote::quote!(#s.path)),
            ));
        };
        if let Some(rest) = &s.rest {
            return Err(CompileError::new(
                rest.span(),
                "`..base` is not supported in kernels: name every field",
            ));
        }
        let mut values: Vec<Option<Expr>> = vec![None; st.fields.len()];
        for fv in &s.fields {
            let member = match &fv.member {
                syn::Member::Named(i) => i.to_string(),
                syn::Member::Unnamed(i) => i.index.to_string(),
            };
            let Some(index) = st.field(&member) else {
                return Err(CompileError::new(
                    fv.member.span(),
                    format!(
                        "`{name}` has no field `{member}`; it has {}",
                        field_list(&st)
                    ),
                ));
            };
            if values[index].is_some() {
                return Err(CompileError::new(
                    fv.member.span(),
                    format!("the field `{member}` is given twice"),
                ));
            }
            let v = self.expr_tree(&fv.expr)?;
            self.expect(&v, &st.fields[index].1)?;
            values[index] = Some(v);
        }
        let mut fields = Vec::with_capacity(values.len());
        for (i, v) in values.into_iter().enumerate() {
            match v {
                Some(v) => fields.push(v),
                None => {
                    return Err(CompileError::new(
                        s.span(),
                        format!("the field `{}` of `{name}` is missing", st.fields[i].0),
                    ))
                }
            }
        }
        Ok(self.expr(ExprKind::Aggregate(fields), Type::Struct(st), s.span()))
    }

    /// `t.0`, `s.x`: a field of a tuple or struct value.
    pub fn field_expr(&mut self, f: &syn::ExprField) -> Result<Expr, CompileError> {
        let base = self.expr_tree(&f.base)?;
        let (index, ty) = self.field_of(&base.ty, &f.member)?;
        Ok(self.expr(
            ExprKind::Field {
                base: Box::new(base),
                index,
            },
            ty,
            f.span(),
        ))
    }

    /// `s.x = ..` on a `mut` local `s`.
    pub fn field_place(&mut self, f: &syn::ExprField) -> Result<(Place, Type), CompileError> {
        let usage = "assign a field of a local tuple or struct (`s.x = ..`); for a field of a field, assign the inner value whole";
        let syn::Expr::Path(p) = &*f.base else {
            return Err(CompileError::new(f.base.span(), usage));
        };
        let Some(name) = p.path.get_ident().map(ToString::to_string) else {
            return Err(CompileError::new(f.base.span(), usage));
        };
        let Some(id) = self.lookup(&name) else {
            return Err(CompileError::new(
                p.span(),
                format!("cannot find value `{name}` in this kernel"),
            ));
        };
        if !self.locals[id].mutable {
            return Err(CompileError::new(
                p.span(),
                format!("cannot assign to a field of `{name}`: it is not declared `mut`"),
            ));
        }
        let ty = self.locals[id].ty.clone();
        let (index, field_ty) = self.field_of(&ty, &f.member)?;
        Ok((Place::Field { local: id, index }, field_ty))
    }

    fn field_of(&self, ty: &Type, member: &syn::Member) -> Result<(usize, Type), CompileError> {
        let ty = self.infer.known(ty);
        let Type::Struct(st) = &ty else {
            let hint = if matches!(ty, Type::Vector(_)) {
                "; for vector lanes use `v.get(0)`"
            } else {
                ""
            };
            return Err(CompileError::new(
                member.span(),
                format!(
                    "`{}` has no fields: fields belong to tuples and structs{hint}",
                    self.infer.describe(&ty)
                ),
            ));
        };
        let name = match member {
            syn::Member::Named(i) => i.to_string(),
            syn::Member::Unnamed(i) => i.index.to_string(),
        };
        match st.field(&name) {
            Some(i) => Ok((i, st.fields[i].1.clone())),
            None => Err(CompileError::new(
                member.span(),
                format!("`{ty}` has no field `{name}`; it has {}", field_list(st)),
            )),
        }
    }
}

fn field_list(st: &StructType) -> String {
    st.fields
        .iter()
        .map(|(n, t)| format!("`{n}: {t}`"))
        .collect::<Vec<_>>()
        .join(", ")
}
