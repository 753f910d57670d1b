//! Control flow, device-function calls, short-circuit operators, and a block with shared
//! arrays, a barrier and its coordinates.

use super::run1;
use crate::common::cpu::*;
use crate::cpu_run::cpu_module;

pub const FLOW: &str = r#"
fn dev_bump(p: *mut u32) -> bool {
    unsafe { *p = *p + 1; }
    true
}

fn dev_classify(n: u32) -> u32 {
    if n > 5 {
        return 10;
    }
    if n > 2 { 20 } else { 30 }
}

pub fn flow(n: u32, out: *mut u32, scratch: *mut u32) {
    unsafe {
        let mut sum = 0u32;
        for i in 250u8..=255u8 {
            sum += i as u32;
        }
        *out.add(0) = sum;
        let mut k = 0u32;
        let mut count = 0u32;
        loop {
            k += 1;
            if k % 2 == 0 {
                continue;
            }
            if k > n {
                break;
            }
            count += 1;
        }
        *out.add(1) = count;
        let mut w = 0u32;
        while w < n {
            w += 3;
        }
        *out.add(2) = w;
        *out.add(3) = dev_classify(n);
        let mut empty = 0u32;
        for _i in 5u32..=4u32 {
            empty += 1;
        }
        for _i in 7u32..7u32 {
            empty += 1;
        }
        *out.add(4) = empty;
        let mut signed = 0i32;
        for i in -3i32..=2i32 {
            signed = signed * 10 + i;
        }
        *out.add(5) = signed as u32;
        if n > 100 && dev_bump(scratch) {
            *out.add(6) = 1;
        }
        if n < 100 || dev_bump(scratch) {
            *out.add(7) = 1;
        }
        if n < 100 && dev_bump(scratch) {
            *out.add(8) = 1;
        }
        let v = if n == 3 { 33 } else { 44 };
        *out.add(9) = v;
        let mut nested = 0u32;
        for a in 0..n {
            for b in 0..n {
                if b > a {
                    break;
                }
                nested += 1;
            }
        }
        *out.add(10) = nested;
    }
}
"#;

#[test]
fn control_flow() {
    let m = cpu_module("flow", FLOW);
    for n in [0u32, 3, 7] {
        let mut out = vec![0u32; 11];
        let mut scratch = 0u32;
        let (mut n_, mut op, mut sp) = (n, out.as_mut_ptr(), &mut scratch as *mut u32);
        run1(&m, "flow", &mut [arg(&mut n_), arg(&mut op), arg(&mut sp)]);
        let count = (1..=n).filter(|k| k % 2 == 1).count() as u32;
        let w = n.div_ceil(3) * 3;
        let class = if n > 5 {
            10
        } else if n > 2 {
            20
        } else {
            30
        };
        let mut signed = 0i32;
        for i in -3..=2 {
            signed = signed * 10 + i;
        }
        let nested: u32 = (0..n).map(|a| a + 1).sum();
        let want = [
            (250..=255u32).sum(),
            count,
            w,
            class,
            0,
            signed as u32,
            0,
            1,
            1,
            if n == 3 { 33 } else { 44 },
            nested,
        ];
        assert_eq!(out, want, "n={n}");
        assert_eq!(scratch, 1, "only the deciding right operands ran");
    }
}

pub const BLOCK: &str = r#"
pub fn block(out: *mut u32, dims: *mut u32) {
    let a = shared_array::<u32, 8>();
    let b = shared_array::<u64, 3>();
    let t = thread_idx_x();
    unsafe {
        *a.add(t as usize) = t * t;
        if t < 3 {
            *b.add(t as usize) = (t as u64) << 40;
        }
        sync_threads();
        let next = (t + 1) % block_dim_x();
        *out.add((block_idx_x() * block_dim_x() + t) as usize) =
            *a.add(next as usize) + (*b.add((t % 3) as usize) >> 40) as u32 * 1000;
        if t == 0 && block_idx_x() == 1 {
            *dims.add(0) = block_dim_x();
            *dims.add(1) = grid_dim_x();
            *dims.add(2) = block_dim_y() + block_dim_z() + grid_dim_y() + grid_dim_z();
            *dims.add(3) = thread_idx_y() + thread_idx_z() + block_idx_y() + block_idx_z();
        }
    }
}
"#;

#[test]
fn shared_arrays_barrier_and_coordinates() {
    let m = cpu_module("block", BLOCK);
    let (grid, block) = (2u32, 8u32);
    let mut out = vec![0u32; (grid * block) as usize];
    let mut dims = vec![0u32; 4];
    let (mut op, mut dp) = (out.as_mut_ptr(), dims.as_mut_ptr());
    // The layout: 8 x u32 at 0, 3 x u64 at 32 (16-aligned): 56 bytes.
    let shared = iris_device::compiler::llvm::cpu_shared_bytes(
        &crate::source::unit_from_source("block_layout", BLOCK).functions[0].shared_arrays,
    )
    .expect("layout");
    assert_eq!(shared, 56);
    m.launch(
        "block",
        grid,
        block,
        shared as usize,
        &[arg(&mut op), arg(&mut dp)],
    );
    for b in 0..grid {
        for t in 0..block {
            let next = (t + 1) % block;
            assert_eq!(
                out[(b * block + t) as usize],
                next * next + (t % 3) * 1000,
                "block {b} thread {t}"
            );
        }
    }
    assert_eq!(dims, [block, grid, 4, 0]);
}
