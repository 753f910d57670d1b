//! Structs taken by kernels by value: one parameter each, its bytes as `#[repr(C)]` lays
//! them out (PTX: one `.param .align A .b8 name[size]`; AMDGPU: one kernel argument of the
//! struct's size, by value), read in place. The kernel is `tests/language.rs`'s
//! `by_value::affine`, which runs there on every backend.

use crate::common::tools::*;
use iris_device::compiler::frontend::{build_unit_in_module, SourceFn};
use iris_device::compiler::kernel_ir::Unit;
use iris_device::compiler::{buildable, Target};

const BY_VALUE: &str = r#"
#[derive(Clone, Copy)]
struct Affine { scale: f32, shift: f32, n: u32, stride: u32 }

#[derive(Clone, Copy)]
struct Wide { extra: f32x4, map: Affine }

#[derive(Clone, Copy)]
struct Bytes { a: u8, b: u8, c: u16 }

fn affine(w: Wide, x: *const f32, small: Bytes, out: *mut f32) {
    let i = block_idx_x() * block_dim_x() + thread_idx_x();
    let m = w.map;
    if i < m.n {
        let bytes = (small.a as u32 + small.b as u32 * 2 + small.c as u32 * 3) as f32;
        let v = unsafe { *x.add((i * m.stride) as usize) };
        unsafe { *out.add(i as usize) = v * m.scale + m.shift + w.extra.get(1) + bytes };
    }
}
"#;

fn unit() -> Unit {
    let file: syn::File = syn::parse_str(BY_VALUE).expect("parse");
    let mut structs = Vec::new();
    let mut fns = Vec::new();
    for item in file.items {
        match item {
            syn::Item::Struct(s) => structs.push(s),
            syn::Item::Fn(f) => fns.push(SourceFn::new(f, true)),
            _ => {}
        }
    }
    build_unit_in_module("by_value", &fns, &[], &structs)
        .unwrap_or_else(|e| panic!("{}", e[0].message))
}

/// Wide: 32 bytes (16-byte aligned), the pointer 8, Bytes 4 (2-byte aligned), the pointer 8.
const SIZES: [u32; 4] = [32, 8, 4, 8];

#[test]
fn ptx_takes_each_struct_as_one_aligned_param() {
    let unit = unit();
    for target in [Target::Sm80, Target::Sm90] {
        let out = compile(&unit, target);
        let ptx = ptx(&out);
        let params = ptx_params(&ptx, "affine");
        assert_eq!(params.len(), 4, "{params:#?}");
        assert!(
            params[0].contains(".align 16") && params[0].contains("[32]"),
            "{params:#?}"
        );
        assert!(
            params[2].contains(".align 2") && params[2].contains("[4]"),
            "{params:#?}"
        );
        // Read where the driver put it: no copy to local memory.
        assert!(ptx.contains("ld.param"), "{ptx}");
        assert!(
            !ptx.contains(".local"),
            "a struct parameter spilled:\n{ptx}"
        );
    }
}

#[test]
fn amdgpu_takes_each_struct_as_one_argument() {
    let unit = unit();
    for target in buildable(&[Target::Gfx90a, Target::Gfx942, Target::Gfx950]) {
        let out = compile(&unit, target);
        let notes = notes(&out.object);
        assert_eq!(
            amdgpu_arg_sizes(&notes, "affine"),
            SIZES,
            "{}:\n{notes}",
            target.name()
        );
        assert!(notes.contains(".value_kind:     by_value"), "{notes}");
        let spills = [
            "scratch_store",
            "scratch_load",
            "buffer_store",
            "buffer_load",
        ];
        assert!(
            !spills.iter().any(|s| out.asm.contains(s)),
            "a struct parameter spilled:\n{}",
            out.asm
        );
        // Read from the kernel-argument segment with scalar loads.
        assert!(out.asm.contains("s_load_dword"), "{}", out.asm);
    }
}
