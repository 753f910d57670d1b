//! The meeting point of the ranks of one job when they are processes of one node: rank 0
//! is the hub, listening on an abstract-namespace Unix socket named after the job id
//! (nothing is left in the file system); the other ranks connect to it. A collective
//! is one round: every rank sends the hub its contribution (bytes, and descriptors with
//! `SCM_RIGHTS`), the hub sends every rank the others' contributions.
//!
//! Every wait is bounded by the timeout (a rank waiting for the hub waits a little longer,
//! so that the hub's verdict, which names the missing ranks, arrives first). The hub
//! notices a rank whose connection closes (its process died) at once, and tells the
//! other ranks, naming it. A failure is sticky: every later collective of this rank
//! fails with it. Two processes claiming one rank is an error naming the rank, for both
//! of them and, while the job is still gathering, for the whole job.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::collective::{Collective, Contribution};
use super::socket::{self, Conn, Frame, Kind, WireError, MAX_FDS};
use super::wire::{Reader, Writer};
use iris_driver::sync::{deadline, lock};
use iris_driver::{Error, Result};

/// How long a rank waits for the hub beyond the timeout.
fn grace(timeout: Duration) -> Duration {
    (timeout / 4).clamp(Duration::from_millis(500), Duration::from_secs(10))
}

/// Why the job's collectives stopped: sent by the hub, kept by every rank.
#[derive(Clone, Debug)]
enum Failure {
    Peer {
        peer: usize,
        what: String,
        reason: String,
    },
    Timeout {
        what: String,
        waited: Duration,
        missing: Vec<usize>,
    },
    Mismatch {
        op: String,
        details: String,
    },
    Conflict {
        rank: usize,
        details: String,
    },
    Protocol {
        what: String,
        reason: String,
    },
}

impl Failure {
    fn error(&self, rank: usize) -> Error {
        match self.clone() {
            Failure::Peer { peer, what, reason } => Error::PeerFailed {
                rank,
                what,
                peer,
                reason,
            },
            Failure::Timeout {
                what,
                waited,
                missing,
            } => Error::Timeout {
                rank: Some(rank),
                what,
                waited,
                missing,
            },
            Failure::Mismatch { op, details } => Error::SymmetryMismatch { op, details },
            Failure::Conflict { rank, details } => Error::RankConflict { rank, details },
            Failure::Protocol { what, reason } => Error::Protocol { what, reason },
        }
    }

    fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        match self {
            Failure::Peer { peer, what, reason } => w.u8(0).usize(*peer).str(what).str(reason),
            Failure::Timeout {
                what,
                waited,
                missing,
            } => {
                w.u8(1)
                    .str(what)
                    .u64(waited.as_millis() as u64)
                    .usize(missing.len());
                for &m in missing {
                    w.usize(m);
                }
                &mut w
            }
            Failure::Mismatch { op, details } => w.u8(2).str(op).str(details),
            Failure::Conflict { rank, details } => w.u8(3).usize(*rank).str(details),
            Failure::Protocol { what, reason } => w.u8(4).str(what).str(reason),
        };
        w.finish()
    }

    fn decode(bytes: &[u8]) -> Result<Failure> {
        let mut r = Reader::new("abort", bytes);
        let failure = match r.u8()? {
            0 => Failure::Peer {
                peer: r.usize()?,
                what: r.string()?,
                reason: r.string()?,
            },
            1 => {
                let what = r.string()?;
                let waited = Duration::from_millis(r.u64()?);
                let n = r.usize()?.min(1 << 20);
                let missing = (0..n).map(|_| r.usize()).collect::<Result<_>>()?;
                Failure::Timeout {
                    what,
                    waited,
                    missing,
                }
            }
            2 => Failure::Mismatch {
                op: r.string()?,
                details: r.string()?,
            },
            3 => Failure::Conflict {
                rank: r.usize()?,
                details: r.string()?,
            },
            _ => Failure::Protocol {
                what: r.string()?,
                reason: r.string()?,
            },
        };
        r.end()?;
        Ok(failure)
    }
}

