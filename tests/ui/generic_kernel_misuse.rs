// An instance tuple must give every generic parameter, in order.
#[iris::kernel(instances((f32, 4), (f64)))]
pub fn chunks<T: Element, const L: usize>(x: *mut [T; L]) {
    let _ = x;
}

// A bound the kernel language does not know.
#[iris::kernel]
pub fn ordered<T: Ord>(x: *mut T) {
    let _ = x;
}

// Warp shuffles move numbers, not arrays.
#[iris::kernel]
pub fn shuffle_array(x: *mut f32) {
    let a = [1.0f32; 4];
    let b = shfl(a, 0);
    unsafe { *x = b[0] };
}

// Arrays of `bool` do not live in memory.
#[iris::kernel]
pub fn flags(x: *mut [bool; 4]) {
    let _ = x;
}



// A register array index must be known once loops are unrolled.
#[iris::kernel]
pub fn runtime_index(x: *mut f32, k: u32) {
    let a = [1.0f32; 4];
    unsafe { *x = a[k as usize] };
}
fn main() {}
