//! Worlds: ranks as threads of one process or as processes of one node, each with its
//! [`Iris`](crate::Iris) context, built on the transport (how ranks meet) and the
//! symmetric heaps every rank gets.

mod builder;
mod process;
mod shared;

pub use builder::{World, DEFAULT_HEAP_BYTES};
pub(crate) use shared::WorldShared;
