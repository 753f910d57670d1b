use iris::prelude::*;

#[iris::kernel]
pub fn k(x: *mut u32) {
    let i = thread_idx_x();
    i = i + 1;
    unsafe { *x = i };
}

fn main() {}
