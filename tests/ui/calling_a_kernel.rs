#[iris::kernels]
mod unit {
    use iris::prelude::*;

    #[kernel]
    pub fn a(x: *mut u32) {
        unsafe { *x = 1 };
    }

    #[kernel]
    pub fn b(x: *mut u32) {
        a(x);
    }
}

fn main() {}
