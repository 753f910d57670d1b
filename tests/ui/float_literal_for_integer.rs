use iris::prelude::*;

#[iris::kernel]
pub fn k(x: *mut u32) {
    let v: u32 = 1.5;
    unsafe { *x = v };
}

fn main() {}
