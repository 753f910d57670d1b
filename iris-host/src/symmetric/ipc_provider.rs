//! The per-allocation IPC provider: each allocation is exportable device memory of its
//! own, exported as a file descriptor, exchanged with every rank and mapped by each (as
//! PyTorch symmetric memory's default backend does). Tables are per allocation: two
//! allocations' peers sit at unrelated addresses.

use std::collections::BTreeMap;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::{
    live_map_at, peer_table, AllocationRequest, PeerMask, SymmetricAddressMap, SymmetricProvider,
};
use crate::module::DeviceSlot;
use crate::rank::RankCore;
use crate::transport::{decode_status, encode_status, Collective, Reader, Writer};
use iris_driver::sync::lock;
use iris_driver::{Error, Result};
use iris_driver::{MemoryKind, Stream};

/// One live allocation: this rank's map, and the peers' copies it mapped.
struct Allocation {
    map: SymmetricAddressMap,
    imports: Vec<u64>,
}

/// Symmetric memory exported and mapped allocation by allocation.
pub struct IpcProvider {
    /// Keeps the rank's fault record and abort word (named in the tables) alive.
    _core: Arc<RankCore>,
    rank: usize,
    device: Arc<DeviceSlot>,
    reachable: PeerMask,
    collective: Arc<dyn Collective>,
    stream: Arc<dyn Stream>,
    timeout: Duration,
    /// What every table's header says (the context's fault record, abort word, ...).
    header: crate::rank::TableHeader,
    /// By this rank's base address.
    live: Mutex<BTreeMap<u64, Allocation>>,
}

/// What one rank contributes to an IPC allocation.
struct Offer {
    bytes: usize,
    align: usize,
    type_name: String,
    status: Result<(), String>,
}

impl Offer {
    fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.usize(self.bytes).usize(self.align).str(&self.type_name);
        encode_status(&mut w, &self.status);
        w.finish()
    }

    fn decode(bytes: &[u8]) -> Result<Offer> {
        let mut r = Reader::new("ipc allocation offer", bytes);
        let offer = Offer {
            bytes: r.usize()?,
            align: r.usize()?,
            type_name: r.string()?,
            status: decode_status(&mut r)?,
        };
        r.end()?;
        Ok(offer)
    }
}

impl IpcProvider {
    /// The provider of the rank of `core`: it maps the peers its device can reach (a peer
    /// whose memory cannot be mapped is dropped from an allocation's mask), collects
    /// through the rank's collective, orders on its stream, and names its context's error
    /// word in every table's header.
    pub fn new(core: Arc<RankCore>) -> Self {
        let (rank, reachable) = (core.rank(), core.reachable().clone());
        let (collective, stream) = (Arc::clone(core.collective()), Arc::clone(core.own_stream()));
        let (device, header) = (Arc::clone(core.device_slot()), core.table_header());
        let timeout = collective.timeout();
        Self {
            _core: core,
            rank,
            device,
            reachable,
            collective,
            stream,
            timeout,
            header,
            live: Mutex::new(BTreeMap::new()),
        }
    }

    /// How many allocations are live.
    pub fn live_allocations(&self) -> usize {
        lock(&self.live).len()
    }

    /// Allocates and exports this rank's copy.
    fn offer(&self, request: &AllocationRequest) -> Result<(u64, OwnedFd)> {
        let device = self.device.device();
        let addr = device.alloc_exportable(request.bytes.max(1), MemoryKind::Symmetric)?;
        let exported = if addr % request.align.max(1) as u64 != 0 {
            Err(Error::InvalidConfig(format!(
                "exportable memory at {addr:#x} is not aligned to {}",
                request.align
            )))
        } else {
            device.export_fd(addr)
        };
        match exported {
            Ok(fd) => Ok((addr, fd)),
            Err(err) => {
                // SAFETY: nothing has seen `addr`.
                let _ = unsafe { device.free_shared(addr) };
                Err(err)
            }
        }
    }

    fn release(&self, own: Option<u64>, imports: &[u64]) {
        let device = self.device.device();
        for &addr in imports.iter().chain(own.iter()) {
            // SAFETY: nothing uses these mappings (never handed out, or the rank's
            // stream was synchronized).
            if let Err(err) = unsafe { device.free_shared(addr) } {
                tracing::warn!(rank = self.rank, %err, "releasing IPC memory");
            }
        }
    }

    fn upload_table(&self, bases: &[u64]) -> Result<u64> {
        peer_table::upload(self.device.device(), bases, self.header)
    }
}

