//! Float arithmetic, the exact remainder, math functions and comparisons with NaN, for
//! f16, bf16, f32 and f64.

use super::rounding::{bf16_of, f16_of};
use super::{run1, Scalar};
use crate::common::cpu::*;
use crate::common::ir::*;
use crate::common::tools::compile;
use crate::cpu_run::cpu_module;
use half::{bf16, f16};
use iris_device::compiler::kernel_ir::{BinaryOp, Expr, MathFn, Place, Scalar as Sc, UnaryOp};
use iris_device::compiler::Target;

/// `float_ops(a, b, out, flags)`: arithmetic, remainder, negation, math and comparisons
/// of one float type, as IR (the frontend gives f16/bf16 only `+ - * /`).
pub fn float_ops_unit(sc: Sc) -> iris_device::compiler::kernel_ir::Unit {
    let ty = t::s(sc);
    let mut f = Func::kernel("float_ops");
    let a = f.param("a", ty.clone());
    let b = f.param("b", ty.clone());
    let out = f.param("out", t::ptr(ty.clone()));
    let flags = f.param("flags", t::ptr(t::boolean()));
    let math = |m: MathFn, args: Vec<Expr>| intr(Op::Math(m), args, ty.clone());
    let values = vec![
        bin(BinaryOp::Add, a.clone(), b.clone()),
        bin(BinaryOp::Sub, a.clone(), b.clone()),
        bin(BinaryOp::Mul, a.clone(), b.clone()),
        bin(BinaryOp::Div, a.clone(), b.clone()),
        bin(BinaryOp::Rem, a.clone(), b.clone()),
        unary(UnaryOp::Neg, a.clone()),
        math(MathFn::Sqrt, vec![a.clone()]),
        math(MathFn::Abs, vec![a.clone()]),
        math(MathFn::Min, vec![a.clone(), b.clone()]),
        math(MathFn::Max, vec![a.clone(), b.clone()]),
    ];
    let preds = [
        BinaryOp::Lt,
        BinaryOp::Le,
        BinaryOp::Gt,
        BinaryOp::Ge,
        BinaryOp::Eq,
        BinaryOp::Ne,
    ];
    let mut body = Vec::new();
    for (k, v) in values.into_iter().enumerate() {
        body.push(s(assign(
            Place::Deref(ptr_add(out.clone(), int(k as i128, t::u64()))),
            v,
        )));
    }
    for (k, p) in preds.into_iter().enumerate() {
        body.push(s(assign(
            Place::Deref(ptr_add(flags.clone(), int(k as i128, t::u64()))),
            bin(p, a.clone(), b.clone()),
        )));
    }
    unit(
        &format!("float_ops_{}", sc.name()),
        vec![f.finish(stmts(body))],
    )
}

fn float_ops_module(sc: Sc) -> CpuModule {
    CpuModule::load(&compile(&float_ops_unit(sc), Target::Cpu).object)
}

