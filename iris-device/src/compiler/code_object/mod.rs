//! Emitted objects -> loadable code objects: HSACO and CPU shared objects through
//! `ld.lld -shared` (the linker of the LLVM the build found), PTX as NUL-terminated text.

mod link;
mod lld;

pub use link::package;
pub use lld::find_lld;
