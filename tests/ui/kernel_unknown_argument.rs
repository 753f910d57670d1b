use iris::prelude::*;

#[iris::kernel(bogus)]
pub fn k(out: Symmetric<u32>, peer: u32) {
    iris::store(out, 1, peer);
}

#[iris::kernels(peer_checks, fast)]
mod m {
    use iris::prelude::*;

    #[kernel]
    pub fn k(out: Symmetric<u32>, peer: u32) {
        iris::store(out, 1, peer);
    }
}

#[iris::kernels]
mod n {
    use iris::prelude::*;

    #[kernel(peer_checks)]
    pub fn k(out: Symmetric<u32>, peer: u32) {
        iris::store(out, 1, peer);
    }
}

fn main() {}
