//! Launching: the grid and block of a launch, its arguments, and their validation
//! against the kernel's spec and the device's limits.

mod args;
mod config;
mod validate;

pub use args::KernelArgs;
pub use config::LaunchConfig;
pub(crate) use validate::validate;
