//! How the ranks of a world meet on the host: collectives (barriers, all-gathers,
//! broadcasts, file descriptors), in memory for ranks as threads, over an
//! abstract-namespace Unix socket for ranks as processes of one node, and over TCP
//! (bytes) plus one Unix socket per node (descriptors) for ranks on several nodes; the
//! wire format of their messages, the nodes of a job, and rank discovery from a
//! launcher's environment. Nothing here knows devices or memory.

mod collective;
mod endpoint;
pub mod env;
mod network_rendezvous;
pub mod nodes;
mod process_rendezvous;
mod rendezvous;
mod socket;
mod wire;

pub(crate) use collective::{all_gather, decode_status, encode_status};
pub use collective::{broadcast, Collective, Contribution, Gather};
pub use env::{rank_env, rank_env_from_process, Launcher, RankEnv};
pub use network_rendezvous::{NetworkAddr, NetworkRendezvous};
pub use nodes::{NodeClaim, NodeLayout};
pub use process_rendezvous::ProcessRendezvous;
pub use rendezvous::Rendezvous;
pub(crate) use wire::{Reader, Writer};
