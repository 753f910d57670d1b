//! Wall time of `compile_unit` for the bench's kernels (the sources of
//! `benches/gpu_bench/`): the first call of the process (LLVM's start-up included), then
//! the median of 9, for all targets (`ALL_TARGETS`) and for the two NVIDIA targets.
//! Prints a table and one JSON object a line.

use iris_device::compiler::{compile_unit, Target, ALL_TARGETS};
use std::time::Instant;

const KERNELS: &[(&str, &str)] = &[
    (
        "store_v4",
        r#"
pub fn store_v4(dst: Symmetric<f32>, n: u64, peer: u32, seed: u32) {
    let d = dst.cast::<f32x4>();
    let stride = (grid_dim_x() * block_dim_x()) as u64;
    let mut i = (block_idx_x() * block_dim_x() + thread_idx_x()) as u64;
    while i < n {
        let e = (i as u32).wrapping_mul(4);
        let v = f32x4::new([
            (e.wrapping_mul(2654435761) ^ seed) as f32,
            (e.wrapping_add(1).wrapping_mul(2654435761) ^ seed) as f32,
            (e.wrapping_add(2).wrapping_mul(2654435761) ^ seed) as f32,
            (e.wrapping_add(3).wrapping_mul(2654435761) ^ seed) as f32,
        ]);
        iris::store(d.add(i as usize), v, peer);
        i += stride;
    }
}
"#,
    ),
    (
        "all_gather",
        r#"
pub fn all_gather(input: *const f32, out: Symmetric<f32>, n: u64, me: u32, world: u32) {
    let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as u64;
    if i < n {
        let v = unsafe { *input.add(i as usize) };
        for peer in 0..world {
            iris::store(out.add((me as u64 * n + i) as usize), v, peer);
        }
    }
}
"#,
    ),
];

fn items(src: &str) -> Vec<(syn::ItemFn, bool)> {
    let file: syn::File = syn::parse_str(src).unwrap_or_else(|e| panic!("parse: {e}"));
    file.items
        .into_iter()
        .filter_map(|i| match i {
            syn::Item::Fn(f) => Some((f, true)),
            _ => None,
        })
        .collect()
}

fn compile_ms(name: &str, items: &[(syn::ItemFn, bool)], targets: &[Target]) -> f64 {
    let t = Instant::now();
    let unit = compile_unit(name, items, targets, None).unwrap_or_else(|e| {
        panic!(
            "{name}: {}",
            e.iter()
                .map(|e| e.message.clone())
                .collect::<Vec<_>>()
                .join("; ")
        )
    });
    assert_eq!(unit.objects.len(), targets.len());
    t.elapsed().as_secs_f64() * 1e3
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let nvidia = [Target::Sm80, Target::Sm90];
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "compile_unit wall ms ({cores} cores): first call of the process, then the median of 9"
    );
    println!(
        "{:<12} {:>10} {:>10} {:>12} {:>12}",
        "kernel", "first all", "all", "first nvidia", "nvidia"
    );
    let mut first = true;
    for (name, src) in KERNELS {
        let items = items(src);
        // The very first call pays LLVM's start-up; later kernels of the same process do not.
        let first_all = compile_ms(name, &items, &ALL_TARGETS);
        let all = median(
            (0..9)
                .map(|_| compile_ms(name, &items, &ALL_TARGETS))
                .collect(),
        );
        let first_nv = compile_ms(name, &items, &nvidia);
        let nv = median((0..9).map(|_| compile_ms(name, &items, &nvidia)).collect());
        println!("{name:<12} {first_all:>10.1} {all:>10.1} {first_nv:>12.1} {nv:>12.1}");
        println!(
            "{{\"ref\": \"compile\", \"name\": \"{name}\", \"first_in_process\": {first}, \"first_all_ms\": {first_all:.3}, \"all_ms\": {all:.3}, \"nvidia_ms\": {nv:.3}, \"cores\": {cores}}}"
        );
        first = false;
    }
}
