//! The Hopper GEMM kernel of `examples/gemm.rs` (`warpgroup_256`): the one `iris::ccl`'s
//! fused matrix operations launch on Hopper, so tests/matrix.rs checks the library's code
//! on every backend.

pub use iris::ccl::gemm_kernels::warpgroup_kernels;
