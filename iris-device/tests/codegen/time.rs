//! Device time: `global_timer_ns`, `clock64` and `nanosleep` read the right counter on
//! every target, are never merged or hoisted, and keep time on the CPU.

use crate::common::cpu::*;
use crate::common::tools::*;
use crate::cpu_run::cpu_module;
use crate::source::unit_from_source;
use iris_device::abi::TargetKind;
use iris_device::compiler::{buildable, Target, ALL_TARGETS};
use std::ffi::c_void;

/// Reads both clocks, sleeps, reads both again; a second kernel waits in a loop until
/// the timer passed a deadline (a read hoisted out of the loop would never end).
const TIMES: &str = r#"
pub fn times(out: *mut u64, ns: u32) {
    let t0 = global_timer_ns();
    let c0 = clock64();
    nanosleep(ns);
    let t1 = global_timer_ns();
    let c1 = clock64();
    unsafe {
        *out = t0;
        *out.add(1) = t1;
        *out.add(2) = c0;
        *out.add(3) = c1;
    }
}

pub fn wait_until(out: *mut u64, ns: u64) {
    let start = global_timer_ns();
    let mut polls = 0u64;
    while global_timer_ns() - start < ns {
        polls += 1;
    }
    unsafe { *out = polls };
}
"#;

fn count(text: &str, needle: &str) -> usize {
    text.matches(needle).count()
}

#[test]
fn every_target_reads_its_own_clocks_and_sleeps() {
    let unit = unit_from_source("times", TIMES);
    for target in buildable(&ALL_TARGETS) {
        let out = compile(&unit, target);
        match target.kind() {
            TargetKind::Nvptx => {
                let ptx = ptx(&out);
                // Two reads each in `times`, and a read before and in the loop.
                assert!(count(&ptx, "%globaltimer") >= 4, "{ptx}");
                assert!(count(&ptx, "%clock64") >= 2, "{ptx}");
                assert!(ptx.contains("nanosleep.u32"), "{ptx}");
            }
            TargetKind::Amdgpu => {
                let asm = disassemble(&out.object);
                assert!(
                    count(&asm, "s_memrealtime") >= 4,
                    "{}: {asm}",
                    target.name()
                );
                assert!(count(&asm, "s_memtime") >= 2, "{}: {asm}", target.name());
                assert!(asm.contains("s_sleep"), "{}: {asm}", target.name());
            }
            TargetKind::Cpu => {
                // Calls through the launch context: nothing to merge.
                assert!(out.opt.matches("call i64 %").count() >= 4, "{}", out.opt);
            }
        }
    }
}

#[test]
fn on_the_cpu_a_sleep_takes_its_time_and_a_timed_wait_ends() {
    let m = cpu_module("times_cpu", TIMES);
    let mut out = [0u64; 4];
    let (mut p, mut ns) = (out.as_mut_ptr() as u64, 3_000_000u32);
    let args: Vec<*mut c_void> = vec![arg(&mut p), arg(&mut ns)];
    m.launch("times", 1, 1, 0, &args);
    let [t0, t1, c0, c1] = out;
    assert!(t1 - t0 >= 3_000_000, "slept {} ns", t1 - t0);
    assert!(c1 > c0, "clock64 {c0} -> {c1}");

    let mut polls = 0u64;
    let (mut p, mut wait) = (&mut polls as *mut u64 as u64, 2_000_000u64);
    let args: Vec<*mut c_void> = vec![arg(&mut p), arg(&mut wait)];
    let start = std::time::Instant::now();
    m.launch("wait_until", 1, 1, 0, &args);
    let took = start.elapsed();
    assert!(took >= std::time::Duration::from_millis(2), "{took:?}");
    assert!(polls > 0);
}

#[test]
fn nanosleep_takes_a_u32() {
    let bad = r#"
pub fn bad(ns: u64) {
    nanosleep(ns);
}
"#;
    let file: syn::File = syn::parse_str(bad).unwrap();
    let items: Vec<(syn::ItemFn, bool)> = file
        .items
        .into_iter()
        .filter_map(|i| match i {
            syn::Item::Fn(f) => Some((f, true)),
            _ => None,
        })
        .collect();
    let errs = iris_device::compiler::frontend::build_unit("bad", &items).unwrap_err();
    assert!(errs[0].message.contains("u32"), "{}", errs[0].message);
    let _ = Target::Cpu;
}
