//! A reference for rounding to 16-bit floats, checked against `half` where it is exact.

use half::{bf16, f16};

/// `x` rounded to a 16-bit float format (`exp` exponent bits, `mant` mantissa bits) to
/// nearest, ties to even: an integer reference independent of the code under test (the
/// `half` crate's `from_f64` drops the low 32 bits first, which breaks ties).
fn round_to_16(x: f64, exp: u32, mant: u32) -> u16 {
    let sign = if x.is_sign_negative() { 1u16 << 15 } else { 0 };
    let inf = (((1u32 << exp) - 1) << mant) as u16;
    if x.is_nan() {
        return inf | (1 << (mant - 1)) | sign;
    }
    if x.is_infinite() {
        return inf | sign;
    }
    if x == 0.0 {
        return sign;
    }
    let bits = x.abs().to_bits();
    let (m53, e2) = match (bits >> 52) as i64 {
        0 => (bits & ((1 << 52) - 1), -1074i64),
        e => ((bits & ((1 << 52) - 1)) | (1 << 52), e - 1075),
    };
    // x = m53 * 2^e2. Quantum of the result: 2^k, k = floor(log2 x) - mant, no lower than
    // the smallest subnormal's.
    let bias = (1i64 << (exp - 1)) - 1;
    let log2 = 63 - m53.leading_zeros() as i64 + e2;
    let k = (log2 - mant as i64).max(1 - bias - mant as i64);
    let shift = k - e2;
    let q: u64 = if shift <= 0 {
        m53 << (-shift)
    } else if shift >= 64 {
        0
    } else {
        let q = m53 >> shift;
        let rem = m53 & ((1u64 << shift) - 1);
        let half = 1u64 << (shift - 1);
        if rem > half || (rem == half && q & 1 == 1) {
            q + 1
        } else {
            q
        }
    };
    let (q, k) = if q >> (mant + 1) != 0 {
        (q >> 1, k + 1)
    } else {
        (q, k)
    };
    if q < (1 << mant) {
        return q as u16 | sign;
    }
    let field = k + mant as i64 + bias;
    if field >= (1 << exp) - 1 {
        return inf | sign;
    }
    ((field as u16) << mant) | (q as u16 & ((1 << mant) - 1) as u16) | sign
}

pub fn f16_of(x: f64) -> f16 {
    f16::from_bits(round_to_16(x, 5, 10))
}

pub fn bf16_of(x: f64) -> bf16 {
    bf16::from_bits(round_to_16(x, 8, 7))
}

#[test]
fn the_rounding_reference_agrees_with_half_where_half_is_exact() {
    // From f32, `half` rounds correctly; the reference must agree everywhere there.
    let mut s = 0x9e37_79b9u32;
    for _ in 0..200_000 {
        s ^= s << 13;
        s ^= s >> 17;
        s ^= s << 5;
        let x = f32::from_bits(s);
        if x.is_nan() {
            continue;
        }
        assert_eq!(
            f16_of(x as f64).to_bits(),
            f16::from_f32(x).to_bits(),
            "{x:e}"
        );
        assert_eq!(
            bf16_of(x as f64).to_bits(),
            bf16::from_f32(x).to_bits(),
            "{x:e}"
        );
    }
    assert_eq!(f16_of(1.00048828225).to_f32(), 1.0009766);
}
