use iris::prelude::*;

#[iris::kernel]
pub fn k<T: Copy>(x: *mut T) {}

fn main() {}
