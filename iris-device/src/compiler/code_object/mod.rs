//! Emitted objects -> loadable code objects: HSACO and CPU shared objects through
//! `ld.lld -shared`, PTX as NUL-terminated text.

mod link;

pub use link::package;
