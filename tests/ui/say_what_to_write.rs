use iris::prelude::*;

// rustc suggests `f32::from(h)` for an f16; kernels convert with the value's method.
#[iris::kernel]
pub fn widen_half(h: f16, out: *mut f32) {
    unsafe { *out = f32::from(h) };
}

const BLOCK: usize = 256;

// A shared array's length is a literal or a const parameter of the kernel.
#[iris::kernel]
pub fn block_scratch(out: *mut u32) {
    let s = shared_array::<u32, BLOCK>();
    unsafe { *out = *s };
}

fn main() {}
