use iris::prelude::*;

#[iris::kernel]
pub fn k(x: *mut u32, n: u32) {
    'outer: for i in 0..n {
        for j in 0..n {
            if i == j {
                continue 'outer;
            }
        }
    }
}

fn main() {}
