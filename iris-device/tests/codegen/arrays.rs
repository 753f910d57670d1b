//! Register arrays and generic kernels: eight accumulators stay in registers on every GPU
//! target (no scratch on AMD, no `.local` on NVIDIA), and the CPU computes the same sums.

use crate::common::cpu::*;
use crate::common::tools::*;
use crate::cpu_run::cpu_module;
use crate::source::unit_from_source;
use iris_device::abi::TargetKind;
use iris_device::compiler::{buildable, ALL_TARGETS};
use std::ffi::c_void;

/// Each thread keeps 8 partial dot products over `k` rounds, then sums them; a generic
/// kernel does the same for any element type with its accumulator type, a 2-D array
/// transposes a 4x4 tile in registers.
const ACCUMULATORS: &str = r#"
pub fn dot8(a: *const f32, b: *const f32, out: *mut f32, rounds: u32) {
    let t = thread_idx_x() as usize;
    let mut acc = [0.0f32; 8];
    let mut k = 0u32;
    while k < rounds {
        for j in 0..8 {
            let i = (k as usize * 64 + t) * 8 + j;
            acc[j] += unsafe { *a.add(i) * *b.add(j) };
        }
        k += 1;
    }
    let mut s = 0.0f32;
    for j in 0..8 {
        s += acc[j];
    }
    unsafe { *out.add(t) = s; }
}

#[instances(T = [f32, bf16, i8], N = [4, 8])]
pub fn sums<T: Element, const N: usize>(x: *const T, out: *mut T) {
    let t = thread_idx_x() as usize;
    let mut acc = [Acc::<T>::ZERO; N];
    for j in 0..N {
        acc[j] = widen(unsafe { *x.add(t * N + j) });
    }
    unsafe { *out.add(t) = narrow::<T>(dev_total(acc)); }
}

fn dev_total<A: Element, const M: usize>(a: [A; M]) -> A {
    let mut s = A::ZERO;
    for i in 0..M {
        s += a[i];
    }
    s
}

pub fn transpose4(x: *const u32, out: *mut u32) {
    let mut m = [[0u32; 4]; 4];
    for r in 0..4 {
        for c in 0..4 {
            m[r][c] = unsafe { *x.add(r * 4 + c) };
        }
    }
    for r in 0..4 {
        for c in 0..4 {
            unsafe { *out.add(c * 4 + r) = m[r][c]; }
        }
    }
}
"#;

#[test]
fn eight_accumulators_stay_in_registers_on_every_gpu() {
    let unit = unit_from_source("accumulators", ACCUMULATORS);
    for target in buildable(&ALL_TARGETS) {
        let out = compile(&unit, target);
        match target.kind() {
            TargetKind::Nvptx => {
                let ptx = ptx(&out);
                assert!(
                    !ptx.contains(".local"),
                    "{}: local memory in\n{ptx}",
                    target.name()
                );
                assert!(ptx.contains(".entry dot8"), "{ptx}");
                assert!(ptx.contains(".entry sums__bf16__8"), "{ptx}");
            }
            TargetKind::Amdgpu => {
                let notes = notes(&out.object);
                let asm = disassemble(&out.object);
                for scratch in ["scratch_", "buffer_store", "buffer_load"] {
                    assert!(
                        !asm.contains(scratch),
                        "{}: `{scratch}` in\n{asm}",
                        target.name()
                    );
                }
                assert!(
                    !notes.contains(".private_segment_fixed_size: ")
                        || notes
                            .lines()
                            .filter(|l| l.contains(".private_segment_fixed_size:"))
                            .all(|l| l.trim_end().ends_with(": 0")),
                    "{}: private segment in\n{notes}",
                    target.name()
                );
                assert!(
                    notes.contains(".name:           sums__i8__4") || notes.contains("sums__i8__4"),
                    "{notes}"
                );
            }
            TargetKind::Cpu => {}
        }
    }
}

