//! Element types: their names as PyTorch, NumPy and the array interfaces spell them, and
//! the typed operations of each (its buffers, its kernel).

use std::fmt;

use iris::ccl::CclElement;
use iris::prelude::{bf16, f16};
use iris::{DevicePtr, Iris, LaunchConfig, SymmetricBuffer};

use crate::kernels::put;

/// An element type the extension handles: the collectives' types.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DType {
    /// `float32`.
    F32,
    /// `float64`.
    F64,
    /// `float16`.
    F16,
    /// `bfloat16`.
    BF16,
    /// `int32`.
    I32,
    /// `uint32`.
    U32,
    /// `int64`.
    I64,
    /// `uint64`.
    U64,
}

/// Every supported type, for messages.
pub const SUPPORTED: &str = "float32, float64, float16, bfloat16, int32, uint32, int64, uint64";

impl DType {
    /// The type named `name`: `float32`, `torch.float32`, `float`, `half`, `bf16`, ...
    pub fn from_name(name: &str) -> Option<DType> {
        let name = name.trim();
        let name = name.strip_prefix("torch.").unwrap_or(name);
        Some(match name {
            "float32" | "float" | "f32" => DType::F32,
            "float64" | "double" | "f64" => DType::F64,
            "float16" | "half" | "f16" => DType::F16,
            "bfloat16" | "bf16" => DType::BF16,
            "int32" | "int" | "i32" => DType::I32,
            "uint32" | "u32" => DType::U32,
            "int64" | "long" | "i64" => DType::I64,
            "uint64" | "u64" => DType::U64,
            _ => return None,
        })
    }

    /// The type of an array-interface type string (`<f4`, `|u1`, ...).
    pub fn from_typestr(typestr: &str) -> Option<DType> {
        let little = cfg!(target_endian = "little");
        let (order, code) = typestr.split_at(typestr.len().min(1));
        let native = matches!(order, "|" | "=") || (order == "<") == little;
        if !native {
            return None;
        }
        Some(match code {
            "f4" => DType::F32,
            "f8" => DType::F64,
            "f2" => DType::F16,
            "i4" => DType::I32,
            "u4" => DType::U32,
            "i8" => DType::I64,
            "u8" => DType::U64,
            _ => return None,
        })
    }

