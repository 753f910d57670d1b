//! The element types of generic kernels: `fn all_gather<T: Element>(..)`.
//!
//! A generic kernel is written once against [`Element`] and compiled once per element
//! type it is built for (`#[iris::kernel(instances(T = [f32, bf16]))]`, every element type
//! by default). Inside it, `T` supports the arithmetic and comparison operators, the
//! constants [`Element::ZERO`], [`Element::ONE`], [`Element::MIN`], [`Element::MAX`],
//! conversions through `f32`/`f64`, and a wider accumulator type ([`Acc<T>`], reached with
//! [`widen`] and [`narrow`]) for sums that must not lose precision or overflow.

use super::{bf16, f16, DeviceValue};
use core::ops::{Add, AddAssign, Div, DivAssign, Mul, MulAssign, Rem, Sub, SubAssign};

mod sealed {
    pub trait Sealed {}
}

/// A numeric element type of a generic kernel: `i8`..`i64`, `u8`..`u64`, `f16`, `bf16`,
/// `f32`, `f64` (not `bool`, not the vectors).
///
/// Its methods and constants work in kernels and on the host alike.
pub trait Element:
    DeviceValue
    + sealed::Sealed
    + PartialEq
    + PartialOrd
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Rem<Output = Self>
    + AddAssign
    + SubAssign
    + MulAssign
    + DivAssign
{
    /// The type sums of this type are accumulated in: `f32` for `f16` and `bf16`, `i32`
    /// for `i8`/`i16`, `u32` for `u8`/`u16`, the type itself otherwise.
    type Acc: Element;
    /// Zero.
    const ZERO: Self;
    /// One.
    const ONE: Self;
    /// The smallest finite value.
    const MIN: Self;
    /// The largest finite value.
    const MAX: Self;
    /// `x` converted from `f32` (as `as` converts: integers saturate, NaN is 0).
    fn from_f32(x: f32) -> Self;
    /// `x` converted from `f64`.
    fn from_f64(x: f64) -> Self;
    /// The value as `f32` (rounded to nearest for wide integers and `f64`).
    fn to_f32(self) -> f32;
    /// The value as `f64`.
    fn to_f64(self) -> f64;
    /// The value in the accumulator type (exact).
    fn widen(self) -> Self::Acc;
    /// An accumulator converted back (as `as` converts: floats round, integers wrap).
    fn narrow(acc: Self::Acc) -> Self;
}

/// The accumulator type of `T` ([`Element::Acc`]).
pub type Acc<T> = <T as Element>::Acc;

/// `x` in its accumulator type: `widen(h)` of an `f16` is an exact `f32`.
#[inline(always)]
pub fn widen<T: Element>(x: T) -> Acc<T> {
    x.widen()
}

/// An accumulator converted back to `T`: `narrow::<bf16>(sum)`.
#[inline(always)]
pub fn narrow<T: Element>(acc: Acc<T>) -> T {
    T::narrow(acc)
}

/// The smaller of two values (for floats, the other one when one is NaN).
#[inline(always)]
pub fn min<T: Element>(a: T, b: T) -> T {
    #[allow(clippy::eq_op)] // `a != a` is the NaN test, generic over the element type
    let a_is_nan = a != a;
    if b < a || a_is_nan {
        b
    } else {
        a
    }
}

/// The larger of two values (for floats, the other one when one is NaN).
#[inline(always)]
pub fn max<T: Element>(a: T, b: T) -> T {
    #[allow(clippy::eq_op)] // `a != a` is the NaN test, generic over the element type
    let a_is_nan = a != a;
    if b > a || a_is_nan {
        b
    } else {
        a
    }
}

macro_rules! primitive_elements {
    ($($t:ty => $acc:ty),* $(,)?) => {$(
        impl sealed::Sealed for $t {}
        impl Element for $t {
            type Acc = $acc;
            const ZERO: Self = 0 as $t;
            const ONE: Self = 1 as $t;
            const MIN: Self = <$t>::MIN;
            const MAX: Self = <$t>::MAX;
            #[inline(always)]
            fn from_f32(x: f32) -> Self { x as $t }
            #[inline(always)]
            fn from_f64(x: f64) -> Self { x as $t }
            #[inline(always)]
            fn to_f32(self) -> f32 { self as f32 }
            #[inline(always)]
            fn to_f64(self) -> f64 { self as f64 }
            #[inline(always)]
            fn widen(self) -> $acc { self as $acc }
            #[inline(always)]
            fn narrow(acc: $acc) -> Self { acc as $t }
        }
    )*};
}

primitive_elements!(
    i8 => i32, i16 => i32, i32 => i32, i64 => i64,
    u8 => u32, u16 => u32, u32 => u32, u64 => u64,
    f32 => f32, f64 => f64,
);

macro_rules! half_elements {
    ($($t:ident),*) => {$(
        impl sealed::Sealed for $t {}
        impl Element for $t {
            type Acc = f32;
            const ZERO: Self = $t::ZERO;
            const ONE: Self = $t::ONE;
            const MIN: Self = $t::MIN;
            const MAX: Self = $t::MAX;
            #[inline(always)]
            fn from_f32(x: f32) -> Self { $t::from_f32(x) }
            #[inline(always)]
            fn from_f64(x: f64) -> Self { $t::from_f64(x) }
            #[inline(always)]
            fn to_f32(self) -> f32 { $t::to_f32(self) }
            #[inline(always)]
            fn to_f64(self) -> f64 { $t::to_f64(self) }
            #[inline(always)]
            fn widen(self) -> f32 { $t::to_f32(self) }
            #[inline(always)]
            fn narrow(acc: f32) -> Self { $t::from_f32(acc) }
        }
    )*};
}

half_elements!(f16, bf16);

#[cfg(test)]
mod tests {
    use super::*;

    fn sum<T: Element>(xs: &[T]) -> T {
        let mut acc = T::Acc::ZERO;
        for &x in xs {
            acc += widen(x);
        }
        narrow::<T>(acc)
    }

    #[test]
    fn accumulates_in_the_wider_type() {
        // 200 + 100 overflows u8, the u32 accumulator does not; the result wraps back.
        assert_eq!(sum::<u8>(&[200, 100]), 44);
        // 2048 + 1 + 1 in f16 stays 2048 step by step, 2050 through f32.
        let h = [f16::from_f32(2048.0), f16::ONE, f16::ONE];
        assert_eq!(sum(&h).to_f32(), 2050.0);
        assert_eq!(sum(&[1.5f64, 2.25]), 3.75);
    }

    #[test]
    fn min_and_max_prefer_numbers_to_nan() {
        assert_eq!(min(3i32, -2), -2);
        assert_eq!(max(3u64, 7), 7);
        assert_eq!(min(f32::NAN, 1.0), 1.0);
        assert_eq!(max(2.0f32, f32::NAN), 2.0);
        assert_eq!(max(bf16::ONE, bf16::ZERO), bf16::ONE);
    }

    #[test]
    fn constants_match_the_types() {
        assert_eq!(<i8 as Element>::MIN, -128);
        assert_eq!(<f16 as Element>::MAX.to_f32(), 65504.0);
        assert_eq!(<u16 as Element>::ONE, 1);
    }
}