#[test]
fn arrays_and_generic_kernels_compute_on_the_cpu() {
    let m = cpu_module("accumulators_cpu", ACCUMULATORS);
    // dot8 over 2 rounds, 64 threads.
    let threads = 64usize;
    let rounds = 2usize;
    let a: Vec<f32> = (0..rounds * threads * 8)
        .map(|i| (i % 13) as f32 - 6.0)
        .collect();
    let b: Vec<f32> = (0..8).map(|j| j as f32 * 0.5 + 1.0).collect();
    let mut out = vec![0.0f32; threads];
    let (mut pa, mut pb, mut po, mut r) = (
        a.as_ptr() as u64,
        b.as_ptr() as u64,
        out.as_mut_ptr() as u64,
        rounds as u32,
    );
    let args: Vec<*mut c_void> = vec![arg(&mut pa), arg(&mut pb), arg(&mut po), arg(&mut r)];
    m.launch("dot8", 1, threads as u32, 0, &args);
    for t in 0..threads {
        let want: f32 = (0..rounds)
            .flat_map(|k| (0..8).map(move |j| (k, j)))
            .map(|(k, j)| a[(k * 64 + t) * 8 + j] * b[j])
            .sum();
        assert!(
            (out[t] - want).abs() < 1e-3,
            "thread {t}: {} vs {want}",
            out[t]
        );
    }

    // i8 sums accumulate in i32 and wrap back: 4 x 100 = 400 -> -112.
    let x = [100i8; 4 * 4];
    let mut o = vec![0i8; 4];
    let (mut px, mut po) = (x.as_ptr() as u64, o.as_mut_ptr() as u64);
    let args: Vec<*mut c_void> = vec![arg(&mut px), arg(&mut po)];
    m.launch("sums__i8__4", 1, 4, 0, &args);
    assert_eq!(o, vec![400i32 as i8; 4]);

    // bf16 sums accumulate in f32: 256 + 8 x 1 is exact in f32, not step by step in bf16.
    let mut xb = [half::bf16::ONE; 8];
    xb[0] = half::bf16::from_f32(256.0);
    let mut ob = vec![half::bf16::ZERO; 1];
    let (mut px, mut po) = (xb.as_ptr() as u64, ob.as_mut_ptr() as u64);
    let args: Vec<*mut c_void> = vec![arg(&mut px), arg(&mut po)];
    m.launch("sums__bf16__8", 1, 1, 0, &args);
    assert_eq!(ob[0].to_f32(), 264.0);

    let x: Vec<u32> = (0..16).collect();
    let mut o = vec![0u32; 16];
    let (mut px, mut po) = (x.as_ptr() as u64, o.as_mut_ptr() as u64);
    let args: Vec<*mut c_void> = vec![arg(&mut px), arg(&mut po)];
    m.launch("transpose4", 1, 1, 0, &args);
    let want: Vec<u32> = (0..16).map(|i| (i % 4) * 4 + i / 4).collect();
    assert_eq!(o, want);
}

/// Arrays of numbers in memory: each `[T; L]` of 16 bytes moves as one vector access, the
/// instances listed as tuples in parameter order.
const CHUNKS: &str = r#"
#[instances((f32, 4), (f16, 8), (u64, 2))]
pub fn scale_chunks<T: Element, const L: usize>(x: *const [T; L], out: *mut [T; L], k: T) {
    let t = thread_idx_x() as usize;
    let mut v = unsafe { *x.add(t) };
    for j in 0..L {
        v[j] = v[j] * k;
    }
    unsafe { *out.add(t) = v; }
}
"#;

#[test]
fn arrays_in_memory_move_as_one_vector_access() {
    let unit = unit_from_source("chunks", CHUNKS);
    for target in buildable(&ALL_TARGETS) {
        let out = compile(&unit, target);
        match target.kind() {
            TargetKind::Nvptx => {
                let ptx = ptx(&out);
                for name in [
                    "scale_chunks__f32__4",
                    "scale_chunks__f16__8",
                    "scale_chunks__u64__2",
                ] {
                    assert!(ptx.contains(&format!(".entry {name}")), "{ptx}");
                }
                let v4_loads =
                    ptx.matches("ld.global.v4").count() + ptx.matches("ld.global.nc.v4").count();
                let v2_loads = ptx.matches("ld.global.v2.u64").count()
                    + ptx.matches("ld.global.v2.b64").count()
                    + ptx.matches("ld.global.nc.v2.u64").count()
                    + ptx.matches("ld.global.nc.v2.b64").count();
                assert!(
                    v4_loads >= 2 && v2_loads >= 1,
                    "{}: scalar loads in\n{ptx}",
                    target.name()
                );
                assert!(ptx.matches("st.global.v4").count() >= 2, "{ptx}");
            }
            TargetKind::Amdgpu => {
                let asm = disassemble(&out.object);
                assert!(
                    asm.matches("global_load_dwordx4").count() >= 3,
                    "{}: not one 16-byte load per kernel in\n{asm}",
                    target.name()
                );
                assert!(asm.matches("global_store_dwordx4").count() >= 3, "{asm}");
            }
            TargetKind::Cpu => {}
        }
    }
}

#[test]
fn arrays_in_memory_compute_on_the_cpu() {
    let m = cpu_module("chunks_cpu", CHUNKS);
    let x: Vec<f32> = (0..32).map(|i| i as f32).collect();
    let mut o = vec![0.0f32; 32];
    let (mut px, mut po, mut k) = (x.as_ptr() as u64, o.as_mut_ptr() as u64, 3.0f32);
    let args: Vec<*mut c_void> = vec![arg(&mut px), arg(&mut po), arg(&mut k)];
    m.launch("scale_chunks__f32__4", 1, 8, 0, &args);
    assert_eq!(o, x.iter().map(|v| v * 3.0).collect::<Vec<_>>());

    let x: Vec<u64> = (0..8).map(|i| i << 40).collect();
    let mut o = vec![0u64; 8];
    let (mut px, mut po, mut k) = (x.as_ptr() as u64, o.as_mut_ptr() as u64, 5u64);
    let args: Vec<*mut c_void> = vec![arg(&mut px), arg(&mut po), arg(&mut k)];
    m.launch("scale_chunks__u64__2", 1, 4, 0, &args);
    assert_eq!(o, x.iter().map(|v| v * 5).collect::<Vec<_>>());
}
