//! The exact float remainder (`x % y` in Rust, `fmod` in C) as a module-local function.
//!
//! LLVM's `frem` becomes a libm call on the CPU (which a code object cannot rely on) and an
//! inexact `x - trunc(x / y) * y` on NVPTX. This is binary long division, exact on every
//! target: `t` runs over `|y| * 2^k` from the largest not above `|x|` down to `|y|`,
//! subtracting where it fits. Each subtraction is exact (Sterbenz: `t <= r < 2t`) and so is
//! each halving of `t`.

use super::module::{ModuleCtx, ATTR_FUNCTION};

/// The definition of `name(x, y)` for the float type `fty` (intrinsic suffix `sfx`).
pub(super) fn definition(name: &str, fty: &str, sfx: &str, m: &mut ModuleCtx) -> String {
    let fabs = format!("llvm.fabs.{sfx}");
    let copysign = format!("llvm.copysign.{sfx}");
    m.declare(&fabs, fty, fty);
    m.declare(&copysign, fty, &format!("{fty}, {fty}"));
    let inf = format!("0x{:016X}", f64::INFINITY.to_bits());
    let nan = format!("0x{:016X}", f64::NAN.to_bits());
    let two = format!("0x{:016X}", 2f64.to_bits());
    let half = format!("0x{:016X}", 0.5f64.to_bits());
    format!(
        "define internal {fty} {name}({fty} %x, {fty} %y) {ATTR_FUNCTION} {{
entry:
  %ax = call {fty} @{fabs}({fty} %x)
  %ay = call {fty} @{fabs}({fty} %y)
  %yzero = fcmp oeq {fty} %ay, 0.0
  %xinf = fcmp oeq {fty} %ax, {inf}
  %nan = fcmp uno {fty} %x, %y
  %bad0 = or i1 %yzero, %xinf
  %bad = or i1 %bad0, %nan
  br i1 %bad, label %ret.nan, label %check
ret.nan:
  ret {fty} {nan}
check:
  %small = fcmp olt {fty} %ax, %ay
  br i1 %small, label %ret.x, label %up
ret.x:
  ret {fty} %x
up:
  %t = phi {fty} [ %ay, %check ], [ %t2, %up ]
  %t2 = fmul {fty} %t, {two}
  %more = fcmp ole {fty} %t2, %ax
  br i1 %more, label %up, label %down
down:
  %d = phi {fty} [ %t, %up ], [ %dh, %down ]
  %r = phi {fty} [ %ax, %up ], [ %r2, %down ]
  %fits = fcmp oge {fty} %r, %d
  %rs = fsub {fty} %r, %d
  %r2 = select i1 %fits, {fty} %rs, {fty} %r
  %last = fcmp oeq {fty} %d, %ay
  %dh = fmul {fty} %d, {half}
  br i1 %last, label %out, label %down
out:
  %res = call {fty} @{copysign}({fty} %r2, {fty} %x)
  ret {fty} %res
}}
"
    )
}
