use iris::prelude::*;

#[iris::kernel(instances(T = [f32, i32]))]
pub fn fill<T: Element>(x: *mut T, v: T) {
    unsafe { *x = v };
}

fn launch(iris: &iris::Iris, b: &iris::Buffer<u8>) -> iris::Result<()> {
    fill::launch::<u8>(iris, (1, 1), b, 3u8)
}

fn main() {
    let _ = launch;
}