/// What a rank says when it connects.
struct Hello {
    rank: usize,
    world_size: usize,
    pid: u32,
    job_id: String,
}

impl Hello {
    fn encode(&self) -> Vec<u8> {
        Writer::new()
            .usize(self.rank)
            .usize(self.world_size)
            .u64(u64::from(self.pid))
            .str(&self.job_id)
            .finish()
    }

    fn decode(bytes: &[u8]) -> Result<Hello> {
        let mut r = Reader::new("hello", bytes);
        let hello = Hello {
            rank: r.usize()?,
            world_size: r.usize()?,
            pid: u32::try_from(r.u64()?).unwrap_or(u32::MAX),
            job_id: r.string()?,
        };
        r.end()?;
        Ok(hello)
    }
}

/// One connected rank, as the hub sees it.
struct Peer {
    conn: Conn,
    pid: u32,
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

/// Accepts and refuses connections that arrive after the job has gathered (a second
/// process claiming a rank that is taken).
struct LateListener {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

/// An all-gather of bytes and file descriptors among the processes of one job on one
/// node.
pub struct ProcessRendezvous {
    rank: usize,
    size: usize,
    timeout: Duration,
    job_id: String,
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
        if rank >= size {
            return Err(Error::InvalidConfig(format!(
                "rank {rank} is outside a world of {size} ranks"
            )));
        }
        let _span = tracing::info_span!("rendezvous_join", rank, size, job_id).entered();
        let this = |role| Self {
            rank,
            size,
            timeout,
            job_id: job_id.to_string(),
            inner: Mutex::new(Inner {
                role,
                failed: None,
                departed: false,
            }),
            late: Mutex::new(None),
        };
        if size == 1 {
            return Ok(this(Role::Alone));
        }
        let name = socket::socket_name(job_id);
        let hello = Hello {
            rank,
            world_size: size,
            pid: std::process::id(),
            job_id: job_id.to_string(),
        };
        if rank == 0 {
            match socket::listen(&name) {
                Ok(listener) => {
                    let (peers, pids) = gather_hub(listener.as_fd(), &hello, timeout)?;
                    let rv = this(Role::Hub { peers });
                    *lock(&rv.late) = Some(LateListener::start(listener, job_id, pids));
                    return Ok(rv);
                }
                Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => {
                    // Another process of this job is rank 0: say so to it and fail.
                }
                Err(source) => {
                    return Err(Error::Io {
                        what: format!("listening for the ranks of job {job_id:?}"),
                        source,
                    })
                }
            }
        }
        let hub = connect_member(&name, &hello, timeout)?;
        Ok(this(Role::Member { hub }))
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

