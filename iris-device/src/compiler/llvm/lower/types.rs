//! LLVM type names and constants for kernel-IR types.
//!
//! Values live in registers with their *register* type (`bool` is `i1`) and in memory with
//! their *memory* type (`bool` is one byte). A `Symmetric<T>` is the first-class struct
//! `{ ptr, i64, ptr }` (pointer, local base, table) with global pointers on GPUs.

use super::super::super::kernel_ir::{FragmentRole, Scalar, Type, Vector};
use super::arch::Arch;

/// The register type of a scalar.
pub(super) fn scalar_ty(s: Scalar) -> &'static str {
    match s {
        Scalar::Bool => "i1",
        Scalar::I8 | Scalar::U8 => "i8",
        Scalar::I16 | Scalar::U16 => "i16",
        Scalar::I32 | Scalar::U32 => "i32",
        Scalar::I64 | Scalar::U64 => "i64",
        Scalar::F16 => "half",
        Scalar::BF16 => "bfloat",
        Scalar::F32 => "float",
        Scalar::F64 => "double",
    }
}

/// The suffix LLVM's overloaded intrinsics use for a scalar (`f32`, `i64`, `bf16`).
pub(super) fn scalar_suffix(s: Scalar) -> &'static str {
    match s {
        Scalar::Bool => "i1",
        Scalar::I8 | Scalar::U8 => "i8",
        Scalar::I16 | Scalar::U16 => "i16",
        Scalar::I32 | Scalar::U32 => "i32",
        Scalar::I64 | Scalar::U64 => "i64",
        Scalar::F16 => "f16",
        Scalar::BF16 => "bf16",
        Scalar::F32 => "f32",
        Scalar::F64 => "f64",
    }
}

/// The LLVM vector type.
pub(super) fn vector_ty(v: Vector) -> String {
    format!("<{} x {}>", v.lanes, scalar_ty(v.elem))
}

/// The intrinsic suffix of a scalar or vector type (`f32`, `v4f32`).
pub(super) fn suffix(ty: &Type) -> Result<String, String> {
    match ty {
        Type::Scalar(s) => Ok(scalar_suffix(*s).to_string()),
        Type::Vector(v) => Ok(format!("v{}{}", v.lanes, scalar_suffix(v.elem))),
        other => Err(format!("no intrinsic suffix for type `{other}`")),
    }
}

/// The lane type of a scalar or vector type.
pub(super) fn elem_scalar(ty: &Type) -> Option<Scalar> {
    match ty {
        Type::Scalar(s) => Some(*s),
        Type::Vector(v) => Some(v.elem),
        _ => None,
    }
}

/// The register type of a value; `void` for `()` and `!`.
pub(super) fn reg_ty(ty: &Type, arch: Arch) -> Result<String, String> {
    Ok(match ty {
        Type::Unit | Type::Never => "void".to_string(),
        Type::Scalar(s) => scalar_ty(*s).to_string(),
        Type::Vector(v) => vector_ty(*v),
        Type::Ptr { .. } => "ptr".to_string(),
        Type::Symmetric(_) => sym_ty(arch),
        Type::Array { elem, len } => format!("[{len} x {}]", reg_ty(elem, arch)?),
        Type::Struct(st) => {
            let fields = st
                .fields
                .iter()
                .map(|(_, t)| reg_ty(t, arch))
                .collect::<Result<Vec<_>, _>>()?;
            format!("{{ {} }}", fields.join(", "))
        }
        Type::Fragment(f) if f.role == FragmentRole::WgAcc => {
            format!("[{} x float]", super::warpgroup::ACC_LEN)
        }
        Type::Fragment(f) => format!(
            "[{} x {}]",
            super::matrix::fragment_len(arch.kind()),
            scalar_ty(f.elem)
        ),
        Type::IntVar(_) | Type::FloatVar(_) => {
            return Err(format!(
                "type `{ty}` reached code generation unresolved (a type-checking bug)"
            ))
        }
    })
}

/// The type a value has in memory (`bool` is a byte).
pub(super) fn mem_ty(ty: &Type, arch: Arch) -> Result<String, String> {
    match ty {
        Type::Scalar(Scalar::Bool) => Ok("i8".to_string()),
        Type::Unit | Type::Never => Err(format!("type `{ty}` has no memory representation")),
        other => reg_ty(other, arch),
    }
}

