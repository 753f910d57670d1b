//! The types of the kernel language.

use std::fmt;

/// A scalar type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scalar {
    /// `bool` (`i1` in registers, one byte in memory).
    Bool,
    /// `i8`.
    I8,
    /// `i16`.
    I16,
    /// `i32`.
    I32,
    /// `i64`.
    I64,
    /// `u8`.
    U8,
    /// `u16`.
    U16,
    /// `u32`.
    U32,
    /// `u64`.
    U64,
    /// `f16` (IEEE half).
    F16,
    /// `bf16` (brain float).
    BF16,
    /// `f32`.
    F32,
    /// `f64`.
    F64,
}

impl Scalar {
    /// Parses a Rust type name (`usize`/`isize` are 64-bit, as on every target).
    pub fn from_name(name: &str) -> Option<Scalar> {
        Some(match name {
            "bool" => Scalar::Bool,
            "i8" => Scalar::I8,
            "i16" => Scalar::I16,
            "i32" => Scalar::I32,
            "i64" | "isize" => Scalar::I64,
            "u8" => Scalar::U8,
            "u16" => Scalar::U16,
            "u32" => Scalar::U32,
            "u64" | "usize" => Scalar::U64,
            "f16" => Scalar::F16,
            "bf16" => Scalar::BF16,
            "f32" => Scalar::F32,
            "f64" => Scalar::F64,
            _ => return None,
        })
    }

    /// Size in bytes in memory.
    pub fn size(self) -> u32 {
        match self {
            Scalar::Bool | Scalar::I8 | Scalar::U8 => 1,
            Scalar::I16 | Scalar::U16 | Scalar::F16 | Scalar::BF16 => 2,
            Scalar::I32 | Scalar::U32 | Scalar::F32 => 4,
            Scalar::I64 | Scalar::U64 | Scalar::F64 => 8,
        }
    }

    /// Integer (not bool, not float).
    pub fn is_int(self) -> bool {
        matches!(
            self,
            Scalar::I8
                | Scalar::I16
                | Scalar::I32
                | Scalar::I64
                | Scalar::U8
                | Scalar::U16
                | Scalar::U32
                | Scalar::U64
        )
    }

    /// Signed integer.
    pub fn is_signed(self) -> bool {
        matches!(self, Scalar::I8 | Scalar::I16 | Scalar::I32 | Scalar::I64)
    }

    /// Floating point.
    pub fn is_float(self) -> bool {
        matches!(self, Scalar::F16 | Scalar::BF16 | Scalar::F32 | Scalar::F64)
    }

    /// The Rust name.
    pub fn name(self) -> &'static str {
        match self {
            Scalar::Bool => "bool",
            Scalar::I8 => "i8",
            Scalar::I16 => "i16",
            Scalar::I32 => "i32",
            Scalar::I64 => "i64",
            Scalar::U8 => "u8",
            Scalar::U16 => "u16",
            Scalar::U32 => "u32",
            Scalar::U64 => "u64",
            Scalar::F16 => "f16",
            Scalar::BF16 => "bf16",
            Scalar::F32 => "f32",
            Scalar::F64 => "f64",
        }
    }
}

/// A 16-byte vector type of the prelude (`f32x4`, `u64x2`, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Vector {
    /// Lane type.
    pub elem: Scalar,
    /// Number of lanes.
    pub lanes: u32,
}

impl Vector {
    /// Parses a prelude vector name.
    pub fn from_name(name: &str) -> Option<Vector> {
        let (elem, lanes) = match name {
            "f32x4" => (Scalar::F32, 4),
            "i32x4" => (Scalar::I32, 4),
            "u32x4" => (Scalar::U32, 4),
            "f64x2" => (Scalar::F64, 2),
            "i64x2" => (Scalar::I64, 2),
            "u64x2" => (Scalar::U64, 2),
            _ => return None,
        };
        Some(Vector { elem, lanes })
    }

    /// The prelude name.
    pub fn name(self) -> String {
        format!("{}x{}", self.elem.name(), self.lanes)
    }
}

/// Which tile of a matrix product a fragment holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FragmentRole {
    /// `MmaA<T>`: the left operand.
    A,
    /// `MmaB<T>`: the right operand.
    B,
    /// `MmaAcc`: the `f32` accumulator.
    Acc,
    /// `WgAcc`: a warpgroup's 64 x 128 `f32` accumulator.
    WgAcc,
}

/// A warp's 16 x 16 tile spread over its lanes (`MmaA<T>`, `MmaB<T>`, `MmaAcc`): how many
/// elements a lane holds depends on the target, so the type is opaque to kernels.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Fragment {
    /// Which tile.
    pub role: FragmentRole,
    /// The element type: `bf16` or `f16` for A and B, `f32` for the accumulator.
    pub elem: Scalar,
}

impl fmt::Display for Fragment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.role {
            FragmentRole::A => write!(f, "MmaA<{}>", self.elem.name()),
            FragmentRole::B => write!(f, "MmaB<{}>", self.elem.name()),
            FragmentRole::Acc => write!(f, "MmaAcc"),
            FragmentRole::WgAcc => write!(f, "WgAcc"),
        }
    }
}

/// A tuple type, or a struct declared in the unit's module.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct StructType {
    /// The struct's name; `None` for a tuple.
    pub name: Option<String>,
    /// The fields in declaration order (a tuple's are named `0`, `1`, ..).
    pub fields: Vec<(String, Type)>,
}

impl StructType {
    /// The tuple of `types`.
    pub fn tuple(types: Vec<Type>) -> Self {
        StructType {
            name: None,
            fields: types
                .into_iter()
                .enumerate()
                .map(|(i, t)| (i.to_string(), t))
                .collect(),
        }
    }

