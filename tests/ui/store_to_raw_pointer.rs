use iris::prelude::*;

#[iris::kernel]
pub fn k(out: *mut f32, peer: u32) {
    iris::store(out, 1.0, peer);
}

fn main() {}
