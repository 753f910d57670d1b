//! What every collective of a world is built on, for ranks as threads and ranks as
//! processes alike: an all-gather of bytes and file descriptors.

use std::fmt;
use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::time::Duration;

use super::wire::{Reader, Writer};
use super::Rendezvous;
use crate::pod::Pod;
use iris_driver::{Error, Result};

/// What one rank contributed to an all-gather: bytes, and file descriptors (shared: every
/// rank of a world of threads sees the same descriptors; a process receives its own
/// copies).
#[derive(Clone, Debug, Default)]
pub struct Contribution {
    /// The bytes.
    pub bytes: Vec<u8>,
    /// The descriptors, in the order they were passed.
    pub fds: Vec<Arc<OwnedFd>>,
}

/// The meeting point of the ranks of one world.
///
/// Every method is bounded by [`timeout`](Collective::timeout). A rank that fails is
/// reported to the ranks waiting for it as [`Error::PeerFailed`] naming it; a timeout
/// names the ranks that did not arrive.
pub trait Collective: Send + Sync + fmt::Debug {
    /// How many ranks meet here.
    fn size(&self) -> usize;

    /// The bound on every wait.
    fn timeout(&self) -> Duration;

    /// Contributes `bytes` and `fds` for collective `op` and returns every rank's
    /// contribution, by rank. Every rank calls it for the same `op` in the same order;
    /// ranks that disagree on `op` get [`Error::SymmetryMismatch`].
    fn exchange(
        &self,
        rank: usize,
        op: &str,
        bytes: Vec<u8>,
        fds: Vec<OwnedFd>,
    ) -> Result<Vec<Contribution>>;

    /// Returns once every rank has entered the barrier `op`.
    fn barrier(&self, rank: usize, op: &str) -> Result<()> {
        self.exchange(rank, op, Vec::new(), Vec::new()).map(drop)
    }

    /// Records that `rank` failed; ranks waiting for it now or later get an error naming
    /// it. The first failure is kept.
    fn poison(&self, rank: usize, reason: String);

    /// Records that `rank` has left: no collective waits for it any more.
    fn depart(&self, rank: usize);

    /// The index of the node `rank` runs on. Ranks of different nodes share no memory
    /// and pass each other no file descriptors: a provider marks them unreachable. Every
    /// rank of a world within one node is on node 0 (the default).
    fn node_of(&self, rank: usize) -> usize {
        let _ = rank;
        0
    }
}

impl Collective for Rendezvous {
    fn size(&self) -> usize {
        Rendezvous::size(self)
    }

    fn timeout(&self) -> Duration {
        Rendezvous::timeout(self)
    }

    fn exchange(
        &self,
        rank: usize,
        op: &str,
        bytes: Vec<u8>,
        fds: Vec<OwnedFd>,
    ) -> Result<Vec<Contribution>> {
        let fds = fds.into_iter().map(Arc::new).collect();
        self.all_gather(rank, op, Contribution { bytes, fds })
    }

    fn poison(&self, rank: usize, reason: String) {
        Rendezvous::poison(self, rank, reason);
    }

    fn depart(&self, rank: usize) {
        Rendezvous::depart(self, rank);
    }
}

/// A value [`Iris::all_gather`](crate::Iris::all_gather) can carry between ranks, which
/// may be processes: it is sent as bytes. Implemented for every [`Pod`] type, vectors of
/// them, and strings.
pub trait Gather: Sized {
    /// Appends the value's bytes to `out`.
    fn encode(&self, out: &mut Vec<u8>);

    /// The value encoded in `bytes`.
    fn decode(bytes: &[u8]) -> Result<Self>;
}

fn wrong_size(type_name: &str, expected: usize, got: usize) -> Error {
    Error::Protocol {
        what: format!("all_gather of {type_name}"),
        reason: format!("expected {expected} bytes, got {got}: ranks passed different types"),
    }
}

impl<T: Pod> Gather for T {
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(crate::pod::as_bytes(std::slice::from_ref(self)));
    }

    fn decode(bytes: &[u8]) -> Result<Self> {
        let size = std::mem::size_of::<T>();
        if bytes.len() != size {
            return Err(wrong_size(std::any::type_name::<T>(), size, bytes.len()));
        }
        // SAFETY: `bytes` holds exactly one `T`, written by `encode` on a rank of the
        // same program; `Pod` types accept those bytes. The read is unaligned.
        Ok(unsafe { std::ptr::read_unaligned(bytes.as_ptr().cast::<T>()) })
    }
}

