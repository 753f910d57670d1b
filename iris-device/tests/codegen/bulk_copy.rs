//! Bulk copies: Hopper's copy engine and its barriers on sm_90 and sm_90a (PTX 8.0);
//! elsewhere copies made at once and block barriers, with no barrier instructions. The
//! values they move are checked by the root package's tests/bulk_copy.rs on the CPU and
//! any GPU present.

use crate::common::tools::*;
use crate::source::unit_from_source;
use iris_device::abi::TargetKind;
use iris_device::compiler::{buildable, Target, ALL_TARGETS};

/// One batch of 32 rows of 32 bytes through shared memory.
const ROWS: &str = r#"
pub fn rows(src: *const u32, out: *mut u32) {
    let rows = shared_array::<u32, 256>();
    let bar = shared_array::<u64, 1>();
    let t = thread_idx_x();
    if t == 0 {
        bulk_barrier_init(bar);
    }
    sync_threads();
    if t == 0 {
        bulk_expect(bar, 1024);
    }
    if t < 32 {
        copy_bulk(
            unsafe { rows.add((t * 8) as usize) } as *mut [u32; 8],
            unsafe { src.add((t * 8) as usize) } as *const [u32; 8],
            bar,
        );
    }
    bulk_wait(bar, 0);
    unsafe { *out.add(t as usize) = *rows.add(t as usize) };
}
"#;

#[test]
fn bulk_copies_use_the_copy_engine_on_hopper_only() {
    let unit = unit_from_source("rows", ROWS);
    for target in buildable(&ALL_TARGETS) {
        let out = compile(&unit, target);
        let name = target.name();
        match target.kind() {
            TargetKind::Nvptx => {
                let ptx = ptx(&out);
                let engine = [
                    "mbarrier.init.shared::cta.b64",
                    "mbarrier.arrive.expect_tx.shared::cta.b64",
                    "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes",
                    "mbarrier.try_wait.parity.shared::cta.b64",
                ];
                if matches!(target, Target::Sm90 | Target::Sm90a) {
                    assert!(ptx.contains(".version 8.0"), "{name}: PTX version\n{ptx}");
                    for want in engine {
                        assert!(ptx.contains(want), "{name}: no `{want}`\n{ptx}");
                    }
                    // The copy's size is the type's (32 bytes), the batch's 1024.
                    for bytes in [32, 1024] {
                        let set = |l: &str| {
                            l.trim_start().starts_with("mov.b32")
                                && l.trim_end().ends_with(&format!(", {bytes};"))
                        };
                        assert!(ptx.lines().any(set), "{name}: no {bytes}\n{ptx}");
                    }
                } else {
                    for unwanted in engine {
                        assert!(!ptx.contains(unwanted), "{name}: `{unwanted}`\n{ptx}");
                    }
                    assert!(ptx.contains("barrier.sync") || ptx.contains("bar.sync"));
                }
            }
            TargetKind::Amdgpu => {
                let asm = disassemble(&out.object);
                assert!(asm.contains("s_barrier"), "{name}: no s_barrier\n{asm}");
                assert!(!asm.contains("scratch_"), "{name}: scratch\n{asm}");
            }
            TargetKind::Cpu => {}
        }
    }
}

/// One box of a tile-mapped matrix, then a fragment of A read from it.
const TILE: &str = r#"
pub fn tile(map: *const u64, c: *mut f32) {
    let box_ = shared_array::<bf16, 4096>();
    let bar = shared_array::<u64, 1>();
    if thread_idx_x() == 0 {
        bulk_barrier_init(bar);
    }
    sync_threads();
    if thread_idx_x() == 0 {
        bulk_expect(bar, 8192);
        copy_tile(box_, map, 0, 0, bar);
    }
    bulk_wait(bar, 0);
    let fa = mma_load_a_swizzled(box_ as *const bf16, 16, 8);
    let fb = mma_load_b_swizzled(box_ as *const bf16, 0, 16);
    mma_store(c, 16, mma(fa, fb, mma_zero()));
}
"#;

#[test]
fn tile_copies_use_the_tensor_copy_engine_on_hopper_and_swizzled_loads_use_ldmatrix() {
    let unit = unit_from_source("tile", TILE);
    for target in buildable(&ALL_TARGETS) {
        let out = compile(&unit, target);
        let name = target.name();
        match target.kind() {
            TargetKind::Nvptx => {
                let ptx = ptx(&out);
                let engine = "cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes";
                if matches!(target, Target::Sm90 | Target::Sm90a) {
                    assert!(ptx.contains(engine), "{name}: no tensor copy\n{ptx}");
                } else {
                    assert!(!ptx.contains(engine), "{name}: a tensor copy\n{ptx}");
                }
                // The box is a shared array and the columns are constants on chunks:
                // `ldmatrix` alone, no run-time test, no element loads.
                for want in [
                    "ldmatrix.sync.aligned.m8n8.x4.shared.b16",
                    "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16",
                ] {
                    assert!(ptx.contains(want), "{name}: no `{want}`\n{ptx}");
                }
                // On every LLVM: before 22 the compiler folds the tests LLVM 22 folds
                // (`codegen/known_spaces.rs`).
                for unwanted in ["isspacep", "ld.shared.b16", "ld.shared.u16"] {
                    assert!(!ptx.contains(unwanted), "{name}: `{unwanted}`\n{ptx}");
                }
            }
            TargetKind::Amdgpu => {
                let asm = disassemble(&out.object);
                assert!(
                    asm.contains("v_mfma_f32_16x16x16"),
                    "{name}: no v_mfma\n{asm}"
                );
                assert!(!asm.contains("scratch_"), "{name}: scratch\n{asm}");
            }
            TargetKind::Cpu => {}
        }
    }
}
