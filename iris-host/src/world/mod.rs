//! Ranks: the world builder (ranks as threads of one process, or as processes of one
//! node), what a world's ranks share, rank discovery from a launcher's environment, and
//! the rendezvous their collectives meet at (in memory for threads, over an
//! abstract-namespace Unix socket for processes).

mod builder;
mod collective;
pub mod env;
mod process;
mod process_rendezvous;
mod rendezvous;
mod shared;
mod socket;
mod wire;

pub use builder::{World, DEFAULT_HEAP_BYTES};
pub(crate) use collective::{all_gather, decode_status, encode_status};
pub use collective::{Collective, Contribution, Gather};
pub use env::{rank_env, rank_env_from_process, Launcher, RankEnv};
pub use process_rendezvous::ProcessRendezvous;
pub use rendezvous::Rendezvous;
pub(crate) use shared::WorldShared;
pub(crate) use wire::{Reader, Writer};