impl SymmetricProvider for IpcProvider {
    fn name(&self) -> &'static str {
        "ipc"
    }

    fn allocate(&self, request: &AllocationRequest) -> Result<SymmetricAddressMap> {
        let _span = tracing::debug_span!(
            "ipc_alloc",
            rank = self.rank,
            bytes = request.bytes,
            ty = request.type_name
        )
        .entered();
        let offered = self.offer(request);
        let (own, fds) = match &offered {
            Ok((addr, fd)) => {
                let dup = fd.try_clone().map_err(|source| Error::Io {
                    what: "duplicating an exported descriptor".into(),
                    source,
                });
                match dup {
                    Ok(dup) => (Some(*addr), vec![dup]),
                    Err(err) => {
                        self.release(Some(*addr), &[]);
                        return Err(err);
                    }
                }
            }
            Err(_) => (None, Vec::new()),
        };
        let offer = Offer {
            bytes: request.bytes,
            align: request.align,
            type_name: request.type_name.to_string(),
            status: offered.as_ref().map(drop).map_err(ToString::to_string),
        };
        let gathered = self
            .collective
            .exchange(self.rank, "ipc allocation", offer.encode(), fds);
        let fail = |err: Error| {
            self.release(own, &[]);
            Err(err)
        };
        let contributions = match gathered {
            Ok(c) => c,
            Err(err) => return fail(err),
        };
        let offers: Vec<Offer> = match contributions
            .iter()
            .map(|c| Offer::decode(&c.bytes))
            .collect()
        {
            Ok(o) => o,
            Err(err) => return fail(err),
        };
        if offers.iter().any(|o| {
            (o.bytes, o.align, &o.type_name) != (offer.bytes, offer.align, &offer.type_name)
        }) {
            let asked: Vec<String> = offers
                .iter()
                .enumerate()
                .map(|(r, o)| {
                    format!(
                        "rank {r} asked for {} bytes of {} (align {})",
                        o.bytes, o.type_name, o.align
                    )
                })
                .collect();
            return fail(Error::SymmetryMismatch {
                op: "ipc allocation".into(),
                details: asked.join(", "),
            });
        }
        if let Err(err) = offered {
            return fail(err);
        }
        if let Some((peer, reason)) = offers
            .iter()
            .enumerate()
            .find_map(|(r, o)| o.status.as_ref().err().map(|e| (r, e.clone())))
        {
            return fail(Error::PeerFailed {
                rank: self.rank,
                what: "ipc allocation".into(),
                peer,
                reason: format!("could not allocate its copy: {reason}"),
            });
        }
        let Some(base) = own else {
            return fail(Error::InvalidConfig("no local copy".into()));
        };
        let device = self.device.device();
        let mut bases = vec![0u64; offers.len()];
        let mut imports = Vec::new();
        let mut reachable = PeerMask::none(offers.len());
        for (peer, contribution) in contributions.iter().enumerate() {
            if peer == self.rank {
                bases[peer] = base;
                reachable.insert(peer);
                continue;
            }
            if !self.reachable.contains(peer) {
                continue;
            }
            let Some(fd) = contribution.fds.first() else {
                continue;
            };
            match device.import_fd(fd.as_fd(), request.bytes.max(1), MemoryKind::Symmetric) {
                Ok(addr) => {
                    bases[peer] = addr;
                    imports.push(addr);
                    reachable.insert(peer);
                }
                Err(err) => {
                    tracing::warn!(rank = self.rank, peer, %err, "a peer's copy cannot be mapped; it is unreachable");
                }
            }
        }
        drop(contributions);
        let table = match self.upload_table(&bases) {
            Ok(t) => t,
            Err(err) => {
                self.release(Some(base), &imports);
                return Err(err);
            }
        };
        let map = SymmetricAddressMap::new(
            self.rank,
            offers.len(),
            base,
            request.bytes,
            bases,
            table,
            reachable,
        );
        match map {
            Ok(map) => {
                lock(&self.live).insert(
                    base,
                    Allocation {
                        map: map.clone(),
                        imports,
                    },
                );
                Ok(map)
            }
            Err(err) => {
                self.release(Some(base), &imports);
                // SAFETY: the table was never handed out.
                let _ = unsafe { peer_table::free(device, table) };
                Err(err)
            }
        }
    }

    fn map_of(&self, addr: u64) -> Result<SymmetricAddressMap> {
        live_map_at(&lock(&self.live), addr, "ipc", |a| &a.map)
    }

    fn free(&self, map: &SymmetricAddressMap) -> Result<()> {
        let mut live = lock(&self.live);
        let found = live
            .get(&map.base())
            .is_some_and(|a| a.map.table() == map.table() && map.local_rank() == self.rank);
        if !found {
            return Err(Error::InvalidFree {
                rank: self.rank,
                offset: 0,
                reason: format!(
                    "the ipc provider has no live allocation at {:#x} with table {:#x} (a double free, or a map of another provider)",
                    map.base(),
                    map.table()
                ),
            });
        }
        // Queued kernels may still use the memory or the table.
        self.stream.synchronize(self.timeout)?;
        let Some(allocation) = live.remove(&map.base()) else {
            return Ok(());
        };
        drop(live);
        self.release(Some(allocation.map.base()), &allocation.imports);
        // SAFETY: the rank's work has finished; the table belongs to this allocation.
        unsafe { peer_table::free(self.device.device(), allocation.map.table()) }
    }
}

impl Drop for IpcProvider {
    fn drop(&mut self) {
        // Allocations still live when the context goes (buffers forgotten): their
        // mappings go with the context; leaking them if the device work did not finish.
        let live = std::mem::take(&mut *lock(&self.live));
        if live.is_empty() {
            return;
        }
        if let Err(err) = self.stream.synchronize(self.timeout) {
            tracing::warn!(rank = self.rank, %err, "leaking IPC allocations: device work did not finish");
            return;
        }
        for allocation in live.into_values() {
            self.release(Some(allocation.map.base()), &allocation.imports);
            // SAFETY: the rank's work has finished.
            let _ = unsafe { peer_table::free(self.device.device(), allocation.map.table()) };
        }
    }
}

impl std::fmt::Debug for IpcProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IpcProvider")
            .field("rank", &self.rank)
            .field("live", &self.live_allocations())
            .finish_non_exhaustive()
    }
}
