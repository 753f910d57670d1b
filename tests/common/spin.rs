//! A device function that keeps a thread busy, for tests that need a slow kernel
//! (`#[path = "common/spin.rs"] mod spin;`, then `#[iris::kernels(uses(crate::spin::rounds))]`).

#[iris::device]
pub mod rounds {
    /// `spins` rounds of a xorshift from `seed | 1`: never 0, which the caller tests so
    /// that the loop stays.
    pub fn spin(seed: u32, spins: u32) -> u32 {
        let mut acc = seed | 1;
        let mut i = 0u32;
        while i < spins {
            acc ^= acc << 13;
            acc ^= acc >> 17;
            acc ^= acc << 5;
            i += 1;
        }
        acc
    }
}