    fn hub_exchange(
        &self,
        inner: &mut Inner,
        op: &str,
        bytes: Vec<u8>,
        fds: Vec<OwnedFd>,
    ) -> Result<Vec<Contribution>> {
        let Role::Hub { peers } = &mut inner.role else {
            return Err(Error::InvalidConfig("not the hub".into()));
        };
        let until = deadline(self.timeout);
        let mut got: Vec<Option<(Vec<u8>, Vec<OwnedFd>)>> = (0..self.size).map(|_| None).collect();
        got[0] = Some((bytes, fds));
        let mut failure = None;
        // A rank already known to be gone cannot enter.
        for (r, peer) in peers.iter().enumerate() {
            if let Some(Peer {
                gone: Some(reason), ..
            }) = peer
            {
                failure = Some(Failure::Peer {
                    peer: r,
                    what: format!("`{op}`"),
                    reason: reason.clone(),
                });
                break;
            }
        }
        while failure.is_none() {
            let pending: Vec<usize> = (1..self.size).filter(|&r| got[r].is_none()).collect();
            if pending.is_empty() {
                break;
            }
            let fds: Vec<BorrowedFd<'_>> = pending
                .iter()
                .filter_map(|&r| peers[r].as_ref().map(|p| p.conn.as_fd()))
                .collect();
            let ready = match socket::wait_readable(&fds, until) {
                Ok(ready) => ready,
                Err(source) => {
                    return Err(Error::Io {
                        what: "waiting for the ranks".into(),
                        source,
                    })
                }
            };
            if ready.is_empty() {
                failure = Some(Failure::Timeout {
                    what: format!("`{op}`"),
                    waited: self.timeout,
                    missing: pending,
                });
                break;
            }
            for i in ready {
                let r = pending[i];
                let Some(peer) = peers[r].as_mut() else {
                    continue;
                };
                match peer.conn.recv(until) {
                    Ok(frame) => match frame.kind {
                        Kind::Contribute => match decode_contribution(&frame, op) {
                            Ok(Ok(payload)) => got[r] = Some((payload, frame.fds)),
                            Ok(Err(other_op)) => {
                                failure = Some(Failure::Mismatch {
                                    op: op.to_string(),
                                    details: format!(
                                        "rank 0 entered `{op}`, rank {r} entered `{other_op}`"
                                    ),
                                });
                            }
                            Err(err) => failure = Some(protocol(r, &err)),
                        },
                        Kind::Fail => {
                            let reason = Reader::new("fail", &frame.payload)
                                .string()
                                .unwrap_or_else(|_| "failed".into());
                            peer.gone = Some(reason.clone());
                            failure = Some(Failure::Peer {
                                peer: r,
                                what: format!("`{op}`"),
                                reason,
                            });
                        }
                        Kind::Bye => {
                            let reason = format!("left the job without entering `{op}`");
                            peer.gone = Some(reason.clone());
                            failure = Some(Failure::Peer {
                                peer: r,
                                what: format!("`{op}`"),
                                reason,
                            });
                        }
                        other => {
                            failure = Some(Failure::Protocol {
                                what: format!("a message from rank {r}"),
                                reason: format!("unexpected {other:?} in `{op}`"),
                            });
                        }
                    },
                    Err(WireError::Closed) => {
                        let reason = died(peer.pid);
                        peer.gone = Some(reason.clone());
                        failure = Some(Failure::Peer {
                            peer: r,
                            what: format!("`{op}`"),
                            reason,
                        });
                    }
                    Err(WireError::TimedOut) => {}
                    Err(err) => {
                        failure = Some(Failure::Protocol {
                            what: format!("a message from rank {r}"),
                            reason: err.to_string(),
                        });
                    }
                }
                if failure.is_some() {
                    break;
                }
            }
        }
        if let Some(failure) = failure {
            return Err(self.fail(inner, failure));
        }
        // Every rank has contributed: send each the others' contributions. A rank that
        // cannot be reached now is reported at the next collective.
        let send_until = deadline(self.timeout);
        for (p, slot) in peers.iter_mut().enumerate() {
            let Some(peer) = slot.as_mut().filter(|p| p.gone.is_none()) else {
                continue;
            };
            for (r, entry) in got.iter().enumerate() {
                if r == p {
                    continue;
                }
                let Some((payload, fds)) = entry else {
                    continue;
                };
                let borrowed: Vec<BorrowedFd<'_>> = fds.iter().map(|f| f.as_fd()).collect();
                if let Err(err) = peer
                    .conn
                    .send(Kind::Result, r, payload, &borrowed, send_until)
                {
                    tracing::debug!(peer = p, %err, "a rank could not be sent its results");
                    peer.gone = Some(match err {
                        WireError::Closed => died(peer.pid),
                        other => format!("could not be reached: {other}"),
                    });
                    break;
                }
            }
        }
        Ok(got
            .into_iter()
            .map(|entry| {
                let (bytes, fds) = entry.unwrap_or_default();
                Contribution {
                    bytes,
                    fds: fds.into_iter().map(Arc::new).collect(),
                }
            })
            .collect())
    }

