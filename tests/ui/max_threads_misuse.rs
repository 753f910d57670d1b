use iris::prelude::*;

// A block has 1 to 1024 threads on every target.
#[iris::kernel(max_threads = 0)]
pub fn none(x: *mut u32) {
    unsafe { *x = 1 };
}

#[iris::kernel(max_threads = 2048)]
pub fn too_many(x: *mut u32) {
    unsafe { *x = 1 };
}

// The bound is a literal.
#[iris::kernel(max_threads = "256")]
pub fn not_a_number(x: *mut u32) {
    unsafe { *x = 1 };
}

// It bounds each kernel: it goes on the kernel's marker, not on the module.
#[iris::kernels(max_threads = 256)]
mod m {
    use iris::prelude::*;

    #[kernel]
    pub fn k(x: *mut u32) {
        unsafe { *x = 1 };
    }
}

fn main() {}
