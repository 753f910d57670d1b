use iris::prelude::*;

#[iris::kernel]
pub fn k(x: *mut u32) {
    let double = |v: u32| v * 2;
    unsafe { *x = double(3) };
}

fn main() {}
