use iris::prelude::*;

// The matrix units multiply bf16 or f16 tiles.
#[iris::kernel]
pub fn f32_tiles(a: *const f32, b: *const f32, c: *mut f32) {
    let acc = wg_mma(a, b, 0, wg_zero());
    wg_store(c, 128, acc);
}

// How many batches may stay in flight is a literal (the instruction takes an immediate).
#[iris::kernel]
pub fn variable_wait(a: *const bf16, b: *const bf16, c: *mut f32, n: u32) {
    let acc = wg_mma(a, b, 0, wg_zero());
    wg_commit();
    let acc = wg_wait(acc, n);
    wg_store(c, 128, acc);
}

fn main() {}
