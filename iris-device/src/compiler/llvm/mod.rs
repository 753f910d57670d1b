//! Kernel IR -> LLVM IR text -> optimised LLVM -> object file or PTX.

mod codegen;
mod lower;

pub use codegen::{codegen, target_data_layout, Emitted, LLVM_LIBRARY, LLVM_MAJOR, LLVM_VERSION};
pub use lower::{cpu_shared_bytes, lower_unit, SHARED_ALIGN};