    /// The same fields, each type through `f`.
    pub fn map_fields(self, mut f: impl FnMut(&Type) -> Type) -> Self {
        StructType {
            name: self.name,
            fields: self.fields.into_iter().map(|(n, t)| (n, f(&t))).collect(),
        }
    }

    /// The position of the field `name`.
    pub fn field(&self, name: &str) -> Option<usize> {
        self.fields.iter().position(|(n, _)| n == name)
    }
}

/// A type of the kernel language.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Type {
    /// `()`: statements, and functions that return nothing.
    Unit,
    /// A scalar.
    Scalar(Scalar),
    /// A 16-byte vector.
    Vector(Vector),
    /// A raw pointer to device memory (`*const T`, `*mut T`). Kernel parameters point to
    /// global memory; `shared_array` returns pointers to block-shared memory; both are
    /// generic (flat) addresses inside a kernel.
    Ptr {
        /// The pointee.
        pointee: Box<Type>,
        /// `*mut` rather than `*const`.
        mutable: bool,
    },
    /// `Symmetric<T>`: pointer, local base and peer table.
    Symmetric(Box<Type>),
    /// `[T; N]`: a fixed-length array of scalars or vectors, held in registers when every
    /// index is known after unrolling.
    Array {
        /// The element type.
        elem: Box<Type>,
        /// The number of elements.
        len: u64,
    },
    /// A matrix fragment (registers only).
    Fragment(Fragment),
    /// A tuple `(A, B, ..)` or a struct of the unit's module: values held field by field
    /// (registers, like arrays).
    Struct(StructType),
    /// An integer literal whose type is not yet known (inference variable).
    IntVar(u32),
    /// A float literal whose type is not yet known (inference variable).
    FloatVar(u32),
    /// The type of `return`, `break`, `continue`: never produces a value.
    Never,
}

impl Type {
    /// Shorthand for a scalar type.
    pub fn scalar(s: Scalar) -> Type {
        Type::Scalar(s)
    }

    /// The scalar, if this is one.
    pub fn as_scalar(&self) -> Option<Scalar> {
        match self {
            Type::Scalar(s) => Some(*s),
            _ => None,
        }
    }

    /// Size in bytes in memory, for values that live in memory.
    pub fn size(&self) -> Option<u32> {
        match self {
            Type::Scalar(s) => Some(s.size()),
            Type::Vector(v) => Some(v.elem.size() * v.lanes),
            Type::Ptr { .. } => Some(8),
            Type::Symmetric(_) => Some(24),
            Type::Array { elem, len } => {
                u32::try_from(u64::from(elem.size()?).checked_mul(*len)?).ok()
            }
            // C's layout (`#[repr(C)]`): each field at its alignment, the whole padded to
            // the largest.
            Type::Struct(st) => {
                let mut at = 0u32;
                for (_, t) in &st.fields {
                    let align = t.align()?;
                    at = at.checked_next_multiple_of(align)?.checked_add(t.size()?)?;
                }
                at.checked_next_multiple_of(self.align()?)
            }
            _ => None,
        }
    }

    /// Alignment in bytes in memory.
    pub fn align(&self) -> Option<u32> {
        match self {
            Type::Vector(_) => Some(16),
            Type::Symmetric(_) => Some(8),
            // Registers only; a local fragment's stack slot is promoted to registers.
            Type::Fragment(_) => Some(4),
            Type::Struct(st) => st
                .fields
                .iter()
                .map(|(_, t)| t.align())
                .try_fold(1, |a, t| t.map(|t| a.max(t))),
            // An array of 2, 4, 8 or 16 bytes moves through memory as one vector access,
            // so it is aligned to its size; a larger one to its element's alignment.
            Type::Array { .. } => match self.size() {
                Some(n @ (2 | 4 | 8 | 16)) => Some(n),
                _ => match self {
                    Type::Array { elem, .. } => elem.align(),
                    _ => None,
                },
            },
            other => other.size(),
        }
    }
}

impl fmt::Display for Type {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Type::Unit => write!(f, "()"),
            Type::Scalar(s) => write!(f, "{}", s.name()),
            Type::Vector(v) => write!(f, "{}", v.name()),
            Type::Ptr { pointee, mutable } => {
                write!(f, "*{} {}", if *mutable { "mut" } else { "const" }, pointee)
            }
            Type::Symmetric(t) => write!(f, "Symmetric<{t}>"),
            Type::Array { elem, len } => write!(f, "[{elem}; {len}]"),
            Type::Fragment(frag) => write!(f, "{frag}"),
            Type::Struct(st) => match &st.name {
                Some(name) => write!(f, "{name}"),
                None => {
                    let parts: Vec<String> = st.fields.iter().map(|(_, t)| t.to_string()).collect();
                    if parts.len() == 1 {
                        write!(f, "({},)", parts[0])
                    } else {
                        write!(f, "({})", parts.join(", "))
                    }
                }
            },
            Type::IntVar(_) => write!(f, "{{integer}}"),
            Type::FloatVar(_) => write!(f, "{{float}}"),
            Type::Never => write!(f, "!"),
        }
    }
}

/// A concrete argument of a generic kernel or device function.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum GenericArg {
    /// A type (`T = f32`).
    Type(Type),
    /// A constant (`N = 64`) of an integer type.
    Const {
        /// The value.
        value: i128,
        /// Its type.
        ty: Scalar,
    },
}

impl fmt::Display for GenericArg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GenericArg::Type(t) => write!(f, "{t}"),
            GenericArg::Const { value, .. } => write!(f, "{value}"),
        }
    }
}
