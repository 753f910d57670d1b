//! The meeting point of the ranks of one job: rank 0 is the hub, listening on an
//! [`Endpoint`]: an abstract-namespace Unix socket named after the job id (the processes
//! of one node; nothing is left in the file system), or a TCP port (the processes of
//! several nodes, through [`NetworkRendezvous`](super::NetworkRendezvous)); the other
//! ranks connect to it. The code is one for both: only the endpoint differs, and a TCP
//! connection never carries file descriptors. A collective is one round: every rank
//! sends the hub its contribution (bytes, and descriptors with `SCM_RIGHTS` over Unix),
//! the hub sends every rank the others' contributions.
//!
//! Every wait is bounded by the timeout (a rank waiting for the hub waits a little longer,
//! so that the hub's verdict, which names the missing ranks, arrives first). The hub
//! notices a rank whose connection closes (its process died) at once, and tells the
//! other ranks, naming it. A failure is sticky: every later collective of this rank
//! fails with it. Two processes claiming one rank is an error naming the rank, for both
//! of them and, while the job is still gathering, for the whole job. Every rank names its
//! host in its hello, and learns every rank's host from the hub's welcome.
//!
//! - [`protocol`]: what ranks say (the hello, the welcome, contributions);
//! - [`faults`]: why a job stops (a failure the hub sends and every rank keeps);
//! - [`hub`]: rank 0's side (gathering, exchanging, refusing late claimants);
//! - [`member`]: every other rank's side (connecting, exchanging).

mod faults;
mod hub;
mod member;
mod protocol;

use std::os::fd::{AsFd, OwnedFd};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use iris_driver::sync::lock;
use iris_driver::{Error, Result};

use super::collective::{Collective, Contribution};
use super::endpoint::Endpoint;
use super::nodes::{hostname, NodeClaim};
use super::socket::{self, Conn};
use super::socket::{Kind, MAX_FDS};
use super::wire::Writer;
use faults::{broadcast_abort, Failure};
use hub::{gather_hub, LateListener};
use member::connect_member;
use protocol::Hello;

/// One connected rank, as the hub sees it.
struct Peer {
    conn: Conn,
    pid: u32,
    /// The node it runs on.
    host: String,
    /// Why it is gone, once it is.
    gone: Option<String>,
}

enum Role {
    /// Rank 0: one connection per other rank (`None` for itself).
    Hub { peers: Vec<Option<Peer>> },
    /// Any other rank: its connection to the hub.
    Member { hub: Conn },
    /// A world of one rank.
    Alone,
}

struct Inner {
    role: Role,
    failed: Option<Failure>,
    departed: bool,
}

/// An all-gather of bytes and file descriptors among the processes of one job on one
/// node.
pub struct ProcessRendezvous {
    rank: usize,
    size: usize,
    timeout: Duration,
    job_id: String,
    /// Whether contributions may carry descriptors (not over TCP).
    carries_fds: bool,
    /// Every rank's host and process id, by rank.
    ranks: protocol::RankList,
    inner: Mutex<Inner>,
    late: Mutex<Option<LateListener>>,
}

impl ProcessRendezvous {
    /// Joins the rendezvous of job `job_id` as rank `rank` of `size`: rank 0 waits for
    /// every other rank to connect, the others connect to rank 0; returns once every
    /// rank has arrived. Errors with [`Error::Timeout`] naming the ranks that did not
    /// arrive within `timeout`, [`Error::RankConflict`] when another process claims a
    /// rank, [`Error::SymmetryMismatch`] when ranks disagree on the world size.
    pub fn join(job_id: &str, rank: usize, size: usize, timeout: Duration) -> Result<Self> {
        let endpoint = Endpoint::Unix(socket::socket_name(job_id));
        Self::join_at(&endpoint, job_id, rank, size, timeout, None)
    }

    /// [`join`](ProcessRendezvous::join) at `endpoint`. With `claim` (a network
    /// rendezvous), every rank says what its launcher told it about its node, and the
    /// hub checks it against the hosts the ranks name (`NodeLayout::check_claims`): a
    /// disagreement is an [`Error::SymmetryMismatch`] for every rank.
    pub(crate) fn join_at(
        endpoint: &Endpoint,
        job_id: &str,
        rank: usize,
        size: usize,
        timeout: Duration,
        claim: Option<NodeClaim>,
    ) -> Result<Self> {
        if rank >= size {
            return Err(Error::InvalidConfig(format!(
                "rank {rank} is outside a world of {size} ranks"
            )));
        }
        let _span = tracing::info_span!("rendezvous_join", rank, size, job_id).entered();
        let hello = Hello {
            rank,
            world_size: size,
            pid: std::process::id(),
            job_id: job_id.to_string(),
            host: hostname(),
            claim: claim.unwrap_or_default(),
        };
        let this = |role, ranks| Self {
            rank,
            size,
            timeout,
            job_id: job_id.to_string(),
            carries_fds: endpoint.carries_fds(),
            ranks,
            inner: Mutex::new(Inner {
                role,
                failed: None,
                departed: false,
            }),
            late: Mutex::new(None),
        };
        if size == 1 {
            return Ok(this(Role::Alone, vec![(hello.host, hello.pid)]));
        }
        if rank == 0 {
            match endpoint.listen() {
                Ok(listener) => {
                    let check = claim.is_some();
                    let (peers, ranks) = gather_hub(listener.as_fd(), &hello, timeout, check)?;
                    let pids = ranks.iter().map(|(_, pid)| *pid).collect();
                    let rv = this(Role::Hub { peers }, ranks);
                    *lock(&rv.late) = Some(LateListener::start(listener, job_id, pids));
                    return Ok(rv);
                }
                Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => {
                    // Another process of this job is rank 0: say so to it and fail.
                }
                Err(source) => {
                    return Err(Error::Io {
                        what: format!(
                            "listening for the ranks of job {job_id:?} on {}",
                            endpoint.describe()
                        ),
                        source,
                    })
                }
            }
        }
        let (hub, ranks) = connect_member(endpoint, &hello, timeout)?;
        Ok(this(Role::Member { hub }, ranks))
    }

