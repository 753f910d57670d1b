//! The meeting point of the ranks of a world in one process: an all-gather that every
//! collective (barrier, symmetric allocation) is built on.
//!
//! Every wait is bounded. A rank that fails poisons the rendezvous, and a rank that
//! leaves the world (its closure returned) is no longer waited for: ranks blocked in a
//! collective then wake with [`Error::PeerFailed`] instead of hanging. A timeout names the
//! ranks that did not arrive, and poisons the rendezvous too.

use std::any::Any;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use iris_driver::sync::{deadline, lock, wait_until};
use iris_driver::{Error, Result};

type Value = Box<dyn Any + Send + Sync>;

struct Posted {
    op: String,
    value: Value,
}

struct State {
    /// The round being collected; every rank is either in it or done with the previous.
    round: u64,
    posted: Vec<Option<Posted>>,
    /// The posts of the last completed round.
    last: Option<Arc<Vec<Posted>>>,
    /// The first failure: (rank, what happened to it).
    failed: Option<(usize, String)>,
    departed: Vec<bool>,
}

/// An all-gather across the `size` ranks of one world.
pub struct Rendezvous {
    size: usize,
    timeout: Duration,
    state: Mutex<State>,
    cv: Condvar,
}

impl Rendezvous {
    /// A rendezvous for `size` ranks whose waits give up after `timeout`.
    pub fn new(size: usize, timeout: Duration) -> Self {
        Self {
            size,
            timeout,
            state: Mutex::new(State {
                round: 0,
                posted: (0..size).map(|_| None).collect(),
                last: None,
                failed: None,
                departed: vec![false; size],
            }),
            cv: Condvar::new(),
        }
    }

    /// How many ranks meet here.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The bound on every wait.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Contributes `value` for collective `op` and returns every rank's value, by rank.
    ///
    /// Every rank must call it for the same `op`, with the same value type, in the same
    /// order; ranks that disagree on `op` get [`Error::SymmetryMismatch`].
    pub fn all_gather<T>(&self, rank: usize, op: &str, value: T) -> Result<Vec<T>>
    where
        T: Clone + Send + Sync + 'static,
    {
        if rank >= self.size {
            return Err(Error::InvalidConfig(format!(
                "rank {rank} is outside a world of {} ranks",
                self.size
            )));
        }
        let mut s = lock(&self.state);
        self.check_failed(&s, rank, op)?;
        if s.departed[rank] {
            return Err(Error::InvalidConfig(format!(
                "rank {rank} entered `{op}` after leaving the world"
            )));
        }
        let my_round = s.round;
        s.posted[rank] = Some(Posted {
            op: op.to_string(),
            value: Box::new(value),
        });
        if s.posted.iter().all(Option::is_some) {
            let posts: Vec<Posted> = s.posted.iter_mut().filter_map(Option::take).collect();
            s.last = Some(Arc::new(posts));
            s.round += 1;
            self.cv.notify_all();
        } else {
            let (guard, done) = wait_until(&self.cv, s, deadline(self.timeout), |s| {
                s.round > my_round
                    || s.failed.is_some()
                    || (0..self.size).any(|r| s.departed[r] && s.posted[r].is_none())
            });
            s = guard;
            if s.round == my_round {
                self.check_failed(&s, rank, op)?;
                if let Some(peer) = (0..self.size).find(|&r| s.departed[r] && s.posted[r].is_none())
                {
                    return Err(Error::PeerFailed {
                        rank,
                        what: op.to_string(),
                        peer,
                        reason: "left the world without entering it".into(),
                    });
                }
                if !done {
                    let missing: Vec<usize> =
                        (0..self.size).filter(|&r| s.posted[r].is_none()).collect();
                    s.failed = Some((
                        rank,
                        format!("timed out in `{op}` waiting for rank(s) {missing:?}"),
                    ));
                    self.cv.notify_all();
                    return Err(Error::Timeout {
                        rank: Some(rank),
                        what: format!("`{op}`"),
                        waited: self.timeout,
                        missing,
                    });
                }
            }
        }
        // This rank's round completed, and no later round can have completed without it.
        let posts = s.last.clone();
        drop(s);
        let posts = posts.ok_or_else(|| Error::InvalidConfig("rendezvous lost a round".into()))?;
        gather(&posts, op)
    }

    /// A host barrier: returns once every rank has entered it.
    pub fn barrier(&self, rank: usize, op: &str) -> Result<()> {
        self.all_gather(rank, op, ()).map(drop)
    }

