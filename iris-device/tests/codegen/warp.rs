//! Warp operations lower to each target's own instructions: `shfl.sync`/`vote.sync` over
//! the active mask on NVIDIA, `ds_bpermute`/`mbcnt` and the wave ballot on AMD, calls
//! through the launch context's warp exchange on the CPU.

use crate::common::tools::*;
use crate::source::unit_from_source;
use iris_device::abi::TargetKind;
use iris_device::compiler::{buildable, ALL_TARGETS};

const WARP_OPS: &str = r#"
pub fn warp_ops(x: *const f32, out: *mut f32, bits: *mut u64) {
    let t = thread_idx_x() as usize;
    let v = unsafe { *x.add(t) };
    let s = warp_reduce_add(v);
    let d = shfl_down(v, 1) + shfl_up(v, 2) + shfl(v, 0);
    let b = ballot(v > 0.0);
    warp_sync();
    let wide = shfl_xor(b, 3);
    unsafe {
        *out.add(t) = s + d;
        *bits.add(t) = wide + if any(v > 1.0) { 1 } else { 0 } + if all(v > 2.0) { 2 } else { 0 };
        *bits.add(t + 64) = (lane_id() + warp_id() * 1000 + warp_size() * 100000) as u64;
    }
}
"#;

fn count(text: &str, needle: &str) -> usize {
    text.matches(needle).count()
}

#[test]
fn warp_operations_use_each_targets_instructions() {
    let unit = unit_from_source("warp_ops", WARP_OPS);
    for target in buildable(&ALL_TARGETS) {
        let out = compile(&unit, target);
        match target.kind() {
            TargetKind::Nvptx => {
                let ptx = ptx(&out);
                // Five butterfly steps of the reduction, one per 32-bit word of the u64.
                assert!(count(&ptx, "shfl.sync.bfly.b32") >= 5 + 2, "{ptx}");
                assert!(ptx.contains("shfl.sync.down.b32"), "{ptx}");
                assert!(ptx.contains("shfl.sync.up.b32"), "{ptx}");
                assert!(ptx.contains("shfl.sync.idx.b32"), "{ptx}");
                assert!(ptx.contains("vote.sync.ballot.b32"), "{ptx}");
                assert!(ptx.contains("vote.sync.any.pred"), "{ptx}");
                assert!(ptx.contains("vote.sync.all.pred"), "{ptx}");
                // The member mask is the warp's lanes in the block, not `activemask`
                // (lanes still in a branch would be left out).
                assert!(!ptx.contains("activemask.b32"), "{ptx}");
                assert!(ptx.contains("bar.warp.sync"), "{ptx}");
                assert!(ptx.contains("%laneid"), "{ptx}");
            }
            TargetKind::Amdgpu => {
                let asm = disassemble(&out.object);
                // Six butterfly steps for 64 lanes, and the other shuffles.
                assert!(
                    count(&asm, "ds_bpermute_b32") >= 6 + 3,
                    "{}: {asm}",
                    target.name()
                );
                assert!(
                    asm.contains("v_mbcnt_lo_u32_b32"),
                    "{}: {asm}",
                    target.name()
                );
                assert!(
                    asm.contains("v_mbcnt_hi_u32_b32"),
                    "{}: {asm}",
                    target.name()
                );
                assert!(!asm.contains("scratch_"), "{}: {asm}", target.name());
            }
            TargetKind::Cpu => {
                // The warp exchange through the launch context (offsets 96 and 104).
                assert!(out.opt.contains("i64 96"), "{}", out.opt);
                assert!(out.opt.contains("i64 104"), "{}", out.opt);
            }
        }
    }
}
