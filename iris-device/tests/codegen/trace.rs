//! `trace_event(id, value)`: nothing at all when tracing is not built in (the same code
//! as without the call, on every target); built in, two hidden kernel arguments, a
//! skipped event when the buffer is 0, and on the CPU records in the buffer's layout.

use crate::common::cpu::*;
use crate::common::tools::*;
use crate::source::unit_from_source;
use iris_device::abi::trace::{buffer_bytes, record_word, HEADER_WORDS, HIDDEN_SLOTS};
use iris_device::abi::TargetKind;
use iris_device::compiler::kernel_ir::Unit;
use iris_device::compiler::{buildable, Target, ALL_TARGETS};
use std::ffi::c_void;

/// A kernel that traces in its body and through a device function.
const TRACED: &str = r#"
pub fn marks(x: *mut u32, n: u32) {
    let i = block_idx_x() * block_dim_x() + thread_idx_x();
    trace_event(7, i as u64);
    if i < n {
        unsafe { *x.add(i as usize) += 1 };
    }
    dev_note(block_idx_x());
}

fn dev_note(b: u32) {
    trace_event(9, b as u64 + 100);
}
"#;

/// The same kernel without the events.
const PLAIN: &str = r#"
pub fn marks(x: *mut u32, n: u32) {
    let i = block_idx_x() * block_dim_x() + thread_idx_x();
    if i < n {
        unsafe { *x.add(i as usize) += 1 };
    }
    dev_note(block_idx_x());
}

fn dev_note(b: u32) {
    let _ = b;
}
"#;

fn unit(src: &str, trace_events: bool) -> Unit {
    let mut unit = unit_from_source("traced", src);
    unit.trace_events = trace_events;
    unit
}

/// The optimised IR without its module header, temporaries unnumbered (`%t12` -> `%t`:
/// the lowering numbers the operands an event evaluated, which LLVM then drops).
fn body(opt: &str) -> String {
    let mut out = String::new();
    for line in opt
        .lines()
        .filter(|l| !l.starts_with("; ModuleID") && !l.starts_with("source_filename"))
    {
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            out.push(c);
            if c == '%' && chars.peek() == Some(&'t') {
                out.push('t');
                chars.next();
                while chars.peek().is_some_and(char::is_ascii_digit) {
                    chars.next();
                }
            }
        }
        out.push('\n');
    }
    out
}

#[test]
fn without_tracing_built_in_an_event_is_no_code_on_any_target() {
    let traced = unit(TRACED, false);
    let plain = unit(PLAIN, false);
    assert!(traced.calls_trace_event() && !traced.trace_param());
    for target in buildable(&ALL_TARGETS) {
        let (a, b) = (compile(&traced, target), compile(&plain, target));
        assert_eq!(body(&a.opt), body(&b.opt), "{}", target.name());
        if target.kind() == TargetKind::Nvptx {
            assert_eq!(ptx(&a), ptx(&b), "{}: the same PTX", target.name());
        } else {
            let code = |o: &[u8]| -> String {
                // Without the header line, which names the scratch file.
                let asm = disassemble(o);
                asm.lines()
                    .filter(|l| !l.contains("file format"))
                    .collect::<Vec<_>>()
                    .join("\n")
            };
            assert!(
                code(&a.object) == code(&b.object),
                "{}: not the same instructions",
                target.name()
            );
        }
    }
}

#[test]
fn with_tracing_built_in_a_kernel_takes_two_hidden_arguments_and_records() {
    let traced = unit(TRACED, true);
    let plain = unit(PLAIN, true);
    assert!(traced.trace_param());
    assert!(
        !plain.trace_param(),
        "a unit without events takes nothing hidden"
    );
    for target in buildable(&ALL_TARGETS) {
        let out = compile(&traced, target);
        match target.kind() {
            TargetKind::Nvptx => {
                let ptx = ptx(&out);
                let params = ptx_params(&ptx, "marks");
                assert_eq!(params.len(), 2 + HIDDEN_SLOTS, "{params:?}");
                assert!(params[2..].iter().all(|p| p.contains(".u64")), "{params:?}");
                assert!(ptx.contains("%globaltimer"), "{ptx}");
                assert!(ptx.contains("atom.") && ptx.contains(".add.u64"), "{ptx}");
                let plain_ptx = self::ptx(&compile(&plain, target));
                assert_eq!(ptx_params(&plain_ptx, "marks").len(), 2);
            }
            TargetKind::Amdgpu => {
                let sizes = amdgpu_arg_sizes(&notes(&out.object), "marks");
                assert_eq!(sizes, [8, 4, 8, 8], "{}", target.name());
                let asm = disassemble(&out.object);
                assert!(asm.contains("s_memrealtime"), "{}: {asm}", target.name());
                assert!(
                    asm.contains("atomic_add_x2"),
                    "{}: an atomic add of the ring's count: {asm}",
                    target.name()
                );
            }
            TargetKind::Cpu => {}
        }
    }
}

#[test]
fn on_the_cpu_each_block_writes_its_ring_and_a_zero_buffer_skips() {
    let out = compile(&unit(TRACED, true), Target::Cpu);
    let m = CpuModule::load(&out.object);
    let (grid, block, n) = (3u32, 4u32, 10u32);
    let (rings, events) = (2u64, 4u64);
    let mut x = vec![0u32; n as usize];
    let mut buffer = vec![0u64; (buffer_bytes(rings, events) / 8) as usize];
    buffer[0] = rings - 1;
    buffer[1] = events - 1;
    let (mut xp, mut np) = (x.as_mut_ptr() as u64, n);
    let (mut ring, mut launch) = (buffer.as_mut_ptr() as u64, 5u64);
    let args: Vec<*mut c_void> = vec![arg(&mut xp), arg(&mut np), arg(&mut ring), arg(&mut launch)];
    m.launch("marks", grid, block, 0, &args);
    assert!(x.iter().all(|&v| v == 1), "{x:?}");
    // Blocks 0 and 2 share ring 0 (16 events, 4 kept), block 1 has ring 1 (8, 4 kept).
    let counts = &buffer[HEADER_WORDS as usize..(HEADER_WORDS + rings) as usize];
    assert_eq!(counts, [16, 8]);
    for r in 0..rings {
        for k in 0..events {
            let w = record_word(rings, events, r, k) as usize;
            let (ts, value, tag, place) = (buffer[w], buffer[w + 1], buffer[w + 2], buffer[w + 3]);
            let (id, serial) = (tag as u32, tag >> 32);
            let (b, t) = (place as u32, (place >> 32) as u32);
            assert!(ts > 0, "ring {r} record {k}: no time");
            assert_eq!(serial, 5);
            assert_eq!(u64::from(b) % rings, r, "block {b} in ring {r}");
            assert!(t < block);
            match id {
                7 => assert_eq!(value, u64::from(b * block + t)),
                9 => assert_eq!(value, u64::from(b) + 100),
                other => panic!("id {other}"),
            }
        }
    }
    // A launch of an untraced run passes 0: the kernel runs, nothing is written.
    let before = buffer.clone();
    let (mut none, mut zero) = (0u64, 0u64);
    let args: Vec<*mut c_void> = vec![arg(&mut xp), arg(&mut np), arg(&mut none), arg(&mut zero)];
    m.launch("marks", grid, block, 0, &args);
    assert!(x.iter().all(|&v| v == 2), "{x:?}");
    assert_eq!(buffer, before);
}
