//! Kernel IR -> LLVM IR text -> optimised LLVM -> object file or PTX.

mod codegen;
mod lower;

pub use codegen::{codegen, Emitted};
pub use lower::lower_unit;
