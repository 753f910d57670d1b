use iris::prelude::*;

#[iris::kernel]
pub fn k(x: *mut u32) {
    println!("thread {}", thread_idx_x());
}

fn main() {}
