//! Launching: the grid and block of a launch, its arguments, and their validation
//! against the kernel's spec and the device's limits.

mod args;
mod config;
mod instance;
mod validate;

pub use args::KernelArgs;
pub use config::LaunchConfig;
pub use instance::{
    ConstI16, ConstI32, ConstI64, ConstI8, ConstIsize, ConstU16, ConstU32, ConstU64, ConstU8,
    ConstUsize,
};
pub(crate) use validate::validate;
