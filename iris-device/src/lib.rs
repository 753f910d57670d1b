//! The iris kernel language.
//!
//! - [`prelude`]: the types and intrinsics kernels are written against. Kernels are valid
//!   Rust: `#[iris::kernel]` type-checks each body against this prelude with rustc, and
//!   compiles the same body to device code with its own compiler.
//! - [`abi`]: what a compiled kernel unit carries to the host runtime (code objects per
//!   target, parameter layout) and the calling convention of the CPU target.
//! - `compiler` (feature `compiler`): Rust tokens -> kernel IR -> LLVM IR -> code objects.
//!   Only the proc macro turns it on; programs that run kernels never link LLVM.
#![warn(missing_docs)]

pub mod abi;
pub mod prelude;

#[cfg(feature = "compiler")]
pub mod compiler;

pub use prelude::*;