    /// Records that `rank` failed; ranks waiting now or later wake with an error naming it.
    /// The first failure is kept.
    pub fn poison(&self, rank: usize, reason: String) {
        let mut s = lock(&self.state);
        s.failed.get_or_insert((rank, reason));
        drop(s);
        self.cv.notify_all();
    }

    /// Records that `rank` has left: no collective waits for it any more.
    pub fn depart(&self, rank: usize) {
        let mut s = lock(&self.state);
        if let Some(d) = s.departed.get_mut(rank) {
            *d = true;
        }
        drop(s);
        self.cv.notify_all();
    }

    fn check_failed(&self, s: &State, rank: usize, op: &str) -> Result<()> {
        match &s.failed {
            Some((peer, reason)) => Err(Error::PeerFailed {
                rank,
                what: format!("`{op}`"),
                peer: *peer,
                reason: reason.clone(),
            }),
            None => Ok(()),
        }
    }
}

fn gather<T: Clone + 'static>(posts: &[Posted], op: &str) -> Result<Vec<T>> {
    if posts.iter().any(|p| p.op != op) {
        let entered: Vec<String> = posts
            .iter()
            .enumerate()
            .map(|(r, p)| format!("rank {r} entered `{}`", p.op))
            .collect();
        return Err(Error::SymmetryMismatch {
            op: op.to_string(),
            details: entered.join(", "),
        });
    }
    posts
        .iter()
        .map(|p| {
            p.value
                .downcast_ref::<T>()
                .cloned()
                .ok_or_else(|| Error::SymmetryMismatch {
                    op: op.to_string(),
                    details: "ranks passed values of different types".into(),
                })
        })
        .collect()
}

impl std::fmt::Debug for Rendezvous {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rendezvous")
            .field("size", &self.size)
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_ranks<R: Send>(n: usize, f: impl Fn(usize) -> R + Sync) -> Vec<R> {
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..n)
                .map(|r| {
                    s.spawn({
                        let f = &f;
                        move || f(r)
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        })
    }

    #[test]
    fn gathers_in_rank_order_over_many_rounds() {
        let rv = Rendezvous::new(4, Duration::from_secs(10));
        let out = run_ranks(4, |r| {
            (0..200)
                .map(|i| rv.all_gather(r, "x", r * 1000 + i).unwrap())
                .collect::<Vec<_>>()
        });
        for per_rank in out {
            for (i, got) in per_rank.into_iter().enumerate() {
                assert_eq!(got, (0..4).map(|r| r * 1000 + i).collect::<Vec<_>>());
            }
        }
    }

    #[test]
    fn timeout_names_missing_ranks() {
        let rv = Rendezvous::new(3, Duration::from_millis(100));
        let err = rv.all_gather(1, "barrier", ()).unwrap_err();
        match &err {
            Error::Timeout { rank, missing, .. } => {
                assert_eq!(*rank, Some(1));
                assert_eq!(missing, &vec![0, 2]);
            }
            other => panic!("{other}"),
        }
        assert!(
            err.to_string().contains("rank(s) 0, 2 did not arrive"),
            "{err}"
        );
        // later entrants fail fast, naming the rank that timed out
        let err = rv.barrier(0, "barrier").unwrap_err();
        assert!(matches!(err, Error::PeerFailed { peer: 1, .. }), "{err}");
    }

    #[test]
    fn poison_and_departure_wake_waiters() {
        let rv = Rendezvous::new(3, Duration::from_secs(30));
        let out = run_ranks(3, |r| match r {
            0 => {
                std::thread::sleep(Duration::from_millis(50));
                rv.poison(0, "returned an error".into());
                None
            }
            _ => Some(rv.barrier(r, "barrier").unwrap_err()),
        });
        for err in out.into_iter().flatten() {
            assert!(matches!(err, Error::PeerFailed { peer: 0, .. }), "{err}");
        }

        let rv = Rendezvous::new(2, Duration::from_secs(30));
        let out = run_ranks(2, |r| {
            if r == 0 {
                rv.depart(0);
                None
            } else {
                Some(rv.barrier(1, "barrier").unwrap_err())
            }
        });
        let err = out[1].as_ref().unwrap();
        assert!(err.to_string().contains("rank 0 left the world"), "{err}");
    }

    #[test]
    fn different_ops_are_a_symmetry_error() {
        let rv = Rendezvous::new(2, Duration::from_secs(10));
        let out = run_ranks(2, |r| {
            let op = if r == 0 { "barrier" } else { "alloc" };
            rv.all_gather(r, op, ()).unwrap_err()
        });
        for err in out {
            assert!(matches!(err, Error::SymmetryMismatch { .. }), "{err}");
            assert!(err.to_string().contains("rank 1 entered `alloc`"), "{err}");
        }
    }
}
