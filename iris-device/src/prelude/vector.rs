//! 16-byte vector types, for 16-byte loads and stores (`global_load_dwordx4`, `ld.global.v4`).
//!
//! Integer lanes wrap, on the device and on the host.
//!
//! Read one through a pointer cast (`*(p as *const f32x4)`, `p.cast::<f32x4>()` on a
//! `Symmetric`), combine lanes with `+`, `-`, `*`, and take them apart with `get(lane)`.
//! Pointers to vectors must be 16-byte aligned.
#![allow(non_camel_case_types)]

use core::ops::{Add, Mul, Sub};

macro_rules! vector {
    ($name:ident, $elem:ty, $lanes:literal, $doc:literal, $add:path, $sub:path, $mul:path) => {
        #[doc = $doc]
        #[repr(C, align(16))]
        #[derive(Clone, Copy, Debug, Default, PartialEq)]
        pub struct $name(pub [$elem; $lanes]);

        impl $name {
            /// A vector of these lanes.
            #[inline(always)]
            pub fn new(lanes: [$elem; $lanes]) -> Self {
                Self(lanes)
            }

            /// A vector with every lane set to `value`.
            #[inline(always)]
            pub fn splat(value: $elem) -> Self {
                Self([value; $lanes])
            }

            /// Lane `lane` (in a kernel, `lane` must be an integer literal).
            #[inline(always)]
            pub fn get(self, lane: usize) -> $elem {
                self.0[lane]
            }
        }

        impl Add for $name {
            type Output = Self;
            #[inline(always)]
            fn add(self, rhs: Self) -> Self {
                let mut out = self.0;
                for (o, r) in out.iter_mut().zip(rhs.0) {
                    *o = $add(*o, r);
                }
                Self(out)
            }
        }

        impl Sub for $name {
            type Output = Self;
            #[inline(always)]
            fn sub(self, rhs: Self) -> Self {
                let mut out = self.0;
                for (o, r) in out.iter_mut().zip(rhs.0) {
                    *o = $sub(*o, r);
                }
                Self(out)
            }
        }

        impl Mul for $name {
            type Output = Self;
            #[inline(always)]
            fn mul(self, rhs: Self) -> Self {
                let mut out = self.0;
                for (o, r) in out.iter_mut().zip(rhs.0) {
                    *o = $mul(*o, r);
                }
                Self(out)
            }
        }
    };
}

vector!(
    f32x4,
    f32,
    4,
    "Four `f32` lanes, 16 bytes.",
    Add::add,
    Sub::sub,
    Mul::mul
);
vector!(
    i32x4,
    i32,
    4,
    "Four `i32` lanes, 16 bytes.",
    i32::wrapping_add,
    i32::wrapping_sub,
    i32::wrapping_mul
);
vector!(
    u32x4,
    u32,
    4,
    "Four `u32` lanes, 16 bytes.",
    u32::wrapping_add,
    u32::wrapping_sub,
    u32::wrapping_mul
);
vector!(
    f64x2,
    f64,
    2,
    "Two `f64` lanes, 16 bytes.",
    Add::add,
    Sub::sub,
    Mul::mul
);
vector!(
    i64x2,
    i64,
    2,
    "Two `i64` lanes, 16 bytes.",
    i64::wrapping_add,
    i64::wrapping_sub,
    i64::wrapping_mul
);
vector!(
    u64x2,
    u64,
    2,
    "Two `u64` lanes, 16 bytes.",
    u64::wrapping_add,
    u64::wrapping_sub,
    u64::wrapping_mul
);
