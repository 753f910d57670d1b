//! Kernels run on the CPU target inside the test process: the parameter ABI, the launch
//! context, symmetric translation and the language's semantics, checked by value.

use crate::common::cpu::*;
use crate::common::tools::compile;
use crate::source::{unit_from_source, ALL_GATHER};
use iris_device::compiler::Target;
use std::ffi::c_void;

/// Compiles Rust source for the CPU and loads it.
pub fn cpu_module(name: &str, src: &str) -> CpuModule {
    let unit = unit_from_source(name, src);
    CpuModule::load(&compile(&unit, Target::Cpu).object)
}

#[test]
fn all_gather_across_two_ranks() {
    let m = cpu_module("all_gather_cpu", ALL_GATHER);
    let n = 37usize;
    let world = 2usize;
    let inputs: Vec<Vec<f32>> = (0..world)
        .map(|r| (0..n).map(|i| (r * 1000 + i) as f32).collect())
        .collect();
    let mut outs: Vec<Vec<f32>> = (0..world).map(|_| vec![-1.0; n * world]).collect();
    let bases: Vec<u64> = outs.iter_mut().map(|o| o.as_mut_ptr() as u64).collect();
    for (me, input) in inputs.iter().enumerate() {
        let mut input = input.as_ptr() as u64;
        let (mut sym, mut table) = SymSlots::new(&bases, me);
        let (mut nn, mut me32, mut world32) = (n as u64, me as u32, world as u32);
        let mut args: Vec<*mut c_void> = vec![arg(&mut input)];
        sym.push(&mut table, &mut args);
        args.extend([arg(&mut nn), arg(&mut me32), arg(&mut world32)]);
        // 3 blocks of 16 threads cover 37 elements with a tail.
        m.launch("all_gather", 3, 16, 0, &args);
    }
    let expected: Vec<f32> = inputs.concat();
    for (r, out) in outs.iter().enumerate() {
        assert_eq!(out, &expected, "rank {r}");
    }
}
