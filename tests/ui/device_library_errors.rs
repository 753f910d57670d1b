use iris::prelude::*;

#[iris::device]
pub mod one {
    pub fn twice(x: u32) -> u32 {
        x + x
    }
}

#[iris::device]
pub mod two {
    pub fn twice(x: u32) -> u32 {
        x * 2
    }
}

// Both libraries define `twice`.
#[iris::kernels(uses(one, two))]
mod clash {
    use iris::prelude::*;

    #[kernel]
    pub fn k(x: *mut u32) {
        unsafe { *x = twice(*x) };
    }
}

// Recursion through the library's functions.
#[iris::device]
pub mod ping_pong {
    pub fn ping(x: u32) -> u32 {
        if x == 0 { 0 } else { pong(x - 1) }
    }

    pub fn pong(x: u32) -> u32 {
        ping(x)
    }
}

fn main() {}
