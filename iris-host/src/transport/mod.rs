//! How the ranks of a world meet on the host: collectives (barriers, all-gathers, file
//! descriptors), in memory for ranks as threads and over an abstract-namespace Unix socket
//! for ranks as processes, the wire format of their messages, and rank discovery from a
//! launcher's environment. Nothing here knows devices or memory.

mod collective;
pub mod env;
mod process_rendezvous;
mod rendezvous;
mod socket;
mod wire;

pub(crate) use collective::{all_gather, decode_status, encode_status};
pub use collective::{Collective, Contribution, Gather};
pub use env::{rank_env, rank_env_from_process, Launcher, RankEnv};
pub use process_rendezvous::ProcessRendezvous;
pub use rendezvous::Rendezvous;
pub(crate) use wire::{Reader, Writer};
