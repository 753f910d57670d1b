//! Every other rank's side: connecting to the hub (retrying until it listens), saying
//! hello, learning every rank's host from the welcome, and exchanging contributions
//! through it.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::Arc;
use std::time::{Duration, Instant};

use iris_driver::sync::deadline;
use iris_driver::{Error, Result};

use super::super::collective::Contribution;
use super::super::endpoint::Endpoint;
use super::super::socket::{Conn, Kind, WireError};
use super::super::wire::Writer;
use super::faults::{grace, protocol, Failure};
use super::protocol::{decode_welcome, Hello, RankList};
use super::{Inner, ProcessRendezvous, Role};

impl ProcessRendezvous {
    pub(super) fn member_exchange(
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

/// Any other rank: connects to the hub (retrying until it listens), says hello, waits
/// for the welcome; returns the connection and every rank's host and pid.
pub(super) fn connect_member(
    endpoint: &Endpoint,
    hello: &Hello,
    timeout: Duration,
) -> Result<(Conn, RankList)> {
    let until = deadline(timeout + grace(timeout));
    let connect_until = deadline(timeout);
    let conn = loop {
        match endpoint.connect(connect_until) {
            Ok(Some(conn)) => break conn,
            Ok(None) if Instant::now() < connect_until => {
                std::thread::sleep(Duration::from_millis(10));
            }
            Ok(None) => {
                return Err(Error::Timeout {
                    rank: Some(hello.rank),
                    what: format!(
                        "the rendezvous of job {:?} (connecting to rank 0 at {})",
                        hello.job_id,
                        endpoint.describe()
                    ),
                    waited: timeout,
                    missing: vec![0],
                })
            }
            Err(source) => {
                return Err(Error::Io {
                    what: format!(
                        "connecting to the rendezvous of job {:?} at {}",
                        hello.job_id,
                        endpoint.describe()
                    ),
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
            Kind::Welcome => Ok((conn, decode_welcome(&frame.payload, hello.world_size)?)),
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
