use iris::prelude::*;

#[iris::kernel]
pub fn k(x: *mut u32, i: u64) {
    let v = x[i as usize];
}

fn main() {}
