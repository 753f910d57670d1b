//! `half`/`bfloat` conversions for the CPU, defined under the names LLVM's backend calls
//! (`__extendhfsf2`, `__truncsfhf2`, `__truncdfhf2`, `__truncsfbf2`, `__truncdfbf2`) with
//! hidden visibility, so the linked code object resolves them itself and needs no
//! compiler runtime. They use integer operations and `float`/`double` arithmetic only.
//!
//! Truncation rounds to nearest, ties to even, with overflow to infinity, subnormals and
//! quiet NaNs, in the branch-free form: the subnormal range is rounded by adding a magic
//! number whose ulp is the target's smallest subnormal; the normal range by rebiasing the
//! exponent and adding half an ulp (minus one, plus the lowest kept bit).

use super::module::ATTR_FUNCTION;

/// A binary float format: total bits, exponent bits, mantissa bits, LLVM type.
#[derive(Clone, Copy, Debug)]
pub(super) struct Format {
    bits: u32,
    exp: u32,
    mant: u32,
    ty: &'static str,
}

/// IEEE single.
pub(super) const F32: Format = Format {
    bits: 32,
    exp: 8,
    mant: 23,
    ty: "float",
};
/// IEEE double.
pub(super) const F64: Format = Format {
    bits: 64,
    exp: 11,
    mant: 52,
    ty: "double",
};
/// IEEE half.
pub(super) const HALF: Format = Format {
    bits: 16,
    exp: 5,
    mant: 10,
    ty: "half",
};
/// Brain float.
pub(super) const BF16: Format = Format {
    bits: 16,
    exp: 8,
    mant: 7,
    ty: "bfloat",
};

impl Format {
    fn bias(self) -> i128 {
        (1i128 << (self.exp - 1)) - 1
    }
}

/// `value` as a signed constant of `bits` bits.
fn c(value: i128, bits: u32) -> String {
    super::types::int_const(value as u128, bits)
}

/// `half` -> `float`: scale the exponent-and-mantissa bits by 2^112 (exact, and right for
/// subnormals), then give infinities and NaNs the all-ones exponent.
pub(super) fn extend_half(name: &str) -> String {
    let scale = format!("0x{:016X}", 2f64.powi(112).to_bits());
    format!(
        "define hidden float {name}(half %h) {ATTR_FUNCTION} {{
  %b = bitcast half %h to i16
  %w = zext i16 %b to i32
  %sign = and i32 %w, 32768
  %sg = shl i32 %sign, 16
  %em = and i32 %w, 32767
  %sh = shl i32 %em, 13
  %f = bitcast i32 %sh to float
  %sc = fmul float %f, {scale}
  %sb = bitcast float %sc to i32
  %special = icmp uge i32 %em, 31744
  %infnan = or i32 %sh, 1879048192
  %r = select i1 %special, i32 %infnan, i32 %sb
  %o = or i32 %r, %sg
  %res = bitcast i32 %o to float
  ret float %res
}}
"
    )
}

/// `src` -> `dst` (a 16-bit format), rounding to nearest even.
pub(super) fn truncate(name: &str, src: Format, dst: Format) -> String {
    let n = src.bits;
    let i = format!("i{n}");
    let fty = src.ty;
    let sign_mask = c(1i128 << (n - 1), n);
    let inf = c(((1i128 << src.exp) - 1) << src.mant, n);
    // The smallest source value that is infinite in `dst` before rounding: 2^(bias+1).
    let too_big = c((src.bias() + dst.bias() + 1) << src.mant, n);
    // The smallest normal of `dst`: 2^(1-bias).
    let min_normal = c((src.bias() - dst.bias() + 1) << src.mant, n);
    let shift = src.mant - dst.mant;
    // A power of two whose ulp is the smallest subnormal of `dst`.
    let magic_bits = (src.bias() - dst.bias() + shift as i128 + 1) << src.mant;
    let magic = c(magic_bits, n);
    let magic_f = match src.bits {
        32 => format!(
            "0x{:016X}",
            (f32::from_bits(magic_bits as u32) as f64).to_bits()
        ),
        _ => format!("0x{:016X}", magic_bits as u64),
    };
    let rebias = c(
        ((dst.bias() - src.bias()) << src.mant) + ((1i128 << (shift - 1)) - 1),
        n,
    );
    let dst_inf = ((1i128 << dst.exp) - 1) << dst.mant;
    let dst_nan = dst_inf | (1i128 << (dst.mant - 1));
    let (dinf, dnan) = (c(dst_inf, 16), c(dst_nan, 16));
    let dty = dst.ty;
    let sign_shift = n - 16;
    format!(
        "define hidden {dty} {name}({fty} %x) {ATTR_FUNCTION} {{
  %u = bitcast {fty} %x to {i}
  %sign = and {i} %u, {sign_mask}
  %a = xor {i} %u, %sign
  %big = icmp uge {i} %a, {too_big}
  %isnan = icmp ugt {i} %a, {inf}
  %bigv = select i1 %isnan, i16 {dnan}, i16 {dinf}
  %small = icmp ult {i} %a, {min_normal}
  %af = bitcast {i} %a to {fty}
  %sum = fadd {fty} %af, {magic_f}
  %sumb = bitcast {fty} %sum to {i}
  %den = sub {i} %sumb, {magic}
  %kept = lshr {i} %a, {shift}
  %odd = and {i} %kept, 1
  %n1 = add {i} %a, {rebias}
  %n2 = add {i} %n1, %odd
  %norm = lshr {i} %n2, {shift}
  %fin = select i1 %small, {i} %den, {i} %norm
  %fin16 = trunc {i} %fin to i16
  %r0 = select i1 %big, i16 %bigv, i16 %fin16
  %sg = lshr {i} %sign, {sign_shift}
  %sg16 = trunc {i} %sg to i16
  %r = or i16 %r0, %sg16
  %res = bitcast i16 %r to {dty}
  ret {dty} %res
}}
"
    )
}