/// Alignment in memory.
pub(super) fn align_of(ty: &Type) -> Result<u32, String> {
    ty.align()
        .ok_or_else(|| format!("type `{ty}` has no memory representation"))
}

/// The register type of a `Symmetric<T>`: pointer, local base, table.
pub(super) fn sym_ty(arch: Arch) -> String {
    let g = arch.gptr();
    format!("{{ {g}, i64, {g} }}")
}

/// Whether the type has a value at all (`()` and `!` do not).
pub(super) fn has_value(ty: &Type) -> bool {
    !matches!(ty, Type::Unit | Type::Never)
}

/// An integer constant of `bits` bits, written as LLVM reads it (two's complement).
pub(super) fn int_const(value: u128, bits: u32) -> String {
    if bits >= 128 {
        return (value as i128).to_string();
    }
    let masked = value & ((1u128 << bits) - 1);
    let negative = bits > 0 && (masked >> (bits - 1)) & 1 == 1;
    if negative {
        (masked as i128 - (1i128 << bits)).to_string()
    } else {
        masked.to_string()
    }
}

/// A float constant of scalar type `s`, exact (LLVM's hexadecimal forms).
pub(super) fn float_const(value: f64, s: Scalar) -> Result<String, String> {
    Ok(match s {
        Scalar::F64 => format!("0x{:016X}", value.to_bits()),
        Scalar::F32 => format!("0x{:016X}", (value as f32 as f64).to_bits()),
        Scalar::F16 => format!("0xH{:04X}", half::f16::from_f64(value).to_bits()),
        Scalar::BF16 => format!("0xR{:04X}", half::bf16::from_f64(value).to_bits()),
        other => {
            return Err(format!(
                "a float literal cannot have type `{}`",
                other.name()
            ))
        }
    })
}

/// A literal of scalar type `s` from an integer literal's value.
pub(super) fn int_literal(value: u128, s: Scalar) -> Result<String, String> {
    if s == Scalar::Bool {
        return Ok(if value != 0 { "true" } else { "false" }.to_string());
    }
    if s.is_float() {
        return float_const(value as f64, s);
    }
    Ok(int_const(value, s.size() * 8))
}

/// Bit width of an integer (or bool) scalar.
pub(super) fn int_bits(s: Scalar) -> u32 {
    if s == Scalar::Bool {
        1
    } else {
        s.size() * 8
    }
}

/// Quotes a symbol name for LLVM (`@"name"`).
pub(super) fn global_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 3);
    out.push_str("@\"");
    for b in name.bytes() {
        if b == b'"' || b == b'\\' || !(0x20..0x7f).contains(&b) {
            out.push_str(&format!("\\{b:02X}"));
        } else {
            out.push(b as char);
        }
    }
    out.push('"');
    out
}

/// A name fragment safe in an unquoted local identifier.
pub(super) fn ident_part(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_constants_are_twos_complement() {
        assert_eq!(int_const(0xffff_ffff, 32), "-1");
        assert_eq!(int_const(5, 8), "5");
        assert_eq!(int_const(0x80, 8), "-128");
        assert_eq!(int_const(u64::MAX as u128, 64), "-1");
        assert_eq!(int_literal(1, Scalar::Bool).unwrap(), "true");
    }

    #[test]
    fn float_constants_are_exact_hex() {
        assert_eq!(float_const(1.0, Scalar::F32).unwrap(), "0x3FF0000000000000");
        assert_eq!(
            float_const(0.1, Scalar::F32).unwrap(),
            format!("0x{:016X}", (0.1f32 as f64).to_bits())
        );
        assert_eq!(float_const(1.0, Scalar::F16).unwrap(), "0xH3C00");
        assert_eq!(float_const(1.0, Scalar::BF16).unwrap(), "0xR3F80");
    }

    #[test]
    fn names_are_quoted() {
        assert_eq!(global_name("k"), "@\"k\"");
        assert_eq!(global_name("a\"b"), "@\"a\\22b\"");
        assert_eq!(ident_part("x.y"), "x_y");
    }
}
