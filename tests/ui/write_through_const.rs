use iris::prelude::*;

#[iris::kernel]
pub fn k(x: *const u32) {
    unsafe { *x = 1 };
}

fn main() {}
