use iris::prelude::*;

#[iris::kernel]
pub fn k(x: *mut u32) {
    match thread_idx_x() {
        0 => unsafe { *x = 1 },
        _ => {}
    }
}

fn main() {}
