use iris::prelude::*;

// `match` takes numbers and `bool` with literal, range, `a | b`, constant and `_` arms;
// other patterns say so.
#[iris::kernel]
pub fn k(x: *mut u32) {
    match (thread_idx_x(), 1u32) {
        (0, _) => unsafe { *x = 1 },
        _ => {}
    }
}

fn main() {}
