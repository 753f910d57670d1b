//! Integer arithmetic wraps, shifts are masked, division and comparison follow the
//! signedness of the type.

use super::run1;
use crate::common::cpu::*;
use crate::cpu_run::cpu_module;

/// The integer-operations kernel for type `t`.
pub fn int_ops_src(t: &str, signed: bool) -> String {
    let neg = if signed { "-a" } else { "!a" };
    let src = format!(
        r#"
pub fn int_ops(a: {t}, b: {t}, sh: u32, out: *mut {t}, flags: *mut bool) {{
    unsafe {{
        *out.add(0) = a + b;
        *out.add(1) = a - b;
        *out.add(2) = a * b;
        *out.add(3) = a / b;
        *out.add(4) = a % b;
        *out.add(5) = a & b;
        *out.add(6) = a | b;
        *out.add(7) = a ^ b;
        *out.add(8) = a << sh;
        *out.add(9) = a >> sh;
        *out.add(10) = {neg};
        *out.add(11) = !a;
        *out.add(12) = a.min(b);
        *out.add(13) = a.max(b);
        let mut c = a;
        c += b;
        c <<= sh;
        *out.add(14) = c;
        *flags.add(0) = a < b;
        *flags.add(1) = a <= b;
        *flags.add(2) = a > b;
        *flags.add(3) = a >= b;
        *flags.add(4) = a == b;
        *flags.add(5) = a != b;
    }}
}}
"#
    );
    src
}

macro_rules! int_ops {
    ($name:ident, $t:ty, $signed:expr) => {
        #[test]
        fn $name() {
            let src = int_ops_src(stringify!($t), $signed);
            let t = stringify!($t);
            let m = cpu_module(concat!("int_ops_", stringify!($t)), &src);
            let mins = <$t>::MIN;
            let maxs = <$t>::MAX;
            let cases: Vec<($t, $t, u32)> = vec![
                (7 as $t, 3 as $t, 1),
                (maxs, 1 as $t, 0),
                (mins, maxs, 3),
                (maxs, maxs, (<$t>::BITS + 3)),
                ((maxs / 3) as $t, (2 as $t), <$t>::BITS - 1),
                (5 as $t, maxs, 100),
                (mins.wrapping_add(1), 7 as $t, 2),
            ];
            for (a, b, sh) in cases {
                let (mut a_, mut b_, mut sh_) = (a, b, sh);
                let mut out = vec![0 as $t; 15];
                let mut flags = vec![false; 6];
                let (mut op, mut fp) = (out.as_mut_ptr(), flags.as_mut_ptr());
                run1(
                    &m,
                    "int_ops",
                    &mut [
                        arg(&mut a_),
                        arg(&mut b_),
                        arg(&mut sh_),
                        arg(&mut op),
                        arg(&mut fp),
                    ],
                );
                let want = [
                    a.wrapping_add(b),
                    a.wrapping_sub(b),
                    a.wrapping_mul(b),
                    a.wrapping_div(b),
                    a.wrapping_rem(b),
                    a & b,
                    a | b,
                    a ^ b,
                    a.wrapping_shl(sh),
                    a.wrapping_shr(sh),
                    if $signed {
                        (0 as $t).wrapping_sub(a)
                    } else {
                        !a
                    },
                    !a,
                    a.min(b),
                    a.max(b),
                    a.wrapping_add(b).wrapping_shl(sh),
                ];
                assert_eq!(out, want, "{} a={a} b={b} sh={sh}", t);
                assert_eq!(
                    flags,
                    [a < b, a <= b, a > b, a >= b, a == b, a != b],
                    "a={a} b={b}"
                );
            }
        }
    };
}

int_ops!(int_ops_i8, i8, true);
int_ops!(int_ops_u8, u8, false);
int_ops!(int_ops_i16, i16, true);
int_ops!(int_ops_u16, u16, false);
int_ops!(int_ops_i32, i32, true);
int_ops!(int_ops_u32, u32, false);
int_ops!(int_ops_i64, i64, true);
int_ops!(int_ops_u64, u64, false);
