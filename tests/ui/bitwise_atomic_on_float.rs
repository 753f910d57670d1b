use iris::prelude::*;

#[iris::kernel]
pub fn k(flags: Symmetric<f32>, peer: u32) {
    iris::atomic_or(flags, 1.0, peer, Ordering::Relaxed, Scope::System);
}

fn main() {}
