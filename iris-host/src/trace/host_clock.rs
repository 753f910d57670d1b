//! Putting ranks of several nodes on one timeline: each node's monotonic clock is its
//! own, so each node other than rank 0's measures its clock's offset to rank 0's when
//! tracing starts, and its ranks' trace times are shifted by it.
//!
//! The measurement is NTP's, made of all-gathers. An all-gather ends, for every rank,
//! after every rank entered it. So in a round that rank 0 enters last (the others already
//! wait: rank 0 sleeps first), a rank that leaves at `b` on its clock, after rank 0
//! entered at `t0` on rank 0's, bounds the offset from above: `offset <= b - t0`. In a
//! round that a node's first rank enters last, at `a` on its clock, rank 0 leaving at
//! `b0` bounds it from below: `offset >= a - b0`. The rounds' tightest bounds give the
//! offset (their middle) and its error (half their distance), whatever the delays, as
//! long as they are about the same both ways. Ranks of rank 0's node share its clock:
//! their offset is 0, not measured; ranks of one node share their first rank's.

use std::time::Duration;

use iris_driver::Result;

use super::now_ns;
use crate::transport::{all_gather, Collective};

/// Rounds in each direction.
const ROUNDS: usize = 8;

/// How long the rank that should enter a round last waits first.
const SETTLE: Duration = Duration::from_millis(2);

/// This rank's host clock minus rank 0's, and the error, in ns: `(0, 0)` when the world
/// is one node or the rank is on rank 0's node. Collective: every rank of the world calls
/// it, in the same place.
pub(super) fn offset_to_rank0(collective: &dyn Collective, rank: usize) -> Result<(i64, u64)> {
    let world = collective.size();
    let node0 = collective.node_of(0);
    // The first rank of each node other than rank 0's.
    let mut leaders: Vec<usize> = Vec::new();
    for r in 0..world {
        let node = collective.node_of(r);
        if node != node0 && !leaders.iter().any(|&l| collective.node_of(l) == node) {
            leaders.push(r);
        }
    }
    if leaders.is_empty() {
        return Ok((0, 0));
    }
    // From above: rank 0 enters last.
    let mut upper = i64::MAX;
    for _ in 0..ROUNDS {
        if rank == 0 {
            std::thread::sleep(SETTLE);
        }
        let entered = now_ns();
        let all = all_gather(collective, rank, "trace clock: rank 0 last", &entered)?;
        upper = upper.min(now_ns() as i64 - all[0] as i64);
    }
    // From below, seen by rank 0: each node's first rank enters last.
    let mut lower = vec![i64::MIN; world];
    for &leader in &leaders {
        for _ in 0..ROUNDS {
            if rank == leader {
                std::thread::sleep(SETTLE);
            }
            let entered = now_ns();
            let all = all_gather(collective, rank, "trace clock: a node last", &entered)?;
            let left = now_ns() as i64;
            if rank == 0 {
                lower[leader] = lower[leader].max(all[leader] as i64 - left);
            }
        }
    }
    // Rank 0 hands out the lower bounds; each node's first rank its offset.
    let lower = all_gather(collective, rank, "trace clock: lower bounds", &lower)?.swap_remove(0);
    let mine = if leaders.contains(&rank) {
        middle(lower[rank], upper)
    } else {
        (0, 0)
    };
    let offsets = all_gather(
        collective,
        rank,
        "trace clock: offsets",
        &[mine.0, mine.1 as i64],
    )?;
    let node = collective.node_of(rank);
    Ok(
        match leaders.iter().find(|&&l| collective.node_of(l) == node) {
            Some(&leader) => (offsets[leader][0], offsets[leader][1] as u64),
            None => (0, 0),
        },
    )
}

/// The middle of `[lower, upper]` and half its width (bounds that crossed, which delays
/// unequal both ways can make, give their middle and half the crossing).
fn middle(lower: i64, upper: i64) -> (i64, u64) {
    let mid = lower / 2 + upper / 2;
    (mid, upper.abs_diff(lower) / 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_offset_is_the_middle_of_its_bounds() {
        assert_eq!(middle(900, 1100), (1000, 100));
        assert_eq!(middle(-50, 50), (0, 50));
        assert_eq!(middle(1010, 990), (1000, 10));
    }
}
