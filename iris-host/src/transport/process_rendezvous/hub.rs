//! Rank 0's side: gathering every rank's hello, exchanging contributions, telling every
//! rank when one fails, and refusing processes that claim a rank after the job gathered.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use iris_driver::sync::deadline;
use iris_driver::{Error, Result};

use super::super::collective::Contribution;
use super::super::nodes::NodeLayout;
use super::super::socket::{self, Conn, Kind, WireError};
use super::super::wire::Reader;
use super::faults::broadcast_abort;
use super::faults::{died, protocol, Failure};
use super::protocol::{decode_contribution, encode_welcome, Hello, RankList};
use super::{Inner, Peer, ProcessRendezvous, Role};

impl ProcessRendezvous {
    pub(super) fn hub_exchange(
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
                        let reason = died(peer.pid, &peer.host);
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
                        WireError::Closed => died(peer.pid, &peer.host),
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
}

/// Rank 0: waits for every other rank's hello; returns the connections by rank and the
/// host and pid of every rank. With `check_nodes`, what each rank's launcher says about
/// its node must agree with the hosts the ranks name.
pub(super) fn gather_hub(
    listener: BorrowedFd<'_>,
    own: &Hello,
    timeout: Duration,
    check_nodes: bool,
) -> Result<(Vec<Option<Peer>>, RankList)> {
    let size = own.world_size;
    let until = deadline(timeout);
    let mut peers: Vec<Option<Peer>> = (0..size).map(|_| None).collect();
    let mut claims = vec![own.claim; size];
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
            claims[hello.rank] = hello.claim;
            peers[hello.rank] = Some(Peer {
                conn,
                pid: hello.pid,
                host: hello.host,
                gone: None,
            });
        }
    }
    let mut ranks = vec![(own.host.clone(), own.pid); size];
    for (r, peer) in peers.iter().enumerate() {
        if let Some(peer) = peer {
            ranks[r] = (peer.host.clone(), peer.pid);
        }
    }
    if check_nodes {
        let hosts: Vec<String> = ranks.iter().map(|(h, _)| h.clone()).collect();
        if let Err(details) = NodeLayout::from_hosts(&hosts).check_claims(&claims) {
            let failure = Failure::Mismatch {
                op: "the job's rendezvous (its nodes)".into(),
                details,
            };
            return Err(abort_all(&mut peers, &[], &failure));
        }
    }
    let welcome = encode_welcome(&ranks);
    for peer in peers.iter_mut().flatten() {
        if let Err(err) = peer.conn.send(Kind::Welcome, 0, &welcome, &[], until) {
            peer.gone = Some(match err {
                WireError::Closed => died(peer.pid, &peer.host),
                other => format!("could not be reached: {other}"),
            });
        }
    }
    Ok((peers, ranks))
}

/// Accepts and refuses connections that arrive after the job has gathered (a second
/// process claiming a rank that is taken).
pub(super) struct LateListener {
    pub(super) stop: Arc<AtomicBool>,
    pub(super) thread: Option<JoinHandle<()>>,
}

impl LateListener {
    /// Refuses every later connection, naming the rank it claims and the process that
    /// holds it.
    pub(super) fn start(listener: OwnedFd, job_id: &str, pids: Vec<u32>) -> LateListener {
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
