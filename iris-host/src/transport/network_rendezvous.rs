//! The meeting point of the ranks of a job that spans several nodes: a
//! [`ProcessRendezvous`] over TCP (rank 0 the hub, at `MASTER_ADDR` and the hub port)
//! carries every collective's bytes, and, on each node with several ranks, a
//! [`ProcessRendezvous`] over an abstract Unix socket among the node's ranks (its local
//! rank 0 the hub, named after the job and the node's index) carries the file
//! descriptors, which never leave a node.
//!
//! A collective is one round over TCP, whose contributions say how many descriptors each
//! rank passes; when a rank of this node passes some, the node's ranks then exchange
//! them over their Unix rendezvous (every rank of the node decides alike, from the same
//! gathered bytes). A rank of another node contributes its bytes and no descriptors.
//! Every guarantee of [`ProcessRendezvous`] holds for both: bounded waits, missing ranks
//! named, a duplicate rank refused, a dead peer named to the others. Errors of the node's
//! rendezvous name global ranks.

use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::time::Duration;

use iris_driver::{Error, Result};

use super::collective::{Collective, Contribution};
use super::endpoint::{resolve, Endpoint};
use super::nodes::{NodeClaim, NodeLayout};
use super::socket::MAX_FDS;
use super::wire::{Reader, Writer};
use super::ProcessRendezvous;

/// Where the hub of a network rendezvous listens: rank 0's node and a port.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct NetworkAddr {
    /// Rank 0's node (`MASTER_ADDR`): a host name or an address.
    pub host: String,
    /// The port rank 0 listens on (see [`env`](super::env) for how it is chosen).
    pub port: u16,
}

/// An all-gather of bytes among the processes of a job on several nodes, and of file
/// descriptors among the processes of each node.
pub struct NetworkRendezvous {
    rank: usize,
    world: ProcessRendezvous,
    /// The rendezvous of this node's ranks (`None` when this rank is alone on its node).
    node: Option<ProcessRendezvous>,
    layout: NodeLayout,
}

impl NetworkRendezvous {
    /// Joins the network rendezvous of job `job_id` as rank `rank` of `size`, rank 0
    /// listening at `addr`; then the rendezvous of this rank's node. `claim` is what the
    /// launcher said about this rank's node (checked by the hub against the hosts the
    /// ranks name). Errors as [`ProcessRendezvous::join`] does, and with
    /// [`Error::Io`] when `addr` does not resolve.
    pub fn join(
        job_id: &str,
        addr: &NetworkAddr,
        rank: usize,
        size: usize,
        claim: NodeClaim,
        timeout: Duration,
    ) -> Result<Self> {
        let resolved = resolve(&addr.host, addr.port).map_err(|source| Error::Io {
            what: format!(
                "resolving {}:{} (MASTER_ADDR, rank 0's node)",
                addr.host, addr.port
            ),
            source,
        })?;
        let endpoint = Endpoint::Tcp(resolved);
        let world =
            ProcessRendezvous::join_at(&endpoint, job_id, rank, size, timeout, Some(claim))?;
        let layout = NodeLayout::from_hosts(&world.hosts());
        let node_index = layout.node_of(rank);
        let local = layout.ranks_on(node_index).to_vec();
        tracing::debug!(rank, ?layout, "the job's nodes");
        let node = if local.len() > 1 {
            let node_job = format!("{job_id}#node{node_index}");
            let joined =
                ProcessRendezvous::join(&node_job, layout.local_rank(rank), local.len(), timeout);
            match joined {
                Ok(node) => Some(node),
                Err(err) => {
                    let err = globalize(err, &local, rank);
                    world.poison(rank, format!("could not join its node's rendezvous: {err}"));
                    return Err(err);
                }
            }
        } else {
            None
        };
        Ok(Self {
            rank,
            world,
            node,
            layout,
        })
    }

    /// This process's rank.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The job's nodes, from the hosts its ranks named.
    pub fn layout(&self) -> &NodeLayout {
        &self.layout
    }

    /// The job id the rendezvous is named after.
    pub fn job_id(&self) -> &str {
        self.world.job_id()
    }

