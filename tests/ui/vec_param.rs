use iris::prelude::*;

#[iris::kernel]
pub fn k(x: Vec<f32>) {}

fn main() {}
