use iris::prelude::*;

#[iris::kernel]
pub fn k(flags: Symmetric<u32>, peer: u32) {
    let order = Ordering::Release;
    iris::atomic_add(flags, 1, peer, order, Scope::System);
}

fn main() {}
