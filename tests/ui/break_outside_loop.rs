use iris::prelude::*;

#[iris::kernel]
pub fn k(x: *mut u32) {
    if thread_idx_x() > 0 {
        break;
    }
}

fn main() {}
