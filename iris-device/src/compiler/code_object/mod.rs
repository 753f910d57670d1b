//! Emitted objects -> loadable code objects: HSACO and CPU shared objects through
//! `ld.lld -shared`, PTX as NUL-terminated text.

mod link;
mod lld;

pub use link::package;
pub use lld::find_lld;
