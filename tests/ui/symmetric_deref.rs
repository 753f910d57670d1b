use iris::prelude::*;

#[iris::kernel]
pub fn k(x: Symmetric<f32>, out: *mut f32) {
    unsafe { *out = *x };
}

fn main() {}
