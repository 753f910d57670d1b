//! The external provider: symmetric memory another system allocated and exchanged (for
//! example a PyTorch symmetric tensor: its local pointer and its `buffer_ptrs`), adopted
//! as it is. The table is validated (one entry per rank, the local entry is the local
//! pointer) and uploaded; nothing is exchanged again, and the memory is never freed
//! here: freeing an adopted allocation releases only its table.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::{peer_table, AllocationRequest, PeerMask, SymmetricAddressMap, SymmetricProvider};
use crate::module::DeviceSlot;
use crate::rank::RankCore;
use crate::transport::Collective;
use iris_driver::sync::lock;
use iris_driver::Stream;
use iris_driver::{Error, Result};

/// Adopts symmetric memory that another system set up.
pub struct ExternalProvider {
    /// Keeps the rank's fault record and abort word (named in the tables) alive.
    _core: Arc<RankCore>,
    rank: usize,
    world_size: usize,
    /// The node of each rank (ranks of other nodes are unreachable).
    collective: Arc<dyn Collective>,
    device: Arc<DeviceSlot>,
    stream: Arc<dyn Stream>,
    timeout: Duration,
    /// What every table's header says (the context's fault record, abort word, ...).
    header: crate::rank::TableHeader,
    /// By table address (the same memory may be adopted twice).
    live: Mutex<BTreeMap<u64, SymmetricAddressMap>>,
}

impl ExternalProvider {
    /// The provider of the rank of `core`, uploading tables to its device in order on its
    /// stream, each with its context's table header.
    pub fn new(core: Arc<RankCore>) -> Self {
        let (rank, world_size, timeout) = (core.rank(), core.world_size(), core.timeout());
        let (device, stream) = (
            Arc::clone(core.device_slot()),
            Arc::clone(core.own_stream()),
        );
        let header = core.table_header();
        let collective = Arc::clone(core.collective());
        Self {
            _core: core,
            rank,
            world_size,
            collective,
            device,
            stream,
            timeout,
            header,
            live: Mutex::new(BTreeMap::new()),
        }
    }

    /// Adopts an allocation of `bytes` bytes per rank whose copy on this rank is at
    /// `local` and on rank `r` at `peers[r]` (device addresses valid in this process; a
    /// null entry marks a peer that could not be mapped: it is unreachable; so is every
    /// rank of another node, whatever its entry). Local: no
    /// other rank takes part. Errors with [`Error::InvalidAddressMap`] when
    /// `peers.len()` is not the world size or `peers[rank] != local`.
    pub fn adopt(&self, local: u64, peers: &[u64], bytes: usize) -> Result<SymmetricAddressMap> {
        if peers.len() != self.world_size {
            return Err(Error::InvalidAddressMap(format!(
                "the external table has {} entries but the world has {} ranks",
                peers.len(),
                self.world_size
            )));
        }
        if peers[self.rank] != local || local == 0 {
            return Err(Error::InvalidAddressMap(format!(
                "the external table's entry for rank {} is {:#x}, the local pointer is {local:#x}",
                self.rank, peers[self.rank]
            )));
        }
        let node = self.collective.node_of(self.rank);
        let reachable = PeerMask::from_fn(self.world_size, |r| {
            peers[r] != 0 && self.collective.node_of(r) == node
        });
        let table = self.upload_table(peers)?;
        let map = SymmetricAddressMap::new(
            self.rank,
            self.world_size,
            local,
            bytes,
            peers.to_vec(),
            table,
            reachable,
        );
        match map {
            Ok(map) => {
                lock(&self.live).insert(table, map.clone());
                Ok(map)
            }
            Err(err) => {
                // SAFETY: the table was never handed out.
                let _ = unsafe { peer_table::free(self.device.device(), table) };
                Err(err)
            }
        }
    }

    fn upload_table(&self, bases: &[u64]) -> Result<u64> {
        peer_table::upload(self.device.device(), bases, self.header)
    }
}

impl SymmetricProvider for ExternalProvider {
    fn name(&self) -> &'static str {
        "external"
    }

    fn allocate(&self, request: &AllocationRequest) -> Result<SymmetricAddressMap> {
        Err(Error::InvalidConfig(format!(
            "the external provider allocates nothing ({} bytes of {} asked): adopt memory another system allocated with Iris::adopt_external",
            request.bytes, request.type_name
        )))
    }

    fn map_of(&self, addr: u64) -> Result<SymmetricAddressMap> {
        lock(&self.live)
            .values()
            .find(|m| m.contains(addr))
            .cloned()
            .ok_or(Error::NotSymmetric {
                provider: "external",
                addr,
            })
    }

    fn free(&self, map: &SymmetricAddressMap) -> Result<()> {
        let mut live = lock(&self.live);
        if live
            .get(&map.table())
            .is_none_or(|m| m.base() != map.base())
        {
            return Err(Error::InvalidFree {
                rank: self.rank,
                offset: 0,
                reason: format!(
                    "the external provider adopted no allocation at {:#x} with table {:#x} (a double free, or a map of another provider)",
                    map.base(),
                    map.table()
                ),
            });
        }
        // Queued kernels may still read the table.
        self.stream.synchronize(self.timeout)?;
        live.remove(&map.table());
        drop(live);
        // SAFETY: the rank's work has finished; the table belongs to this adoption. The
        // memory itself belongs to the system that allocated it.
        unsafe { peer_table::free(self.device.device(), map.table()) }
    }
}

impl std::fmt::Debug for ExternalProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExternalProvider")
            .field("rank", &self.rank)
            .field("live", &lock(&self.live).len())
            .finish_non_exhaustive()
    }
}
