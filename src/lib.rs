//! iris: GPU kernels in Rust over symmetric memory.
#![warn(missing_docs)]

pub use iris_device::abi;
pub use iris_macros::{kernel, kernels};
pub use iris_device::prelude;
pub use iris_device::prelude::*;
pub use iris_host::*;
