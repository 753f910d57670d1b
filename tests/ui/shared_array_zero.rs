use iris::prelude::*;

#[iris::kernel]
pub fn k(x: *mut f32) {
    let tile = shared_array::<f32, 0>();
}

fn main() {}
