use iris::prelude::*;

#[iris::kernel]
pub fn k(flags: Symmetric<u32>, out: *mut u32, peer: u32) {
    let v = iris::atomic_load(flags, peer, Ordering::Release, Scope::System);
    unsafe { *out = v };
}

fn main() {}
