//! Matrix units: `mma` lowers to `mma.sync.aligned.m16n8k16` on NVIDIA and
//! `v_mfma_f32_16x16x16*` on AMD (gfx90a, gfx942, gfx950), with no scratch or local memory
//! for the fragments. The CPU backend's exact tile products (its warp exchange lives in the
//! runtime) are checked by the root package's tests/matrix.rs.

use crate::common::tools::*;
use crate::source::unit_from_source;
use iris_device::abi::TargetKind;
use iris_device::compiler::ALL_TARGETS;

/// One warp: `C[16 x 16] = A[16 x k] * B[k x 16]`, 16 columns of A at a time.
const TILE: &str = r#"
#[instances(T = [bf16, f16])]
pub fn gemm_tile<T: MmaElement>(a: *const T, b: *const T, c: *mut f32, k: u32) {
    let mut acc = mma_zero();
    let mut k0 = 0u32;
    while k0 < k {
        let fa = mma_load_a(unsafe { a.add(k0 as usize) }, k);
        let fb = mma_load_b(unsafe { b.add((k0 * 16) as usize) }, 16);
        acc = mma(fa, fb, acc);
        k0 += 16;
    }
    mma_store(c, 16, acc);
}
"#;

#[test]
fn mma_uses_each_targets_matrix_instructions() {
    let unit = unit_from_source("gemm_tile", TILE);
    for target in ALL_TARGETS {
        let out = compile(&unit, target);
        match target.kind() {
            TargetKind::Nvptx => {
                let ptx = ptx(&out);
                for (name, ty) in [("gemm_tile__bf16", "bf16"), ("gemm_tile__f16", "f16")] {
                    let body = ptx
                        .split(".entry ")
                        .find(|b| b.starts_with(name))
                        .unwrap_or("");
                    let mma = format!("mma.sync.aligned.m16n8k16.row.col.f32.{ty}.{ty}.f32");
                    assert_eq!(
                        body.matches(&mma).count(),
                        2,
                        "{}: {name}\n{ptx}",
                        target.name()
                    );
                }
                assert!(
                    !ptx.contains(".local"),
                    "{}: local memory\n{ptx}",
                    target.name()
                );
            }
            TargetKind::Amdgpu => {
                let asm = disassemble(&out.object);
                let bf16 = if target.name() == "gfx90a" {
                    "v_mfma_f32_16x16x16bf16_1k"
                } else {
                    "v_mfma_f32_16x16x16_bf16"
                };
                let f16 = if target.name() == "gfx90a" {
                    "v_mfma_f32_16x16x16f16"
                } else {
                    "v_mfma_f32_16x16x16_f16"
                };
                assert!(asm.contains(bf16), "{}: no {bf16}\n{asm}", target.name());
                assert!(asm.contains(f16), "{}: no {f16}\n{asm}", target.name());
                assert!(
                    !asm.contains("scratch_"),
                    "{}: scratch\n{asm}",
                    target.name()
                );
            }
            TargetKind::Cpu => {}
        }
    }
}

/// A warp's 64 x 64 block: a 4 x 4 register array of accumulators.
const BLOCK64: &str = r#"
pub fn block64(a: *const bf16, b: *const bf16, c: *mut f32, k: u32) {
    let mut acc = [[mma_zero(); 4]; 4];
    let mut k0 = 0u32;
    while k0 < k {
        let mut fa = [mma_load_a(a, k); 4];
        let mut fb = [mma_load_b(b, 64); 4];
        for i in 0..4 {
            fa[i] = mma_load_a(unsafe { a.add((16 * i as u32 * k + k0) as usize) }, k);
            fb[i] = mma_load_b(unsafe { b.add((k0 * 64 + 16 * i as u32) as usize) }, 64);
        }
        for i in 0..4 {
            for j in 0..4 {
                acc[i][j] = mma(fa[i], fb[j], acc[i][j]);
            }
        }
        k0 += 16;
    }
    for i in 0..4 {
        for j in 0..4 {
            mma_store(unsafe { c.add((16 * i * 64 + 16 * j) as usize) }, 64, acc[i][j]);
        }
    }
}
"#;

#[test]
fn a_register_array_of_accumulators_stays_in_registers() {
    let unit = unit_from_source("block64", BLOCK64);
    for target in ALL_TARGETS {
        let out = compile(&unit, target);
        match target.kind() {
            TargetKind::Nvptx => {
                let ptx = ptx(&out);
                assert_eq!(
                    ptx.matches("mma.sync.aligned.m16n8k16").count(),
                    32,
                    "{ptx}"
                );
                assert!(
                    !ptx.contains(".local"),
                    "{}: local memory\n{ptx}",
                    target.name()
                );
            }
            TargetKind::Amdgpu => {
                let asm = disassemble(&out.object);
                assert_eq!(
                    asm.matches("v_mfma_f32_16x16x16").count(),
                    16,
                    "{}\n{asm}",
                    target.name()
                );
                assert!(
                    !asm.contains("scratch_"),
                    "{}: scratch\n{asm}",
                    target.name()
                );
            }
            TargetKind::Cpu => {}
        }
    }
}