    /// The array-interface type string, if the type has one (`bfloat16` has none).
    pub fn typestr(self) -> Option<&'static str> {
        Some(match self {
            DType::F32 => "<f4",
            DType::F64 => "<f8",
            DType::F16 => "<f2",
            DType::BF16 => return None,
            DType::I32 => "<i4",
            DType::U32 => "<u4",
            DType::I64 => "<i8",
            DType::U64 => "<u8",
        })
    }

    /// The canonical name (`float32`, ...).
    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "float32",
            DType::F64 => "float64",
            DType::F16 => "float16",
            DType::BF16 => "bfloat16",
            DType::I32 => "int32",
            DType::U32 => "uint32",
            DType::I64 => "int64",
            DType::U64 => "uint64",
        }
    }

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            DType::F16 | DType::BF16 => 2,
            DType::F32 | DType::I32 | DType::U32 => 4,
            DType::F64 | DType::I64 | DType::U64 => 8,
        }
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A symmetric buffer of any supported element type.
pub enum AnyBuffer<'a> {
    /// `float32`.
    F32(SymmetricBuffer<'a, f32>),
    /// `float64`.
    F64(SymmetricBuffer<'a, f64>),
    /// `float16`.
    F16(SymmetricBuffer<'a, f16>),
    /// `bfloat16`.
    BF16(SymmetricBuffer<'a, bf16>),
    /// `int32`.
    I32(SymmetricBuffer<'a, i32>),
    /// `uint32`.
    U32(SymmetricBuffer<'a, u32>),
    /// `int64`.
    I64(SymmetricBuffer<'a, i64>),
    /// `uint64`.
    U64(SymmetricBuffer<'a, u64>),
}

impl AnyBuffer<'_> {
    /// Frees the allocation (or, for adopted memory, its table).
    pub fn free(self) -> iris::Result<()> {
        match self {
            AnyBuffer::F32(b) => b.free(),
            AnyBuffer::F64(b) => b.free(),
            AnyBuffer::F16(b) => b.free(),
            AnyBuffer::BF16(b) => b.free(),
            AnyBuffer::I32(b) => b.free(),
            AnyBuffer::U32(b) => b.free(),
            AnyBuffer::I64(b) => b.free(),
            AnyBuffer::U64(b) => b.free(),
        }
    }
}

/// What the extension does with elements of one type.
pub trait Element: CclElement {
    /// The type's tag.
    const DTYPE: DType;

    /// `buffer` as an [`AnyBuffer`].
    fn wrap(buffer: SymmetricBuffer<'_, Self>) -> AnyBuffer<'_>;

    /// The buffer, if `any` holds this type.
    fn get<'b, 'a>(any: &'b AnyBuffer<'a>) -> Option<&'b SymmetricBuffer<'a, Self>>;

    /// Launches `put_<T>`: `src[0..n]` into `peer`'s `dst[offset..offset + n]`.
    fn put(
        iris: &Iris,
        config: LaunchConfig,
        src: DevicePtr<Self>,
        dst: &SymmetricBuffer<'_, Self>,
        n: u64,
        offset: u64,
        peer: u32,
    ) -> iris::Result<()>;
}

macro_rules! element {
    ($($t:ident => $variant:ident, $kernel:ident;)*) => {$(
        impl Element for $t {
            const DTYPE: DType = DType::$variant;

            fn wrap(buffer: SymmetricBuffer<'_, Self>) -> AnyBuffer<'_> {
                AnyBuffer::$variant(buffer)
            }

            fn get<'b, 'a>(any: &'b AnyBuffer<'a>) -> Option<&'b SymmetricBuffer<'a, Self>> {
                match any {
                    AnyBuffer::$variant(b) => Some(b),
                    _ => None,
                }
            }

            fn put(
                iris: &Iris,
                config: LaunchConfig,
                src: DevicePtr<Self>,
                dst: &SymmetricBuffer<'_, Self>,
                n: u64,
                offset: u64,
                peer: u32,
            ) -> iris::Result<()> {
                put::$kernel::launch(iris, config, &src, dst, n, offset, peer)
            }
        }
    )*};
}

element! {
    f32 => F32, put_f32;
    f64 => F64, put_f64;
    f16 => F16, put_f16;
    bf16 => BF16, put_bf16;
    i32 => I32, put_i32;
    u32 => U32, put_u32;
    i64 => I64, put_i64;
    u64 => U64, put_u64;
}

/// Runs `$body` with `$T` the Rust type of `DType` `$d`.
macro_rules! dispatch {
    ($d:expr, $T:ident => $body:expr) => {
        match $d {
            $crate::dtype::DType::F32 => {
                type $T = f32;
                $body
            }
            $crate::dtype::DType::F64 => {
                type $T = f64;
                $body
            }
            $crate::dtype::DType::F16 => {
                type $T = ::iris::prelude::f16;
                $body
            }
            $crate::dtype::DType::BF16 => {
                type $T = ::iris::prelude::bf16;
                $body
            }
            $crate::dtype::DType::I32 => {
                type $T = i32;
                $body
            }
            $crate::dtype::DType::U32 => {
                type $T = u32;
                $body
            }
            $crate::dtype::DType::I64 => {
                type $T = i64;
                $body
            }
            $crate::dtype::DType::U64 => {
                type $T = u64;
                $body
            }
        }
    };
}
pub(crate) use dispatch;

/// [`dispatch`] over the floating-point element types the weighting and normalizing
/// operations take (`float32`, `float16`, `bfloat16`); another dtype is an
/// `InvalidConfig` error saying `$what` takes floats.
macro_rules! dispatch_float {
    ($dtype:expr, $what:expr, $T:ident => $body:expr) => {
        match $dtype {
            $crate::dtype::DType::F32 => {
                type $T = f32;
                $body
            }
            $crate::dtype::DType::F16 => {
                type $T = ::iris::prelude::f16;
                $body
            }
            $crate::dtype::DType::BF16 => {
                type $T = ::iris::prelude::bf16;
                $body
            }
            other => Err(::iris::Error::InvalidConfig(format!(
                "{}: float32, float16 or bfloat16 only, got {other}",
                $what
            ))),
        }
    };
}
pub(crate) use dispatch_float;
