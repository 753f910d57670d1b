//! Every numeric cast, from every scalar type, against Rust's `as`.

use super::rounding::{bf16_of, f16_of};
use super::{run1, Scalar};
use crate::common::cpu::*;
use crate::common::ir::*;
use crate::common::tools::compile;
use crate::cpu_run::cpu_module;
use half::{bf16, f16};
use iris_device::compiler::kernel_ir::{Expr, Place, Scalar as Sc};
use iris_device::compiler::Target;

/// Outputs of the cast kernel: one pointer per destination type.
struct CastOuts {
    i8: i8,
    i16: i16,
    i32: i32,
    i64: i64,
    u8: u8,
    u16: u16,
    u32: u32,
    u64: u64,
    f16: f16,
    bf16: bf16,
    f32: f32,
    f64: f64,
}

const DESTS: [Sc; 12] = [
    Sc::I8,
    Sc::I16,
    Sc::I32,
    Sc::I64,
    Sc::U8,
    Sc::U16,
    Sc::U32,
    Sc::U64,
    Sc::F16,
    Sc::BF16,
    Sc::F32,
    Sc::F64,
];

/// `casts(a: from, o_<t>: *mut <t> ...) { *o_<t> = a as <t>; ... }`, as IR (the frontend
/// spells f16/bf16 conversions as methods; the IR has one `Cast` for all).
pub fn casts_unit(from: Sc) -> iris_device::compiler::kernel_ir::Unit {
    let mut f = Func::kernel("casts");
    let a = f.param("a", t::s(from));
    let outs: Vec<Expr> = DESTS
        .iter()
        .map(|d| f.param(&format!("o_{}", d.name()), t::ptr(t::s(*d))))
        .collect();
    let body = stmts(
        DESTS
            .iter()
            .zip(outs)
            .map(|(d, o)| s(assign(Place::Deref(o), cast(a.clone(), t::s(*d)))))
            .collect(),
    );
    unit(&format!("casts_{}", from.name()), vec![f.finish(body)])
}

fn casts_module(from: Sc) -> CpuModule {
    CpuModule::load(&compile(&casts_unit(from), Target::Cpu).object)
}

fn run_casts<T: Scalar>(m: &CpuModule, a: T) -> CastOuts {
    let mut o = CastOuts {
        i8: 0,
        i16: 0,
        i32: 0,
        i64: 0,
        u8: 0,
        u16: 0,
        u32: 0,
        u64: 0,
        f16: f16::ZERO,
        bf16: bf16::ZERO,
        f32: 0.0,
        f64: 0.0,
    };
    let mut a_ = a;
    let mut ptrs: Vec<u64> = vec![
        &mut o.i8 as *mut _ as u64,
        &mut o.i16 as *mut _ as u64,
        &mut o.i32 as *mut _ as u64,
        &mut o.i64 as *mut _ as u64,
        &mut o.u8 as *mut _ as u64,
        &mut o.u16 as *mut _ as u64,
        &mut o.u32 as *mut _ as u64,
        &mut o.u64 as *mut _ as u64,
        &mut o.f16 as *mut _ as u64,
        &mut o.bf16 as *mut _ as u64,
        &mut o.f32 as *mut _ as u64,
        &mut o.f64 as *mut _ as u64,
    ];
    let mut args = vec![arg(&mut a_)];
    args.extend(ptrs.iter_mut().map(arg));
    run1(m, "casts", &mut args);
    o
}

/// Checks every cast from a float type against Rust (`as` saturates; NaN -> 0).
fn check_float_casts<T: Scalar>(to_f64: impl Fn(T) -> f64, values: &[T]) {
    let m = casts_module(T::SC);
    for &a in values {
        let x = to_f64(a);
        let o = run_casts(&m, a);
        let ctx = format!("{} {x:e}", T::NAME);
        assert_eq!(o.i8, x as i8, "{ctx}");
        assert_eq!(o.i16, x as i16, "{ctx}");
        assert_eq!(o.i32, x as i32, "{ctx}");
        assert_eq!(o.i64, x as i64, "{ctx}");
        assert_eq!(o.u8, x as u8, "{ctx}");
        assert_eq!(o.u16, x as u16, "{ctx}");
        assert_eq!(o.u32, x as u32, "{ctx}");
        assert_eq!(o.u64, x as u64, "{ctx}");
        // Float to float rounds once, to nearest even.
        let same = |a: f64, b: f64| a == b || (a.is_nan() && b.is_nan());
        assert!(
            same(o.f16.to_f64(), f16_of(x).to_f64()),
            "{ctx}: f16 {}",
            o.f16
        );
        assert!(
            same(o.bf16.to_f64(), bf16_of(x).to_f64()),
            "{ctx}: bf16 {}",
            o.bf16
        );
        assert!(
            same(o.f32 as f64, (x as f32) as f64),
            "{ctx}: f32 {}",
            o.f32
        );
        assert!(same(o.f64, x), "{ctx}: f64 {}", o.f64);
    }
}

