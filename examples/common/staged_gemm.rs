//! The multistage `mma` GEMM kernels of `examples/gemm.rs` (`staged_128`, and `tiles_128`
//! with the copy engine's tile copies): the ones `iris::ccl`'s fused matrix operations
//! launch, so tests/matrix.rs checks the library's code on every backend.

pub use iris::ccl::gemm_kernels::staged_kernels;
