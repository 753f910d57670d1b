//! Kernel IR -> LLVM IR text -> optimised LLVM -> object file or PTX.

mod codegen;
mod lower;

pub use codegen::{
    codegen, lld_in_process, target_data_layout, Emitted, LldLink, LLVM_BINDIR, LLVM_LIBRARY,
    LLVM_MAJOR, LLVM_VERSION,
};
pub use lower::{cpu_shared_bytes, lower_unit, SHARED_ALIGN};
