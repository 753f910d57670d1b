//! Matrix units: `mma` lowers to `mma.sync.aligned.m16n8k16` on NVIDIA and
//! `v_mfma_f32_16x16x16*` on AMD (gfx90a, gfx942, gfx950), with no scratch or local memory
//! for the fragments. The CPU backend's exact tile products (its warp exchange lives in the
//! runtime) are checked by the root package's tests/matrix.rs.

use crate::common::tools::*;
use crate::source::unit_from_source;
use iris_device::abi::TargetKind;
use iris_device::compiler::{buildable, Target, ALL_TARGETS};

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
    for target in buildable(&ALL_TARGETS) {
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
                    // The accumulator's pairs of adjacent columns: four 8-byte stores
                    // where the tile is 8-byte aligned and `ld` even, else eight single
                    // ones (the test at run time).
                    if nvptx_like_llvm22() {
                        assert_eq!(
                            body.matches("st.global.v2.b32").count(),
                            4,
                            "{}: {name}: 4 paired stores\n{body}",
                            target.name()
                        );
                        assert_eq!(
                            body.matches("st.global.b32").count(),
                            8,
                            "{}: {name}: 8 single stores\n{body}",
                            target.name()
                        );
                    }
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
    for target in buildable(&ALL_TARGETS) {
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

/// A block's 32 x 32 tile of C through shared memory, two buffers deep: the next 32 x 32
/// slices of A and B copied in with `copy_async` while the current ones feed `mma`.
const PIPELINED: &str = r#"
#[instances(T = [bf16])]
pub fn pipelined<T: MmaElement>(a: *const T, b: *const T, c: *mut f32, n: u32, k: u32) {
    let sa = shared_array::<T, 2560>(); // 2 x 32 rows x 40
    let sb = shared_array::<T, 2560>(); // 2 x 32 rows x 40
    let warp = thread_idx_x() / warp_size();
    let (wr, wc) = ((warp / 2) * 16, (warp % 2) * 16);
    let t = thread_idx_x();
    let (r, c8) = (t / 4, (t % 4) * 8);
    let mut acc = mma_zero();
    copy_async(
        unsafe { sa.add((r * 40 + c8) as usize) } as *mut [T; 8],
        unsafe { a.add((r * k + c8) as usize) } as *const [T; 8],
    );
    copy_async(
        unsafe { sb.add((r * 40 + c8) as usize) } as *mut [T; 8],
        unsafe { b.add((r * n + c8) as usize) } as *const [T; 8],
    );
    copy_async_commit();
    let mut k0 = 0u32;
    while k0 < k {
        let cur = (k0 / 32) % 2;
        if k0 + 32 < k {
            let next = 1 - cur;
            copy_async(
                unsafe { sa.add((next * 1280 + r * 40 + c8) as usize) } as *mut [T; 8],
                unsafe { a.add((r * k + k0 + 32 + c8) as usize) } as *const [T; 8],
            );
            copy_async(
                unsafe { sb.add((next * 1280 + r * 40 + c8) as usize) } as *mut [T; 8],
                unsafe { b.add(((k0 + 32 + r) * n + c8) as usize) } as *const [T; 8],
            );
            copy_async_commit();
            copy_async_wait(1);
        } else {
            copy_async_wait(0);
        }
        sync_threads();
        for kk in 0..2 {
            let fa = mma_load_a(unsafe { sa.add((cur * 1280 + wr * 40 + 16 * kk as u32) as usize) }, 40);
            let fb = mma_load_b(unsafe { sb.add((cur * 1280 + 16 * kk as u32 * 40 + wc) as usize) }, 40);
            acc = mma(fa, fb, acc);
        }
        sync_threads();
        k0 += 32;
    }
    mma_store(unsafe { c.add((wr * n + wc) as usize) }, n, acc);
}
"#;

#[test]
fn shared_memory_tiles_use_async_copies_and_matrix_loads() {
    let unit = unit_from_source("pipelined", PIPELINED);
    for target in buildable(&ALL_TARGETS) {
        let out = compile(&unit, target);
        let name = target.name();
        match target.kind() {
            TargetKind::Nvptx => {
                let ptx = ptx(&out);
                for want in [
                    "cp.async.cg.shared.global [",
                    "cp.async.commit_group",
                    "cp.async.wait_group 1",
                    "cp.async.wait_group 0",
                    "ldmatrix.sync.aligned.m8n8.x4.shared.b16",
                    "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16",
                ] {
                    // One space for the tab LLVM 22 puts after some mnemonics.
                    let spaced = ptx.replace(" \t", " ").replace('\t', " ");
                    assert!(spaced.contains(want), "{name}: no `{want}`\n{ptx}");
                }
                // The fragments' addresses are proven shared and 16-byte aligned from the
                // kernel's own expressions (a shared array, offsets that are multiples of
                // 8 elements): `ldmatrix` alone, no run-time test, no element-by-element
                // fallback.
                // On every LLVM: before 22 the compiler folds the tests LLVM 22 folds
                // (`codegen/known_spaces.rs`).
                for unwanted in ["isspacep", ".local", "ld.shared.b16", "ld.shared.u16"] {
                    assert!(!ptx.contains(unwanted), "{name}: `{unwanted}`\n{ptx}");
                }
            }
            TargetKind::Amdgpu => {
                let asm = disassemble(&out.object);
                for want in [
                    "global_load_dwordx4",
                    "ds_write_b128",
                    "v_mfma_f32_16x16x16",
                ] {
                    assert!(asm.contains(want), "{name}: no `{want}`\n{asm}");
                }
                assert!(!asm.contains("scratch_"), "{name}: scratch\n{asm}");
            }
            TargetKind::Cpu => {}
        }
    }
}

/// Fragments of a shared array at offsets that are multiples of 16 bytes.
const SHARED_FRAGMENTS: &str = r#"
pub fn shared_fragments(a: *const bf16, c: *mut f32) {
    let s = shared_array::<bf16, 1024>();
    let t = thread_idx_x();
    unsafe { *s.add(t as usize) = *a.add(t as usize) };
    sync_threads();
    let warp = thread_idx_x() / warp_size();
    let fa = mma_load_a(unsafe { s.add((warp * 256) as usize) }, 16);
    let fb = mma_load_b(unsafe { s.add(512) }, 16);
    mma_store(c, 16, mma(fa, fb, mma_zero()));
}
pub fn shifted(a: *const bf16, c: *mut f32, x: u32) {
    let s = shared_array::<bf16, 4096>();
    let t = thread_idx_x();
    unsafe { *s.add(t as usize) = *a.add(t as usize) };
    sync_threads();
    let row = x % 4;
    let off = (row << 3) * 40;
    let tile = unsafe { s.add((off + 16) as usize) };
    let fa = mma_load_a(tile as *const bf16, 40);
    let fb = mma_load_b(unsafe { s.add(((x & !7) - 8) as usize) }, 16);
    mma_store(c, 16, mma(fa, fb, mma_zero()));
}
pub fn four_elements(a: *const bf16, c: *mut f32, x: u32) {
    let s = shared_array::<bf16, 4096>();
    let t = thread_idx_x();
    unsafe { *s.add(t as usize) = *a.add(t as usize) };
    sync_threads();
    let fa = mma_load_a(unsafe { s.add((x * 4) as usize) }, 16);
    let fb = mma_load_b(unsafe { s.add(512) }, 16);
    mma_store(c, 16, mma(fa, fb, mma_zero()));
}
pub fn odd_stride(a: *const bf16, c: *mut f32) {
    let s = shared_array::<bf16, 4096>();
    let t = thread_idx_x();
    unsafe { *s.add(t as usize) = *a.add(t as usize) };
    sync_threads();
    let fa = mma_load_a(unsafe { s.add(512) }, 20);
    let fb = mma_load_b(unsafe { s.add(1024) }, 16);
    mma_store(c, 16, mma(fa, fb, mma_zero()));
}
pub fn unknown_offset(a: *const bf16, c: *mut f32, at: u32) {
    let s = shared_array::<bf16, 1024>();
    let t = thread_idx_x();
    unsafe { *s.add(t as usize) = *a.add(t as usize) };
    sync_threads();
    let fa = mma_load_a(unsafe { s.add(at as usize) }, 16);
    let fb = mma_load_b(unsafe { s.add(512) }, 16);
    mma_store(c, 16, mma(fa, fb, mma_zero()));
}
"#;

#[test]
fn fragments_of_shared_arrays_need_no_alignment_fallback() {
    let unit = unit_from_source("shared_fragments", SHARED_FRAGMENTS);
    for target in [Target::Sm80, Target::Sm90] {
        let ptx = ptx(&compile(&unit, target));
        let name = target.name();
        let entry = |n: &str| ptx_entry(&ptx, n, name);
        // The offsets are multiples of 8 elements from a shared array (1024-byte
        // aligned): the alignment `ldmatrix` needs is proven, so no run-time test and no
        // element-by-element fallback are compiled.
        let proven = entry("shared_fragments");
        assert_eq!(
            proven.matches("ldmatrix.sync.aligned").count(),
            2,
            "{name}\n{proven}"
        );
        assert!(
            !proven.contains("ld.shared.b16") && !proven.contains("ld.shared.u16"),
            "{name}: a fallback\n{proven}"
        );
        // Through immutable `let`s, `%`, `<<`, `*`, `+`, a mask and `-`, and a cast.
        let shifted = entry("shifted");
        assert_eq!(
            shifted.matches("ldmatrix.sync.aligned").count(),
            2,
            "{name}\n{shifted}"
        );
        assert!(
            !shifted.contains("ld.shared.b16") && !shifted.contains("ld.shared.u16"),
            "{name}: a fallback\n{shifted}"
        );
        // An offset nothing proves aligned keeps the run-time test and the fallback; so
        // do a multiple of 4 elements (8 bytes) and rows 20 elements (40 bytes) apart.
        for kernel in ["unknown_offset", "four_elements", "odd_stride"] {
            let body = entry(kernel);
            assert!(
                body.contains("ldmatrix.sync.aligned"),
                "{name} {kernel}\n{body}"
            );
            // (LLVM 19 to 21 load the fallback's pairs of elements as 32-bit words.)
            assert!(
                [
                    "ld.shared.b16",
                    "ld.shared.u16",
                    "ld.shared.b32",
                    "ld.shared.u32"
                ]
                .iter()
                .any(|l| body.contains(l)),
                "{name} {kernel}: no fallback\n{body}"
            );
        }
    }
}

/// Two warpgroups: each multiplies its 64 rows of a shared A (128 x 64) by a shared Bᵀ
/// (128 x 64), the tiles written element by element in the swizzled warpgroup layout.
const WARPGROUP: &str = r#"
#[instances(T = [bf16, f16])]
pub fn warpgroup<T: MmaElement>(a: *const T, bt: *const T, c: *mut f32) {
    let sa = shared_array::<T, 8192>();
    let sb = shared_array::<T, 8192>();
    let mut i = thread_idx_x();
    while i < 8192 {
        let (r, k) = (i / 64, i % 64);
        let at = r * 64 + ((k / 8) ^ (r % 8)) * 8 + k % 8;
        unsafe { *sa.add(at as usize) = *a.add(i as usize) };
        unsafe { *sb.add(at as usize) = *bt.add(i as usize) };
        i += block_dim_x();
    }
    sync_threads();
    let group = thread_idx_x() / 128;
    let ta = unsafe { sa.add((group * 4096) as usize) } as *const T;
    let mut acc = wg_zero();
    acc = wg_mma(ta, sb as *const T, 0, acc);
    acc = wg_mma(ta, sb as *const T, 1, acc);
    wg_commit();
    acc = wg_wait(acc, 0);
    acc = wg_mma(ta, sb as *const T, 2, acc);
    wg_commit();
    acc = wg_wait(acc, 0);
    wg_store(unsafe { c.add((group * 64 * 128) as usize) }, 128, acc);
}
"#;

#[test]
fn warpgroup_mma_is_wgmma_on_sm_90a_and_computed_elsewhere() {
    let unit = unit_from_source("warpgroup", WARPGROUP);
    // A unit that calls `wg_mma` is compiled for sm_90a where sm_90 is asked for.
    let compiled =
        iris_device::compiler::compile_ir(unit.clone(), &[Target::Sm80, Target::Sm90], None)
            .unwrap_or_else(|e| panic!("{e:?}"));
    let names: Vec<&str> = compiled.objects.iter().map(|(t, _)| t.name()).collect();
    assert_eq!(names, ["sm_80", "sm_90a"]);
    for target in buildable(&ALL_TARGETS)
        .into_iter()
        .map(|t| t.for_unit(true))
    {
        let out = compile(&unit, target);
        let name = target.name();
        match target.kind() {
            TargetKind::Nvptx => {
                let ptx = ptx(&out);
                if target == Target::Sm90a {
                    assert!(ptx.contains(".target sm_90a"), "{name}\n{ptx}");
                    for ty in ["bf16", "f16"] {
                        let body = ptx
                            .split(".entry ")
                            .find(|b| b.starts_with(&format!("warpgroup__{ty}")))
                            .unwrap_or("");
                        let want = format!("wgmma.mma_async.sync.aligned.m64n128k16.f32.{ty}.{ty}");
                        assert_eq!(
                            body.matches(&want).count(),
                            3,
                            "{name} {ty}: three `{want}`\n{body}"
                        );
                        // One fence before the run of two (the second's accumulator
                        // comes straight from the first), one after the wait.
                        if nvptx_like_llvm22() {
                            assert_eq!(
                                body.matches("wgmma.fence.sync.aligned").count(),
                                2,
                                "{name} {ty}: two fences\n{body}"
                            );
                        }
                        // Accumulator pairs as one 8-byte store where the tile is
                        // aligned, single ones where it may not be.
                        if nvptx_like_llvm22() {
                            assert_eq!(
                                body.matches("st.global.v2.b32").count(),
                                32,
                                "{name} {ty}: 32 paired stores\n{body}"
                            );
                            assert_eq!(
                                body.matches("st.global.b32").count(),
                                64,
                                "{name} {ty}: 64 single stores\n{body}"
                            );
                        }
                        // Both tiles provably on 1024-byte boundaries: no check.
                        assert!(!body.contains("trap"), "{name} {ty}: a check\n{body}");
                        for want in [
                            "wgmma.fence.sync.aligned",
                            "wgmma.commit_group.sync.aligned",
                            "wgmma.wait_group.sync.aligned 0",
                        ] {
                            assert!(body.contains(want), "{name} {ty}: no `{want}`\n{body}");
                        }
                    }
                } else {
                    assert!(
                        !ptx.contains("wgmma"),
                        "{name}: wgmma outside sm_90a\n{ptx}"
                    );
                }
                assert!(!ptx.contains(".local"), "{name}: local memory\n{ptx}");
            }
            TargetKind::Amdgpu => {
                let asm = disassemble(&out.object);
                assert!(!asm.contains("scratch_"), "{name}: scratch\n{asm}");
            }
            TargetKind::Cpu => {}
        }
    }
}

/// A tile at an offset the kernel's expressions cannot bound (a parameter): the swizzle
/// needs 1024-byte alignment, so on sm_90a, in a unit built with peer checks, each
/// `wgmma` first traps if a tile is off it; without peer checks nothing is added.
const UNPROVEN_TILE: &str = r#"
pub fn unproven_tile(c: *mut f32, at: u32) {
    let sa = shared_array::<bf16, 16384>();
    let ta = unsafe { sa.add(at as usize) } as *const bf16;
    let mut acc = wg_zero();
    acc = wg_mma(ta, sa as *const bf16, 0, acc);
    wg_commit();
    acc = wg_wait(acc, 0);
    wg_store(c, 128, acc);
}
"#;

#[test]
fn with_peer_checks_a_wgmma_whose_tiles_may_be_off_their_boundary_traps_if_they_are() {
    let mut unit = unit_from_source("unproven_tile", UNPROVEN_TILE);
    let Some(target) = buildable(&[Target::Sm90a]).into_iter().next() else {
        eprintln!("skipped: this LLVM has no NVPTX target");
        return;
    };
    let unchecked = ptx(&compile(&unit, target));
    let body = ptx_entry(&unchecked, "unproven_tile", "sm_90a");
    assert!(
        !body.contains("trap"),
        "a check without peer checks\n{body}"
    );
    unit.peer_checks = true;
    let ptx = ptx(&compile(&unit, target));
    let body = ptx_entry(&ptx, "unproven_tile", "sm_90a");
    let (check, wgmma) = (
        body.find("@off trap")
            .unwrap_or_else(|| panic!("no check\n{body}")),
        body.find("wgmma.mma_async")
            .unwrap_or_else(|| panic!("no wgmma\n{body}")),
    );
    assert!(check < wgmma, "the check comes after the wgmma\n{body}");
    assert!(body.contains("and.b32"), "no alignment test\n{body}");
}

/// Two warpgroup accumulators per thread (128 `f32`), computed without the matrix units on
/// AMD: more registers than a 1024-thread block leaves a thread, fewer than a 256-thread
/// block does. The same body in two kernels, one with `max_threads = 256`.
const TWO_ACCUMULATORS: &str = r#"
    let sa = shared_array::<bf16, 8192>();
    let sb = shared_array::<bf16, 16384>();
    let mut i = thread_idx_x();
    while i < 8192 {
        unsafe { *sa.add(i as usize) = *a.add(i as usize) };
        unsafe { *sb.add(i as usize) = *bt.add(i as usize) };
        unsafe { *sb.add((8192 + i) as usize) = *bt.add((8192 + i) as usize) };
        i += block_dim_x();
    }
    sync_threads();
    let group = thread_idx_x() / 128;
    let ta = unsafe { sa.add((group * 4096) as usize) } as *const bf16;
    let tb = sb as *const bf16;
    let mut left = wg_zero();
    let mut right = wg_zero();
    for s in 0..4 {
        left = wg_mma(ta, tb, s as u32, left);
        right = wg_mma(ta, unsafe { tb.add(8192) }, s as u32, right);
    }
    wg_commit();
    left = wg_wait(left, 0);
    right = wg_wait(right, 0);
    let at = (group * 64 * 256) as usize;
    wg_store(unsafe { c.add(at) }, 256, left);
    wg_store(unsafe { c.add(at + 128) }, 256, right);
"#;

#[test]
fn max_threads_bounds_the_block_on_gpus_and_saves_amd_spills() {
    let signature = "(a: *const bf16, bt: *const bf16, c: *mut f32)";
    let src = format!(
        "#[max_threads(256)]\npub fn bounded{signature} {{{TWO_ACCUMULATORS}}}\npub fn unbounded{signature} {{{TWO_ACCUMULATORS}}}\n"
    );
    let unit = unit_from_source("two_accumulators", &src);
    for target in buildable(&ALL_TARGETS)
        .into_iter()
        .map(|t| t.for_unit(true))
    {
        let out = compile(&unit, target);
        let name = target.name();
        match target.kind() {
            TargetKind::Nvptx => {
                let ptx = ptx(&out);
                let entry = |n: &str| ptx_entry(&ptx, n, name);
                assert!(entry("bounded").contains(".maxntid 256"), "{name}\n{ptx}");
                assert!(!entry("unbounded").contains(".maxntid"), "{name}\n{ptx}");
            }
            TargetKind::Amdgpu => {
                let meta = notes(&out.object);
                assert!(
                    meta.contains(".max_flat_workgroup_size: 256"),
                    "{name}\n{meta}"
                );
                assert!(
                    meta.contains(".max_flat_workgroup_size: 1024"),
                    "{name}\n{meta}"
                );
                // The bounded kernel keeps both accumulators in registers; the unbounded
                // one spills (its private segment is the spill space).
                let private = |kernel: &str| -> u64 {
                    meta.split("\n  - ")
                        .find(|e| {
                            e.lines()
                                .any(|l| l.trim() == format!(".name:           {kernel}"))
                        })
                        .and_then(|e| {
                            e.lines()
                                .find(|l| l.contains(".private_segment_fixed_size:"))?
                                .rsplit(':')
                                .next()?
                                .trim()
                                .parse()
                                .ok()
                        })
                        .unwrap_or_else(|| panic!("{name}: no metadata of {kernel}\n{meta}"))
                };
                assert_eq!(
                    private("bounded"),
                    0,
                    "{name}: the bounded kernel spills\n{meta}"
                );
                assert!(
                    private("unbounded") > 0,
                    "{name}: the unbounded one does not\n{meta}"
                );
            }
            TargetKind::Cpu => {}
        }
    }
}

/// 64 KiB of shared arrays: over the static limit, so they live in the launch's dynamic
/// shared block on GPUs; 32 KiB stay static.
const BIG_SHARED: &str = r#"
pub fn big(x: *mut f32) {
    let s = shared_array::<f32, 8192>();
    let t = shared_array::<f32, 8192>();
    let i = thread_idx_x();
    unsafe { *s.add(i as usize) = *x.add(i as usize) };
    unsafe { *t.add(i as usize) = 2.0 * *x.add(i as usize) };
    sync_threads();
    unsafe { *x.add(i as usize) = *s.add((i ^ 1) as usize) + *t.add(i as usize) };
}
pub fn small(x: *mut f32) {
    let s = shared_array::<f32, 8192>();
    let i = thread_idx_x();
    unsafe { *s.add(i as usize) = *x.add(i as usize) };
    sync_threads();
    unsafe { *x.add(i as usize) = *s.add((i ^ 1) as usize) };
}
"#;

#[test]
fn shared_arrays_over_48_kib_are_dynamic_shared_memory() {
    let unit = unit_from_source("big_shared", BIG_SHARED);
    for target in buildable(&ALL_TARGETS) {
        let out = compile(&unit, target);
        let name = target.name();
        match target.kind() {
            TargetKind::Nvptx => {
                let ptx = ptx(&out);
                assert!(
                    ptx.contains(".extern .shared .align 1024 .b8 __iris_dynamic_shared[]"),
                    "{name}: no dynamic shared block\n{ptx}"
                );
                // `small` keeps its static array; `big` has none.
                assert!(ptx.contains("__iris_shared_small_0"), "{name}\n{ptx}");
                assert!(!ptx.contains("__iris_shared_big_"), "{name}\n{ptx}");
            }
            TargetKind::Amdgpu => {
                let asm = disassemble(&out.object);
                assert!(!asm.contains("scratch_"), "{name}: scratch\n{asm}");
            }
            TargetKind::Cpu => {}
        }
    }
}