macro_rules! float_ops {
    ($name:ident, $t:ty, $to:expr, $from:expr) => {
        #[test]
        fn $name() {
            let t = stringify!($t);
            let m = float_ops_module(<$t as Scalar>::SC);
            let to: fn($t) -> f64 = $to;
            let from: fn(f64) -> $t = $from;
            let vals = [
                0.0,
                -0.0,
                1.0,
                -1.0,
                2.0,
                3.0,
                0.1,
                5.5,
                -5.5,
                7.25,
                1e3,
                3e4,
                6e-5,
                1e-7,
                f64::INFINITY,
                f64::NEG_INFINITY,
                f64::NAN,
                1e30,
                1e-30,
                12345.678,
            ];
            for &x in &vals {
                for &y in &vals {
                    let (a, b) = (from(x), from(y));
                    let (xa, yb) = (to(a), to(b));
                    let (mut a_, mut b_) = (a, b);
                    let mut out = vec![from(0.0); 10];
                    let mut flags = vec![false; 6];
                    let (mut op, mut fp) = (out.as_mut_ptr(), flags.as_mut_ptr());
                    run1(
                        &m,
                        "float_ops",
                        &mut [arg(&mut a_), arg(&mut b_), arg(&mut op), arg(&mut fp)],
                    );
                    // Exact operations in f64, rounded once to the type (exact for +-*/
                    // and sqrt at these precisions; % is exact).
                    let want = [
                        xa + yb,
                        xa - yb,
                        xa * yb,
                        xa / yb,
                        xa % yb,
                        -xa,
                        xa.sqrt(),
                        xa.abs(),
                        xa.min(yb),
                        xa.max(yb),
                    ];
                    for (k, (&got, &w)) in out.iter().zip(&want).enumerate() {
                        let (g, w) = (to(got), to(from(w)));
                        let same = g == w && g.is_sign_negative() == w.is_sign_negative()
                            || (g.is_nan() && w.is_nan())
                            || (g == 0.0 && w == 0.0 && (k == 8 || k == 9));
                        assert!(same, "{t} op #{k}: {xa:e} , {yb:e}: got {g:e}, want {w:e}");
                    }
                    assert_eq!(
                        flags,
                        [xa < yb, xa <= yb, xa > yb, xa >= yb, xa == yb, xa != yb],
                        "{xa} {yb}"
                    );
                }
            }
        }
    };
}

float_ops!(float_ops_f32, f32, |x| x as f64, |x| x as f32);
float_ops!(float_ops_f64, f64, |x| x, |x| x);
float_ops!(float_ops_f16, f16, |x| x.to_f64(), f16_of);
float_ops!(float_ops_bf16, bf16, |x| x.to_f64(), bf16_of);

#[test]
fn float_remainder_is_exact() {
    let src = "pub fn rem(a: f64, b: f64, c: f32, d: f32, o: *mut f64, p: *mut f32) {\n unsafe { *o = a % b; *p = c % d; }\n}\n";
    let m = cpu_module("float_rem", src);
    let mut pairs: Vec<(f64, f64)> = vec![
        (1e300, 1e-300),
        (1e308, 3.0),
        (-1e308, 7.5),
        (5e-324, 1e-320),
        (1e-310, 3e-320),
        (f64::MAX, f64::MIN_POSITIVE),
        (123456789.0, 0.1),
        (-0.0, 1.0),
        (1.0, f64::INFINITY),
        (f64::INFINITY, 1.0),
        (1.0, 0.0),
        (f64::NAN, 1.0),
    ];
    let mut s = 0x1234_5678_9abc_def0u64;
    for _ in 0..500 {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        let a = f64::from_bits(s & !(0x7ffu64 << 52) | ((s % 2000 + 20) << 52));
        let b = f64::from_bits(
            (s.rotate_left(29) & !(0x7ffu64 << 52)) | (((s >> 11) % 2000 + 20) << 52),
        );
        pairs.push((a, b));
    }
    for (a, b) in pairs {
        let (c, d) = (a as f32, b as f32);
        let (mut a_, mut b_, mut c_, mut d_, mut o, mut p) = (a, b, c, d, 0f64, 0f32);
        let (mut op, mut pp) = (&mut o as *mut f64, &mut p as *mut f32);
        run1(
            &m,
            "rem",
            &mut [
                arg(&mut a_),
                arg(&mut b_),
                arg(&mut c_),
                arg(&mut d_),
                arg(&mut op),
                arg(&mut pp),
            ],
        );
        let (w, v) = (a % b, c % d);
        assert!(
            o.to_bits() == w.to_bits() || (o.is_nan() && w.is_nan()),
            "{a:e} % {b:e} = {w:e}, got {o:e}"
        );
        assert!(
            p.to_bits() == v.to_bits() || (p.is_nan() && v.is_nan()),
            "{c:e} % {d:e} = {v:e}, got {p:e}"
        );
    }
}