impl<T: Pod> Gather for Vec<T> {
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(crate::pod::as_bytes(self));
    }

    fn decode(bytes: &[u8]) -> Result<Self> {
        let size = std::mem::size_of::<T>().max(1);
        if bytes.len() % size != 0 {
            return Err(wrong_size(
                std::any::type_name::<Self>(),
                bytes.len().next_multiple_of(size),
                bytes.len(),
            ));
        }
        let mut out = crate::pod::zeroed_vec::<T>(bytes.len() / size);
        crate::pod::as_bytes_mut(&mut out).copy_from_slice(bytes);
        Ok(out)
    }
}

impl Gather for String {
    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(self.as_bytes());
    }

    fn decode(bytes: &[u8]) -> Result<Self> {
        String::from_utf8(bytes.to_vec()).map_err(|_| Error::Protocol {
            what: "all_gather of String".into(),
            reason: "not UTF-8".into(),
        })
    }
}

/// Every rank's `value`, by rank, through `collective`.
pub(crate) fn all_gather<T: Gather>(
    collective: &dyn Collective,
    rank: usize,
    op: &str,
    value: &T,
) -> Result<Vec<T>> {
    let mut bytes = Vec::new();
    value.encode(&mut bytes);
    collective
        .exchange(rank, op, bytes, Vec::new())?
        .iter()
        .map(|c| T::decode(&c.bytes))
        .collect()
}

/// Rank `root`'s `bytes` on every rank, through `collective` (over the network when the
/// ranks span nodes): a collective every rank enters with the same `op` and `root`; the
/// other ranks' `bytes` are ignored (pass an empty vector). What a SHMEM library's
/// bootstrap needs to hand rank 0's unique id to every rank.
pub fn broadcast(
    collective: &dyn Collective,
    rank: usize,
    root: usize,
    op: &str,
    bytes: Vec<u8>,
) -> Result<Vec<u8>> {
    if root >= collective.size() {
        return Err(Error::InvalidConfig(format!(
            "broadcast from rank {root} in a world of {} ranks",
            collective.size()
        )));
    }
    let mine = if rank == root { bytes } else { Vec::new() };
    let mut all = collective.exchange(rank, op, mine, Vec::new())?;
    Ok(std::mem::take(&mut all[root].bytes))
}

/// Encodes a failure message with a flag, for contributions that may carry an error.
pub(crate) fn encode_status(w: &mut Writer, status: &Result<(), String>) {
    match status {
        Ok(()) => w.u8(0),
        Err(message) => w.u8(1).str(message),
    };
}

/// Decodes what [`encode_status`] wrote.
pub(crate) fn decode_status(r: &mut Reader<'_>) -> Result<Result<(), String>> {
    Ok(match r.u8()? {
        0 => Ok(()),
        _ => Err(r.string()?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn broadcast_hands_the_root_bytes_to_every_rank() {
        let rv = Rendezvous::new(3, std::time::Duration::from_secs(10));
        let got: Vec<Vec<u8>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..3)
                .map(|r| {
                    let rv = &rv;
                    s.spawn(move || broadcast(rv, r, 1, "unique id", vec![r as u8; 4]).unwrap())
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(got.iter().all(|b| b == &vec![1u8; 4]), "{got:?}");
        assert!(broadcast(&rv, 0, 3, "x", vec![]).is_err());
    }

    #[test]
    fn gather_values_round_trip() {
        let mut b = Vec::new();
        42u64.encode(&mut b);
        assert_eq!(u64::decode(&b).unwrap(), 42);
        assert!(u32::decode(&b).is_err());
        let v = vec![1.5f32, -2.0, 3.25];
        let mut b = Vec::new();
        v.encode(&mut b);
        assert_eq!(Vec::<f32>::decode(&b).unwrap(), v);
        assert!(Vec::<f32>::decode(&b[..5]).is_err());
        let mut b = Vec::new();
        "rank".to_string().encode(&mut b);
        assert_eq!(String::decode(&b).unwrap(), "rank");
    }
}
