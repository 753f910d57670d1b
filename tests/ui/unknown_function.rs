use iris::prelude::*;

fn host_helper(v: u32) -> u32 {
    v + 1
}

#[iris::kernel]
pub fn k(x: *mut u32) {
    unsafe { *x = host_helper(3) };
}

fn main() {}