fn float_values() -> Vec<f64> {
    let mut v = vec![
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        1.5,
        2.5,
        -2.5,
        127.9,
        128.0,
        -128.6,
        255.5,
        256.0,
        300.7,
        -300.7,
        65504.0,
        65519.99,
        65520.0,
        1e10,
        -1e10,
        3.0e38,
        1e300,
        -1e300,
        1e-5,
        6e-8,
        3e-8,
        1e-40,
        1e-310,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        4294967295.5,
        4294967296.0,
        9.3e18,
        1.8e19,
        1.9e19,
        -9.3e18,
    ];
    // Halfway and near-halfway cases for f16 and bf16 rounding.
    for k in 0..40 {
        let base = 1.0 + k as f64 / 1024.0;
        v.push(base + 1.0 / 2048.0);
        v.push(base + 1.0 / 2048.0 + 1e-9);
        v.push(1.0 + k as f64 / 128.0 + 1.0 / 256.0);
        v.push(-(1.0 + k as f64 / 128.0 + 1.0 / 256.0));
        v.push(2f64.powi(-14 - k) * 1.37);
        v.push(2f64.powi(-126 - (k % 10)) * 1.6);
    }
    v
}

#[test]
fn casts_from_f64() {
    check_float_casts::<f64>(|x| x, &float_values());
}

#[test]
fn casts_from_f32() {
    let vals: Vec<f32> = float_values().into_iter().map(|x| x as f32).collect();
    check_float_casts::<f32>(|x| x as f64, &vals);
}

#[test]
fn casts_from_f16() {
    let vals: Vec<f16> = float_values().into_iter().map(f16_of).collect();
    check_float_casts::<f16>(|x| x.to_f64(), &vals);
}

#[test]
fn casts_from_bf16() {
    let vals: Vec<bf16> = float_values().into_iter().map(bf16_of).collect();
    check_float_casts::<bf16>(|x| x.to_f64(), &vals);
}

macro_rules! int_casts {
    ($name:ident, $t:ty) => {
        #[test]
        fn $name() {
            let m = casts_module(<$t as Scalar>::SC);
            let wide: [i64; 13] = [
                0,
                1,
                2,
                100,
                127,
                128,
                255,
                256,
                1000,
                65504,
                65535,
                65536,
                1 << 20,
            ];
            let mut vals: Vec<$t> = wide.iter().map(|&x| x as $t).collect();
            vals.extend([<$t>::MAX, <$t>::MIN, <$t>::MAX / 3, (1u64 << 24) as $t]);
            vals.extend((0..20).map(|k| (3i64.wrapping_pow(k) as $t)));
            vals.extend((0..20).map(|k| (-(3i64.wrapping_pow(k))) as $t));
            for a in vals {
                let o = run_casts(&m, a);
                let ctx = format!("{} {a}", stringify!($t));
                assert_eq!(o.i8, a as i8, "{ctx}");
                assert_eq!(o.i16, a as i16, "{ctx}");
                assert_eq!(o.i32, a as i32, "{ctx}");
                assert_eq!(o.i64, a as i64, "{ctx}");
                assert_eq!(o.u8, a as u8, "{ctx}");
                assert_eq!(o.u16, a as u16, "{ctx}");
                assert_eq!(o.u32, a as u32, "{ctx}");
                assert_eq!(o.u64, a as u64, "{ctx}");
                assert_eq!(o.f32, a as f32, "{ctx}");
                assert_eq!(o.f64, a as f64, "{ctx}");
                // 16-bit floats from integers round through f32 (as LLVM does); exact for
                // every value here below 2^24.
                assert_eq!(o.f16, f16::from_f32(a as f32), "{ctx}");
                assert_eq!(o.bf16, bf16::from_f32(a as f32), "{ctx}");
            }
        }
    };
}

int_casts!(casts_from_i8, i8);
int_casts!(casts_from_u8, u8);
int_casts!(casts_from_i16, i16);
int_casts!(casts_from_u16, u16);
int_casts!(casts_from_i32, i32);
int_casts!(casts_from_u32, u32);
int_casts!(casts_from_i64, i64);
int_casts!(casts_from_u64, u64);

#[test]
fn casts_from_bool() {
    let src = "pub fn casts(a: bool, o8: *mut u8, o32: *mut i32, o64: *mut u64) {\n unsafe { *o8 = a as u8; *o32 = a as i32; *o64 = a as u64; }\n}\n";
    let m = cpu_module("casts_bool", src);
    for a in [false, true] {
        let (mut a_, mut x, mut y, mut z) = (a, 7u8, 7i32, 7u64);
        let (mut px, mut py, mut pz) = (&mut x as *mut u8, &mut y as *mut i32, &mut z as *mut u64);
        run1(
            &m,
            "casts",
            &mut [arg(&mut a_), arg(&mut px), arg(&mut py), arg(&mut pz)],
        );
        assert_eq!((x, y, z), (a as u8, a as i32, a as u64));
    }
}
