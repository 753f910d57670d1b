//! `#[iris::kernel]` and `#[iris::kernels]`.
