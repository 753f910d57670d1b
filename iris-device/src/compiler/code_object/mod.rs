//! Emitted objects -> loadable code objects: HSACO and CPU shared objects through
//! lld (`-shared`, in this process), PTX as NUL-terminated text.

mod link;
mod lld;
mod lld_library;

pub use link::package;
pub use lld::find_lld;
