//! `SymmetricAddressMap`: where every rank's copy of one symmetric allocation lives.

use super::PeerMask;
use iris_driver::{Error, Result};

/// One symmetric allocation as seen from one rank: its own copy (`base`, `bytes`), the
/// device address of the table of every rank's base (one `u64` per rank, in this rank's
/// device memory, written once when the allocation is made; the address is entry 0's,
/// after the header of [`iris_device::abi::peer_table`]), and which peers this rank's
/// device can reach.
///
/// A kernel translates a pointer `p` into this allocation to rank `r`'s copy as
/// `table[r] + (p - base)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SymmetricAddressMap {
    local_rank: usize,
    base: u64,
    bytes: usize,
    peer_bases: Vec<u64>,
    table: u64,
    reachable: PeerMask,
}

impl SymmetricAddressMap {
    /// A map, after checking its invariants: the table has one entry per rank of the
    /// world, the local rank is one of them, `peer_bases[local_rank] == base`, the
    /// reachable mask is over the same world and contains the local rank, no reachable
    /// rank's base is null (an unreachable rank's may be: it could not be mapped), the
    /// table's device address is not null.
    ///
    /// `peer_bases` is the host copy of the table whose device copy is at `table`.
    pub fn new(
        local_rank: usize,
        world_size: usize,
        base: u64,
        bytes: usize,
        peer_bases: Vec<u64>,
        table: u64,
        reachable: PeerMask,
    ) -> Result<Self> {
        let bad = |reason: String| Err(Error::InvalidAddressMap(reason));
        if peer_bases.len() != world_size {
            return bad(format!(
                "the table has {} entries but the world has {world_size} ranks",
                peer_bases.len()
            ));
        }
        if local_rank >= world_size {
            return bad(format!(
                "local rank {local_rank} is outside a world of {world_size} ranks"
            ));
        }
        if peer_bases[local_rank] != base {
            return bad(format!(
                "table[{local_rank}] = {:#x} is not the local base {base:#x}",
                peer_bases[local_rank]
            ));
        }
        if reachable.world_size() != world_size {
            return bad(format!(
                "the reachable mask is over {} ranks but the world has {world_size}",
                reachable.world_size()
            ));
        }
        if !reachable.contains(local_rank) {
            return bad(format!("rank {local_rank} cannot reach its own copy"));
        }
        if let Some(r) = (0..world_size).find(|&r| reachable.contains(r) && peer_bases[r] == 0) {
            return bad(format!("table[{r}] is null"));
        }
        if table == 0 {
            return bad("the table's device address is null".into());
        }
        Ok(Self {
            local_rank,
            base,
            bytes,
            peer_bases,
            table,
            reachable,
        })
    }

    /// The rank this map belongs to.
    pub fn local_rank(&self) -> usize {
        self.local_rank
    }

    /// How many ranks share the allocation.
    pub fn world_size(&self) -> usize {
        self.peer_bases.len()
    }

    /// Device address of this rank's copy.
    pub fn base(&self) -> u64 {
        self.base
    }

    /// Bytes of each copy.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Whether device address `addr` lies in this rank's copy (an empty copy holds its
    /// base address).
    pub fn contains(&self, addr: u64) -> bool {
        addr >= self.base && addr < self.base + self.bytes.max(1) as u64
    }

    /// Device address of rank `rank`'s copy, as the table holds it.
    pub fn peer_base(&self, rank: usize) -> Option<u64> {
        self.peer_bases.get(rank).copied()
    }

    /// Host copy of the table.
    pub fn peer_bases(&self) -> &[u64] {
        &self.peer_bases
    }

    /// Device address of the table (in this rank's device memory).
    pub fn table(&self) -> u64 {
        self.table
    }

    /// The ranks whose copies this rank's device can access.
    pub fn reachable(&self) -> &PeerMask {
        &self.reachable
    }

    /// `addr` in this rank's copy, translated into rank `peer`'s copy.
    pub fn translate(&self, addr: u64, peer: usize) -> Option<u64> {
        let offset = addr.checked_sub(self.base)?;
        if offset >= self.bytes as u64 {
            return None;
        }
        self.peer_base(peer)?.checked_add(offset)
    }
}

/// The map among `live` (keyed by each allocation's base address) whose copy holds `addr`,
/// or [`Error::NotSymmetric`] naming `provider`.
pub(crate) fn live_map_at<V>(
    live: &std::collections::BTreeMap<u64, V>,
    addr: u64,
    provider: &'static str,
    map: impl Fn(&V) -> &SymmetricAddressMap,
) -> Result<SymmetricAddressMap> {
    live.range(..=addr)
        .next_back()
        .map(|(_, v)| map(v))
        .filter(|m| m.contains(addr))
        .cloned()
        .ok_or(Error::NotSymmetric { provider, addr })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(local: usize, world: usize, table: Vec<u64>) -> Result<SymmetricAddressMap> {
        let base = table.get(local).copied().unwrap_or(0x1000);
        SymmetricAddressMap::new(
            local,
            world,
            base,
            512,
            table,
            0xdead_0000,
            PeerMask::all(world),
        )
    }

    #[test]
    fn accepts_a_consistent_map_and_translates() {
        let m = map(1, 3, vec![0x1000, 0x9000, 0x5000]).unwrap();
        assert_eq!(m.translate(0x9010, 0), Some(0x1010));
        assert_eq!(m.translate(0x9010, 2), Some(0x5010));
        assert_eq!(m.translate(0x9000 + 512, 2), None);
        assert_eq!(m.translate(0x8fff, 2), None);
        assert_eq!(m.translate(0x9000, 3), None);
    }

    #[test]
    fn table_length_must_equal_world_size() {
        let err = map(0, 4, vec![0x1000, 0x2000, 0x3000]).unwrap_err();
        assert!(
            err.to_string()
                .contains("3 entries but the world has 4 ranks"),
            "{err}"
        );
        assert!(map(0, 2, vec![0x1000, 0x2000, 0x3000]).is_err());
    }

    #[test]
    fn local_entry_must_be_the_base() {
        let err = SymmetricAddressMap::new(
            1,
            2,
            0x2000,
            64,
            vec![0x1000, 0x2100],
            0xdead_0000,
            PeerMask::all(2),
        )
        .unwrap_err();
        assert!(err.to_string().contains("is not the local base"), "{err}");
    }

    #[test]
    fn other_invariants() {
        assert!(
            map(2, 2, vec![0x1000, 0x2000]).is_err(),
            "local rank outside"
        );
        assert!(map(0, 2, vec![0x1000, 0]).is_err(), "null peer base");
        let unreachable = PeerMask::from_fn(2, |r| r == 0);
        let m = SymmetricAddressMap::new(0, 2, 0x1000, 8, vec![0x1000, 0], 1, unreachable);
        assert_eq!(
            m.unwrap().reachable().missing(),
            vec![1],
            "an unmapped peer is marked"
        );
        let t = vec![0x1000, 0x2000];
        assert!(SymmetricAddressMap::new(0, 2, 0x1000, 8, t.clone(), 0, PeerMask::all(2)).is_err());
        assert!(SymmetricAddressMap::new(0, 2, 0x1000, 8, t.clone(), 1, PeerMask::all(3)).is_err());
        assert!(SymmetricAddressMap::new(0, 2, 0x1000, 8, t, 1, PeerMask::none(2)).is_err());
    }
}
