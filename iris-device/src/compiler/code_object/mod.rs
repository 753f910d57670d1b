//! Emitted objects -> loadable code objects: HSACO and CPU shared objects through
//! `ld.lld -shared` (lld in process when the build could make its shim, else the linker
//! command of the LLVM the build found), PTX as NUL-terminated text.

mod link;
mod lld;
mod lld_library;

pub use link::package;
pub use lld::find_lld;
