use iris::prelude::*;

// The matrix units multiply bf16 or f16 tiles.
#[iris::kernel]
pub fn f32_tiles(a: *const f32, c: *mut f32) {
    let fa = mma_load_a(a, 16);
    let fb = mma_load_b(a, 16);
    mma_store(c, 16, mma(fa, fb, mma_zero()));
}

// A and B must hold the same element type.
#[iris::kernel]
pub fn mixed(a: *const bf16, b: *const f16, c: *mut f32) {
    let fa = mma_load_a(a, 16);
    let fb = mma_load_b(b, 16);
    mma_store(c, 16, mma(fa, fb, mma_zero()));
}

// Fragments stay in registers: no pointer to one.
#[iris::kernel]
pub fn fragment_pointer(p: *mut MmaAcc) {
    let _ = p;
}

fn main() {}
