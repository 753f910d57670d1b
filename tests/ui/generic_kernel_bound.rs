use iris::prelude::*;

#[iris::kernel(instances(T = [f32, bool]))]
pub fn fill<T: Element>(x: *mut T, v: T) {
    unsafe { *x = v };
}

#[iris::kernel]
pub fn tile<const N: usize>(x: *mut f32) {
    let a = [0.0f32; N];
    unsafe { *x = a[N] };
}

fn main() {}
