//! Ranks as threads of one process: the world builder, what the ranks share, and the
//! rendezvous their collectives meet at.

mod builder;
mod rendezvous;
mod shared;

pub use builder::{World, DEFAULT_HEAP_BYTES};
pub use rendezvous::Rendezvous;
pub(crate) use shared::WorldShared;
