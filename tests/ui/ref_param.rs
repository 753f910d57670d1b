use iris::prelude::*;

#[iris::kernel]
pub fn k(x: &u32) {}

fn main() {}
