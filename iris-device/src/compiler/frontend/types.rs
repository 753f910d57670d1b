//! Rust type syntax -> kernel IR types.

use super::super::kernel_ir::{Fragment, FragmentRole, Scalar, Type, Vector};
use super::super::CompileError;
use syn::spanned::Spanned;

/// What kernels may name: scalars, the prelude's vectors, raw pointers to those, and
/// `Symmetric<T>` of those.
pub fn parse_type(ty: &syn::Type) -> Result<Type, CompileError> {
    match ty {
        syn::Type::Paren(p) => parse_type(&p.elem),
        syn::Type::Group(g) => parse_type(&g.elem),
        syn::Type::Tuple(t) if t.elems.is_empty() => Ok(Type::Unit),
        syn::Type::Tuple(t) => {
            let mut elems = Vec::new();
            for e in &t.elems {
                let ty = parse_type(e)?;
                if !super::structs::is_value_type(&ty) {
                    return Err(CompileError::new(
                        e.span(),
                        format!("a tuple holds values (numbers, vectors, pointers, arrays, structs), not `{ty}`"),
                    ));
                }
                elems.push(ty);
            }
            Ok(Type::Struct(super::super::kernel_ir::StructType::tuple(elems)))
        }
        syn::Type::Ptr(p) => {
            let pointee = parse_type(&p.elem)?;
            if !is_memory_type(&pointee) {
                return Err(CompileError::new(
                    p.elem.span(),
                    format!("kernels can point only to scalars, 16-byte vectors and arrays of numbers, not `{pointee}`"),
                ));
            }
            Ok(Type::Ptr { pointee: Box::new(pointee), mutable: p.mutability.is_some() })
        }
        syn::Type::Path(tp) if tp.qself.is_none() => parse_path_type(tp),
        syn::Type::Reference(r) => Err(CompileError::new(
            r.span(),
            "references are not supported in kernels: use raw pointers (`*const T`, `*mut T`) or `Symmetric<T>`",
        )),
        syn::Type::Array(a) => {
            let elem = parse_type(&a.elem)?;
            if !matches!(elem, Type::Scalar(_) | Type::Vector(_) | Type::Array { .. }) {
                return Err(CompileError::new(
                    a.elem.span(),
                    format!("arrays hold scalars, vectors or arrays, not `{elem}`"),
                ));
            }
            let len = super::arrays::literal_len(&a.len)?;
            super::arrays::array_type(elem, len, a.span())
        }
        syn::Type::Slice(s) => Err(CompileError::new(
            s.span(),
            "slices are not supported in kernels: pass a raw pointer and a length",
        )),
        other => Err(CompileError::new(
            other.span(),
            "this type is not supported in kernels; supported: bool, i8..i64, u8..u64, usize, isize, f16, bf16, f32, f64, the 16-byte vectors (f32x4, ...), raw pointers to them, and Symmetric<T>",
        )),
    }
}

fn parse_path_type(tp: &syn::TypePath) -> Result<Type, CompileError> {
    let Some(last) = tp.path.segments.last() else {
        return Err(CompileError::new(tp.span(), "empty type path"));
    };
    let name = last.ident.to_string();
    if tp.path.segments.len() == 1 && last.arguments.is_empty() {
        if let Some(ty) = super::structs::lookup(&name) {
            return Ok(ty);
        }
    }
    if name == "Symmetric" {
        let arg = single_type_argument(&last.arguments).ok_or_else(|| {
            CompileError::new(
                last.span(),
                "`Symmetric` takes one element type: `Symmetric<f32>`",
            )
        })?;
        let elem = parse_type(arg)?;
        if !is_memory_type(&elem) {
            return Err(CompileError::new(
                arg.span(),
                format!("`Symmetric<{elem}>`: the element must be a scalar, a 16-byte vector or an array of numbers"),
            ));
        }
        return Ok(Type::Symmetric(Box::new(elem)));
    }
    if name == "WgAcc" {
        return Ok(Type::Fragment(Fragment {
            role: FragmentRole::WgAcc,
            elem: Scalar::F32,
        }));
    }
    if name == "MmaAcc" {
        return Ok(Type::Fragment(Fragment {
            role: FragmentRole::Acc,
            elem: Scalar::F32,
        }));
    }
    if name == "MmaA" || name == "MmaB" {
        let arg = single_type_argument(&last.arguments).ok_or_else(|| {
            CompileError::new(
                last.span(),
                format!("`{name}` takes its element type: `{name}<bf16>`"),
            )
        })?;
        let elem = match parse_type(arg)? {
            Type::Scalar(s @ (Scalar::BF16 | Scalar::F16)) => s,
            other => {
                return Err(CompileError::new(
                    arg.span(),
                    format!("the matrix units multiply `bf16` or `f16`, not `{other}`"),
                ))
            }
        };
        let role = if name == "MmaA" {
            FragmentRole::A
        } else {
            FragmentRole::B
        };
        return Ok(Type::Fragment(Fragment { role, elem }));
    }
    if name == "Acc" && tp.path.segments.len() == 1 {
        let arg = single_type_argument(&last.arguments).ok_or_else(|| {
            CompileError::new(last.span(), "`Acc` takes one element type: `Acc<T>`")
        })?;
        let elem = parse_type(arg)?;
        return super::generics::acc_type(&elem).ok_or_else(|| {
            CompileError::new(
                arg.span(),
                format!("`{elem}` is not an `Element`: it has no accumulator type"),
            )
        });
    }
    if !last.arguments.is_empty()
        && (Scalar::from_name(&name).is_some() || Vector::from_name(&name).is_some())
    {
        return Err(CompileError::new(
            last.arguments.span(),
            format!("`{name}` takes no type arguments"),
        ));
    }
    if let Some(s) = Scalar::from_name(&name) {
        return Ok(Type::Scalar(s));
    }
    if let Some(v) = Vector::from_name(&name) {
        return Ok(Type::Vector(v));
    }
    let hint = match name.as_str() {
        "String" | "Vec" | "Box" | "Option" | "Result" => {
            ": kernels have no heap and no enums; use raw pointers into device memory"
        }
        "u128" | "i128" => ": 128-bit integers are not supported; use u64 or i64",
        "char" | "str" => ": text is not supported in kernels",
        _ => "",
    };
    Err(CompileError::new(
        tp.span(),
        format!(
            "type `{name}` is not supported in kernels{hint}; supported: bool, i8..i64, u8..u64, usize, isize, f16, bf16, f32, f64, f32x4/i32x4/u32x4/f64x2/i64x2/u64x2, raw pointers to them, and Symmetric<T>"
        ),
    ))
}

/// The single generic type argument of `Name<T>`.
pub fn single_type_argument(args: &syn::PathArguments) -> Option<&syn::Type> {
    match args {
        syn::PathArguments::AngleBracketed(a) if a.args.len() == 1 => match a.args.first() {
            Some(syn::GenericArgument::Type(t)) => Some(t),
            _ => None,
        },
        _ => None,
    }
}

/// Scalars, vectors, and arrays of non-`bool` scalars: what lives in memory behind a
/// pointer.
pub fn is_memory_type(ty: &Type) -> bool {
    match ty {
        Type::Scalar(_) | Type::Vector(_) => true,
        Type::Array { elem, .. } => {
            matches!(**elem, Type::Scalar(s) if s != crate::compiler::kernel_ir::Scalar::Bool)
        }
        _ => false,
    }
}
