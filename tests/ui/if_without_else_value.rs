use iris::prelude::*;

#[iris::kernel]
pub fn k(x: *mut u32) {
    let v = if thread_idx_x() == 0 { 1u32 };
    unsafe { *x = v };
}

fn main() {}
