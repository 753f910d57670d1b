//! Why a job's collectives stopped: the failure the hub sends every rank, which every
//! rank keeps (a failed collective fails every later one), and how long a rank waits for
//! the hub's verdict.

use std::time::{Duration, Instant};

use iris_driver::{Error, Result};

use super::super::socket::Kind;
use super::super::wire::{Reader, Writer};
use super::Peer;

/// How long a rank waits for the hub beyond the timeout.
pub(super) fn grace(timeout: Duration) -> Duration {
    (timeout / 4).clamp(Duration::from_millis(500), Duration::from_secs(10))
}

/// Why the job's collectives stopped: sent by the hub, kept by every rank.
#[derive(Clone, Debug)]
pub(super) enum Failure {
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
    pub(super) fn error(&self, rank: usize) -> Error {
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

    pub(super) fn encode(&self) -> Vec<u8> {
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

    pub(super) fn decode(bytes: &[u8]) -> Result<Failure> {
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

pub(super) fn protocol(from: usize, reason: &dyn std::fmt::Display) -> Failure {
    Failure::Protocol {
        what: format!("a message from rank {from}"),
        reason: reason.to_string(),
    }
}

pub(super) fn died(pid: u32, host: &str) -> String {
    format!("closed its connection without leaving the job: its process (pid {pid} on {host}) exited or died")
}

pub(super) fn broadcast_abort(peers: &mut [Option<Peer>], failure: &Failure) {
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
