use iris::prelude::*;

#[iris::kernel]
pub fn k(x: *mut u32) -> u32 {
    7
}

fn main() {}