    /// Exchanges this node's descriptors (`announced[r]` is how many rank `r` passes)
    /// and puts them into `out`.
    fn exchange_fds(
        &self,
        op: &str,
        fds: Vec<OwnedFd>,
        announced: &[usize],
        out: &mut [Contribution],
    ) -> Result<()> {
        let local = self.layout.ranks_on(self.layout.node_of(self.rank));
        if local.iter().all(|&r| announced[r] == 0) {
            return Ok(());
        }
        let Some(node) = &self.node else {
            // alone on this node: its own descriptors are all there are
            out[self.rank].fds = fds.into_iter().map(Arc::new).collect();
            return Ok(());
        };
        let what = format!("{op} (descriptors)");
        let gathered = node
            .exchange(self.layout.local_rank(self.rank), &what, Vec::new(), fds)
            .map_err(|err| globalize(err, local, self.rank))?;
        for (&global, contribution) in local.iter().zip(gathered) {
            if contribution.fds.len() != announced[global] {
                return Err(Error::Protocol {
                    what: format!("`{op}`"),
                    reason: format!(
                        "rank {global} announced {} descriptors and passed {}",
                        announced[global],
                        contribution.fds.len()
                    ),
                });
            }
            out[global].fds = contribution.fds;
        }
        Ok(())
    }
}

/// An error of a node's rendezvous (whose ranks are local ranks) in global ranks.
fn globalize(err: Error, local: &[usize], rank: usize) -> Error {
    let global = |r: usize| local.get(r).copied().unwrap_or(r);
    match err {
        Error::PeerFailed {
            what, peer, reason, ..
        } => Error::PeerFailed {
            rank,
            what: format!("{what} (among the ranks of its node)"),
            peer: global(peer),
            reason,
        },
        Error::Timeout {
            what,
            waited,
            missing,
            ..
        } => Error::Timeout {
            rank: Some(rank),
            what: format!("{what} (among the ranks of its node)"),
            waited,
            missing: missing.into_iter().map(global).collect(),
        },
        Error::RankConflict { rank: r, details } => Error::RankConflict {
            rank: global(r),
            details: format!("{details} (local rank {r} of its node)"),
        },
        other => other,
    }
}

impl Collective for NetworkRendezvous {
    fn size(&self) -> usize {
        self.world.size()
    }

    fn timeout(&self) -> Duration {
        self.world.timeout()
    }

    fn exchange(
        &self,
        rank: usize,
        op: &str,
        bytes: Vec<u8>,
        fds: Vec<OwnedFd>,
    ) -> Result<Vec<Contribution>> {
        // The world's rendezvous below refuses another rank than its own.
        if fds.len() > MAX_FDS {
            return Err(Error::InvalidConfig(format!(
                "{} descriptors in one collective; at most {MAX_FDS}",
                fds.len()
            )));
        }
        let payload = Writer::new().usize(fds.len()).bytes(&bytes).finish();
        let gathered = self.world.exchange(rank, op, payload, Vec::new())?;
        let mut announced = Vec::with_capacity(gathered.len());
        let mut out = Vec::with_capacity(gathered.len());
        for c in &gathered {
            let mut r = Reader::new("a contribution over the network", &c.bytes);
            announced.push(r.usize()?);
            out.push(Contribution {
                bytes: r.bytes()?.to_vec(),
                fds: Vec::new(),
            });
            r.end()?;
        }
        if let Err(err) = self.exchange_fds(op, fds, &announced, &mut out) {
            if !err.is_secondary() {
                self.world.poison(rank, format!("failed in `{op}`: {err}"));
            }
            return Err(err);
        }
        Ok(out)
    }

    fn poison(&self, rank: usize, reason: String) {
        if let Some(node) = &self.node {
            node.poison(self.layout.local_rank(rank), reason.clone());
        }
        self.world.poison(rank, reason);
    }

    fn depart(&self, rank: usize) {
        if let Some(node) = &self.node {
            node.depart(self.layout.local_rank(rank));
        }
        self.world.depart(rank);
    }

    fn node_of(&self, rank: usize) -> usize {
        self.layout.node_of(rank)
    }
}

impl std::fmt::Debug for NetworkRendezvous {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NetworkRendezvous")
            .field("rank", &self.rank)
            .field("job_id", &self.world.job_id())
            .field("layout", &self.layout)
            .finish_non_exhaustive()
    }
}
