//! Functions the lowering defines in the module itself rather than call from a library:
//! the exact float remainder, and on the CPU the `half`/`bfloat` conversions LLVM's
//! x86 backend calls by name (`__truncsfhf2`, ...), so CPU code objects need no runtime
//! library.

use super::module::ModuleCtx;
use super::{fmod, softfloat};

/// A helper function defined in the module.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(super) enum Helper {
    /// `f32 % f32`, exact (Rust's `%`, C's `fmodf`).
    FmodF32,
    /// `f64 % f64`, exact.
    FmodF64,
    /// `half` -> `float` (`__extendhfsf2`).
    ExtendHalfToF32,
    /// `float` -> `half` (`__truncsfhf2`).
    TruncF32ToHalf,
    /// `double` -> `half` (`__truncdfhf2`).
    TruncF64ToHalf,
    /// `float` -> `bfloat` (`__truncsfbf2`).
    TruncF32ToBf16,
    /// `double` -> `bfloat` (`__truncdfbf2`).
    TruncF64ToBf16,
}

impl Helper {
    /// The conversions a CPU module using `half` or `bfloat` defines.
    pub const CPU_HALF_CONVERSIONS: [Helper; 5] = [
        Helper::ExtendHalfToF32,
        Helper::TruncF32ToHalf,
        Helper::TruncF64ToHalf,
        Helper::TruncF32ToBf16,
        Helper::TruncF64ToBf16,
    ];

    /// The symbol, with its `@`.
    pub fn symbol(self) -> String {
        match self {
            Helper::FmodF32 => "@__iris_fmod_f32",
            Helper::FmodF64 => "@__iris_fmod_f64",
            Helper::ExtendHalfToF32 => "@__extendhfsf2",
            Helper::TruncF32ToHalf => "@__truncsfhf2",
            Helper::TruncF64ToHalf => "@__truncdfhf2",
            Helper::TruncF32ToBf16 => "@__truncsfbf2",
            Helper::TruncF64ToBf16 => "@__truncdfbf2",
        }
        .to_string()
    }

    /// The definition's text.
    pub fn definition(self, m: &mut ModuleCtx) -> String {
        let name = self.symbol();
        match self {
            Helper::FmodF32 => fmod::definition(&name, "float", "f32", m),
            Helper::FmodF64 => fmod::definition(&name, "double", "f64", m),
            Helper::ExtendHalfToF32 => softfloat::extend_half(&name),
            Helper::TruncF32ToHalf => softfloat::truncate(&name, softfloat::F32, softfloat::HALF),
            Helper::TruncF64ToHalf => softfloat::truncate(&name, softfloat::F64, softfloat::HALF),
            Helper::TruncF32ToBf16 => softfloat::truncate(&name, softfloat::F32, softfloat::BF16),
            Helper::TruncF64ToBf16 => softfloat::truncate(&name, softfloat::F64, softfloat::BF16),
        }
    }
}