    fn member_exchange(
        &self,
        inner: &mut Inner,
        op: &str,
        bytes: Vec<u8>,
        fds: Vec<OwnedFd>,
    ) -> Result<Vec<Contribution>> {
        let Role::Member { hub } = &inner.role else {
            return Err(Error::InvalidConfig("not a member".into()));
        };
        let until = deadline(self.timeout + grace(self.timeout));
        let payload = Writer::new().str(op).bytes(&bytes).finish();
        let borrowed: Vec<BorrowedFd<'_>> = fds.iter().map(|f| f.as_fd()).collect();
        let sent = hub.send(Kind::Contribute, self.rank, &payload, &borrowed, until);
        let mut results: Vec<Option<Contribution>> = (0..self.size).map(|_| None).collect();
        results[self.rank] = Some(Contribution {
            bytes,
            fds: fds.into_iter().map(Arc::new).collect(),
        });
        let failure = match sent {
            // the hub may have said why before it closed: read on
            Ok(()) | Err(WireError::Closed) => loop {
                if results.iter().all(Option::is_some) {
                    break None;
                }
                match hub.recv(until) {
                    Ok(frame) => match frame.kind {
                        Kind::Result if frame.rank < self.size && frame.rank != self.rank => {
                            results[frame.rank] = Some(Contribution {
                                bytes: frame.payload,
                                fds: frame.fds.into_iter().map(Arc::new).collect(),
                            });
                        }
                        Kind::Abort => {
                            break Some(Failure::decode(&frame.payload).unwrap_or_else(|e| {
                                Failure::Protocol {
                                    what: "abort".into(),
                                    reason: e.to_string(),
                                }
                            }))
                        }
                        other => break Some(protocol(0, &format!("unexpected {other:?}"))),
                    },
                    Err(WireError::Closed) => break Some(Failure::Peer {
                        peer: 0,
                        what: format!("`{op}`"),
                        reason:
                            "closed its connection (the hub of the job's rendezvous exited or died)"
                                .into(),
                    }),
                    Err(WireError::TimedOut) => {
                        break Some(Failure::Timeout {
                            what: format!("`{op}` (waiting for rank 0, the hub)"),
                            waited: self.timeout + grace(self.timeout),
                            missing: vec![0],
                        })
                    }
                    Err(err) => break Some(protocol(0, &err.to_string())),
                }
            },
            Err(err) => Some(protocol(0, &err.to_string())),
        };
        if let Some(failure) = failure {
            return Err(self.fail(inner, failure));
        }
        Ok(results.into_iter().map(Option::unwrap_or_default).collect())
    }
}

fn protocol(from: usize, reason: &dyn std::fmt::Display) -> Failure {
    Failure::Protocol {
        what: format!("a message from rank {from}"),
        reason: reason.to_string(),
    }
}

fn died(pid: u32) -> String {
    format!("closed its connection without leaving the job: its process (pid {pid}) exited or died")
}

/// The payload of a contribution to `op`, or the op the rank entered instead.
fn decode_contribution(frame: &Frame, op: &str) -> Result<Result<Vec<u8>, String>> {
    let mut r = Reader::new("contribution", &frame.payload);
    let entered = r.string()?;
    let bytes = r.bytes()?.to_vec();
    r.end()?;
    Ok(if entered == op {
        Ok(bytes)
    } else {
        Err(entered)
    })
}

fn broadcast_abort(peers: &mut [Option<Peer>], failure: &Failure) {
    let payload = failure.encode();
    let until = Instant::now() + Duration::from_secs(1);
    for peer in peers.iter_mut().flatten().filter(|p| p.gone.is_none()) {
        if peer
            .conn
            .send(Kind::Abort, 0, &payload, &[], until)
            .is_err()
        {
            peer.gone = Some("could not be told that the job failed".into());
        }
    }
}

/// Rank 0: waits for every other rank's hello; returns the connections by rank and the
/// pid of every rank.
fn gather_hub(
    listener: BorrowedFd<'_>,
    own: &Hello,
    timeout: Duration,
) -> Result<(Vec<Option<Peer>>, Vec<u32>)> {
    let size = own.world_size;
    let until = deadline(timeout);
    let mut peers: Vec<Option<Peer>> = (0..size).map(|_| None).collect();
    let mut unidentified: Vec<Conn> = Vec::new();
    let arrived = |peers: &[Option<Peer>]| (1..size).all(|r| peers[r].is_some());
    let abort_all = |peers: &mut Vec<Option<Peer>>, extra: &[Conn], failure: &Failure| {
        broadcast_abort(peers, failure);
        let payload = failure.encode();
        let soon = Instant::now() + Duration::from_secs(1);
        for conn in extra {
            let _ = conn.send(Kind::Abort, 0, &payload, &[], soon);
        }
        failure.error(0)
    };
    while !arrived(&peers) {
        let mut fds: Vec<BorrowedFd<'_>> = vec![listener];
        fds.extend(unidentified.iter().map(Conn::as_fd));
        let ready = socket::wait_readable(&fds, until).map_err(|source| Error::Io {
            what: "waiting for the ranks to connect".into(),
            source,
        })?;
        if ready.is_empty() {
            let missing: Vec<usize> = (1..size).filter(|&r| peers[r].is_none()).collect();
            let failure = Failure::Timeout {
                what: "the job's rendezvous (ranks connecting)".into(),
                waited: timeout,
                missing,
            };
            return Err(abort_all(&mut peers, &unidentified, &failure));
        }
        let mut identified: Vec<usize> = Vec::new();
        for &i in ready.iter().rev() {
            if i == 0 {
                while let Some(conn) = socket::accept(listener).map_err(|source| Error::Io {
                    what: "accepting a rank's connection".into(),
                    source,
                })? {
                    unidentified.push(conn);
                }
                continue;
            }
            identified.push(i - 1);
        }
        identified.sort_unstable_by(|a, b| b.cmp(a));
        for index in identified {
            let conn = unidentified.swap_remove(index);
            let frame = match conn.recv(until) {
                Ok(frame) if frame.kind == Kind::Hello => frame,
                // a connection that closes or says nothing sensible is not a rank
                Ok(_) | Err(_) => continue,
            };
            let hello = match Hello::decode(&frame.payload) {
                Ok(h) => h,
                Err(_) => continue,
            };
            if hello.job_id != own.job_id {
                let _ = conn.send(
                    Kind::Reject,
                    0,
                    &Failure::Protocol {
                        what: "the rendezvous socket".into(),
                        reason: format!(
                            "it belongs to job {:?}, not {:?}",
                            own.job_id, hello.job_id
                        ),
                    }
                    .encode(),
                    &[],
                    until,
                );
                continue;
            }
            let failure = if hello.world_size != size {
                Some(Failure::Mismatch {
                    op: "the job's rendezvous".into(),
                    details: format!(
                        "rank 0 says the world has {size} ranks, rank {} says {}",
                        hello.rank, hello.world_size
                    ),
                })
            } else if hello.rank >= size {
                Some(Failure::Protocol {
                    what: format!("the hello of process {}", hello.pid),
                    reason: format!("rank {} is outside a world of {size} ranks", hello.rank),
                })
            } else if hello.rank == 0 || peers[hello.rank].is_some() {
                let first = if hello.rank == 0 {
                    own.pid
                } else {
                    peers
                        .get(hello.rank)
                        .and_then(|p| p.as_ref())
                        .map_or(0, |p| p.pid)
                };
                Some(Failure::Conflict {
                    rank: hello.rank,
                    details: format!(
                        "processes {first} and {} both say they are rank {} of job {:?}",
                        hello.pid, hello.rank, own.job_id
                    ),
                })
            } else {
                None
            };
            if let Some(failure) = failure {
                unidentified.push(conn);
                return Err(abort_all(&mut peers, &unidentified, &failure));
            }
            peers[hello.rank] = Some(Peer {
                conn,
                pid: hello.pid,
                gone: None,
            });
        }
    }
    let mut pids = vec![own.pid; size];
    for (r, peer) in peers.iter_mut().enumerate() {
        if let Some(peer) = peer {
            pids[r] = peer.pid;
            if let Err(err) = peer.conn.send(Kind::Welcome, 0, &[], &[], until) {
                peer.gone = Some(match err {
                    WireError::Closed => died(peer.pid),
                    other => format!("could not be reached: {other}"),
                });
            }
        }
    }
    Ok((peers, pids))
}

/// Any other rank: connects to the hub (retrying until it listens), says hello, waits
/// for the welcome.
fn connect_member(name: &[u8], hello: &Hello, timeout: Duration) -> Result<Conn> {
    let until = deadline(timeout + grace(timeout));
    let connect_until = deadline(timeout);
    let conn = loop {
        match socket::connect(name) {
            Ok(Some(conn)) => break conn,
            Ok(None) if Instant::now() < connect_until => {
                std::thread::sleep(Duration::from_millis(10));
            }
            Ok(None) => {
                return Err(Error::Timeout {
                    rank: Some(hello.rank),
                    what: format!(
                        "the rendezvous of job {:?} (connecting to rank 0)",
                        hello.job_id
                    ),
                    waited: timeout,
                    missing: vec![0],
                })
            }
            Err(source) => {
                return Err(Error::Io {
                    what: format!("connecting to the rendezvous of job {:?}", hello.job_id),
                    source,
                })
            }
        }
    };
    let rank = hello.rank;
    let lost = |reason: String| Error::PeerFailed {
        rank,
        what: "the job's rendezvous".into(),
        peer: 0,
        reason,
    };
    match conn.send(Kind::Hello, rank, &hello.encode(), &[], until) {
        Ok(()) | Err(WireError::Closed) => {}
        Err(err) => return Err(lost(err.to_string())),
    }
    match conn.recv(until) {
        Ok(frame) => match frame.kind {
            Kind::Welcome => Ok(conn),
            Kind::Abort | Kind::Reject => Err(Failure::decode(&frame.payload)?.error(rank)),
            other => Err(protocol(0, &format!("unexpected {other:?}")).error(rank)),
        },
        Err(WireError::Closed) => Err(lost(
            "closed its connection before every rank arrived".into(),
        )),
        Err(WireError::TimedOut) => Err(Error::Timeout {
            rank: Some(rank),
            what: format!(
                "the rendezvous of job {:?} (waiting for rank 0 to gather the ranks)",
                hello.job_id
            ),
            waited: timeout + grace(timeout),
            missing: vec![0],
        }),
        Err(err) => Err(lost(err.to_string())),
    }
}

impl LateListener {
    /// Refuses every later connection, naming the rank it claims and the process that
    /// holds it.
    fn start(listener: OwnedFd, job_id: &str, pids: Vec<u32>) -> LateListener {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let job_id = job_id.to_string();
        let thread = std::thread::Builder::new()
            .name("iris-rendezvous-late".into())
            .spawn(move || {
                while !flag.load(Ordering::Relaxed) {
                    let tick = Instant::now() + Duration::from_millis(100);
                    if !matches!(socket::wait_readable(&[listener.as_fd()], tick), Ok(r) if !r.is_empty()) {
                        continue;
                    }
                    while let Ok(Some(conn)) = socket::accept(listener.as_fd()) {
                        refuse_late(&conn, &job_id, &pids);
                    }
                }
            })
            .ok();
        LateListener { stop, thread }
    }
}

fn refuse_late(conn: &Conn, job_id: &str, pids: &[u32]) {
    let until = Instant::now() + Duration::from_secs(1);
    let Ok(frame) = conn.recv(until) else {
        return;
    };
    let failure = match Hello::decode(&frame.payload) {
        Ok(hello) if hello.job_id == job_id => Failure::Conflict {
            rank: hello.rank,
            details: format!(
                "process {} says it is rank {} of job {job_id:?}, which has gathered already{}",
                hello.pid,
                hello.rank,
                pids.get(hello.rank)
                    .map(|p| format!(" (with process {p} as that rank)"))
                    .unwrap_or_default()
            ),
        },
        Ok(hello) => Failure::Protocol {
            what: "the rendezvous socket".into(),
            reason: format!("it belongs to job {job_id:?}, not {:?}", hello.job_id),
        },
        Err(_) => return,
    };
    let _ = conn.send(Kind::Reject, 0, &failure.encode(), &[], until);
}

impl Drop for LateListener {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
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
