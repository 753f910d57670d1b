use iris::prelude::*;

// `T::from` converts where Rust's does (`f32::from(h)` for an f16 compiles); a
// narrowing one says to cast.
#[iris::kernel]
pub fn narrow_with_from(x: u64, out: *mut u32) {
    unsafe { *out = u32::from(x) };
}

const BLOCK: usize = 256;

// A shared array's length is a literal or a const parameter of the kernel.
#[iris::kernel]
pub fn block_scratch(out: *mut u32) {
    let s = shared_array::<u32, BLOCK>();
    unsafe { *out = *s };
}

fn main() {}