    /// Every rank's host (the node it runs on), by rank.
    pub fn hosts(&self) -> Vec<String> {
        self.ranks.iter().map(|(host, _)| host.clone()).collect()
    }

    /// This process's rank.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The job id the rendezvous is named after.
    pub fn job_id(&self) -> &str {
        &self.job_id
    }

    fn fail(&self, inner: &mut Inner, failure: Failure) -> Error {
        if let Role::Hub { peers } = &mut inner.role {
            broadcast_abort(peers, &failure);
        }
        let err = failure.error(self.rank);
        inner.failed.get_or_insert(failure);
        err
    }
}

impl Collective for ProcessRendezvous {
    fn size(&self) -> usize {
        self.size
    }

    fn timeout(&self) -> Duration {
        self.timeout
    }

    fn exchange(
        &self,
        rank: usize,
        op: &str,
        bytes: Vec<u8>,
        fds: Vec<OwnedFd>,
    ) -> Result<Vec<Contribution>> {
        if rank != self.rank {
            return Err(Error::InvalidConfig(format!(
                "rank {rank} used the rendezvous of rank {} (one rank a process)",
                self.rank
            )));
        }
        if !fds.is_empty() && !self.carries_fds {
            return Err(Error::InvalidConfig(format!(
                "`{op}` passes {} descriptors through a rendezvous between nodes: descriptors travel only inside a node",
                fds.len()
            )));
        }
        if fds.len() > MAX_FDS {
            return Err(Error::InvalidConfig(format!(
                "{} descriptors in one collective; at most {MAX_FDS}",
                fds.len()
            )));
        }
        let _span = tracing::debug_span!("rendezvous", rank, op).entered();
        let mut inner = lock(&self.inner);
        if let Some(failure) = &inner.failed {
            return Err(failure.error(rank));
        }
        if inner.departed {
            return Err(Error::InvalidConfig(format!(
                "rank {rank} entered `{op}` after leaving the job"
            )));
        }
        match inner.role {
            Role::Alone => Ok(vec![Contribution {
                bytes,
                fds: fds.into_iter().map(Arc::new).collect(),
            }]),
            Role::Hub { .. } => self.hub_exchange(&mut inner, op, bytes, fds),
            Role::Member { .. } => self.member_exchange(&mut inner, op, bytes, fds),
        }
    }

    fn poison(&self, rank: usize, reason: String) {
        let mut inner = lock(&self.inner);
        if inner.failed.is_some() {
            return;
        }
        let failure = Failure::Peer {
            peer: rank,
            what: "the job".into(),
            reason: reason.clone(),
        };
        match &mut inner.role {
            Role::Hub { peers } => broadcast_abort(peers, &failure),
            Role::Member { hub } => {
                let payload = Writer::new().str(&reason).finish();
                let soon = Instant::now() + Duration::from_secs(1);
                let _ = hub.send(Kind::Fail, self.rank, &payload, &[], soon);
            }
            Role::Alone => {}
        }
        inner.failed = Some(failure);
    }

    fn depart(&self, _rank: usize) {
        let mut inner = lock(&self.inner);
        if inner.departed {
            return;
        }
        inner.departed = true;
        let soon = Instant::now() + Duration::from_secs(1);
        let Inner { role, failed, .. } = &mut *inner;
        match role {
            Role::Hub { peers } if failed.is_none() => {
                let failure = Failure::Peer {
                    peer: 0,
                    what: "the job".into(),
                    reason: "left the job (its program finished)".into(),
                };
                broadcast_abort(peers, &failure);
            }
            Role::Member { hub } => {
                let _ = hub.send(Kind::Bye, self.rank, &[], &[], soon);
            }
            _ => {}
        }
        drop(inner);
        lock(&self.late).take();
    }
}

impl Drop for ProcessRendezvous {
    fn drop(&mut self) {
        self.depart(self.rank);
    }
}

impl std::fmt::Debug for ProcessRendezvous {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProcessRendezvous")
            .field("rank", &self.rank)
            .field("size", &self.size)
            .field("job_id", &self.job_id)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}
