//! A set of ranks, as a bit set.

use std::fmt;

/// Which ranks of a world are in a set (for example: whose memory a rank can reach).
#[derive(Clone, PartialEq, Eq, Hash, Default)]
pub struct PeerMask {
    words: Vec<u64>,
    len: usize,
}

impl PeerMask {
    /// No rank of `world_size`.
    pub fn none(world_size: usize) -> Self {
        Self {
            words: vec![0; world_size.div_ceil(64)],
            len: world_size,
        }
    }

    /// Every rank of `world_size`.
    pub fn all(world_size: usize) -> Self {
        let mut mask = Self::none(world_size);
        for rank in 0..world_size {
            mask.insert(rank);
        }
        mask
    }

    /// The ranks for which `f(rank)` holds.
    pub fn from_fn(world_size: usize, mut f: impl FnMut(usize) -> bool) -> Self {
        let mut mask = Self::none(world_size);
        for rank in (0..world_size).filter(|&r| f(r)) {
            mask.insert(rank);
        }
        mask
    }

    /// Adds `rank` (ignored beyond the world size).
    pub fn insert(&mut self, rank: usize) {
        if rank < self.len {
            self.words[rank / 64] |= 1 << (rank % 64);
        }
    }

    /// Whether `rank` is in the set.
    pub fn contains(&self, rank: usize) -> bool {
        rank < self.len && self.words[rank / 64] & (1 << (rank % 64)) != 0
    }

    /// The world size the mask is over.
    pub fn world_size(&self) -> usize {
        self.len
    }

    /// Whether every rank is in the set.
    pub fn is_all(&self) -> bool {
        (0..self.len).all(|r| self.contains(r))
    }

    /// The ranks not in the set.
    pub fn missing(&self) -> Vec<usize> {
        (0..self.len).filter(|&r| !self.contains(r)).collect()
    }

    /// The ranks in the set.
    pub fn ranks(&self) -> Vec<usize> {
        (0..self.len).filter(|&r| self.contains(r)).collect()
    }
}

impl fmt::Debug for PeerMask {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.ranks()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sets_and_queries() {
        let mut m = PeerMask::none(70);
        assert!(!m.is_all());
        m.insert(0);
        m.insert(65);
        m.insert(700);
        assert!(m.contains(0) && m.contains(65) && !m.contains(1) && !m.contains(700));
        assert_eq!(m.ranks(), vec![0, 65]);
        assert!(PeerMask::all(70).is_all());
        assert_eq!(PeerMask::from_fn(4, |r| r != 2).missing(), vec![2]);
    }
}
