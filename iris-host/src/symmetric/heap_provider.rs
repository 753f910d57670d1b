//! The heap provider: one device allocation per rank (its heap), sub-allocated by a
//! [`HeapAllocator`] that every rank drives with the same calls in the same order, so an
//! allocation sits at the same offset in every rank's heap. Ranks as threads share their
//! heaps' addresses; ranks as processes export their heap once when the world starts,
//! and every rank maps every other rank's.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::{
    peer_table, AllocationRequest, HeapAllocator, HeapError, PeerMask, SymmetricAddressMap,
    SymmetricProvider,
};
use crate::module::DeviceSlot;
use crate::rank::RankCore;
use crate::transport::{Collective, Reader, Writer};
use iris_driver::sync::lock;
use iris_driver::Stream;
use iris_driver::{Error, Result};

/// One rank's heap as this process sees it: where it is mapped, on which device.
#[derive(Clone, Debug)]
pub struct RankHeap {
    /// The device it is mapped on (for ranks as processes: this process's device).
    pub device: Arc<DeviceSlot>,
    /// Device address of its first byte in this process; 0 when it could not be mapped
    /// (the rank is then unreachable).
    pub base: u64,
    /// Its size.
    pub bytes: usize,
}

/// What one rank proposes in the collective allocation step.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Proposal {
    bytes: usize,
    align: usize,
    type_name: String,
    offset: Result<usize, HeapError>,
}

impl Proposal {
    fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        w.usize(self.bytes).usize(self.align).str(&self.type_name);
        match &self.offset {
            Ok(offset) => w.u8(0).usize(*offset),
            Err(HeapError::Exhausted {
                requested,
                free,
                largest,
                heap,
            }) => w
                .u8(1)
                .usize(*requested)
                .usize(*free)
                .usize(*largest)
                .usize(*heap),
            Err(HeapError::BadAlignment(align)) => w.u8(2).usize(*align),
            Err(HeapError::InvalidFree { offset, .. }) => w.u8(3).usize(*offset),
        };
        w.finish()
    }

    fn decode(bytes: &[u8]) -> Result<Proposal> {
        let mut r = Reader::new("symmetric allocation proposal", bytes);
        let (bytes, align, type_name) = (r.usize()?, r.usize()?, r.string()?);
        let offset = match r.u8()? {
            0 => Ok(r.usize()?),
            1 => Err(HeapError::Exhausted {
                requested: r.usize()?,
                free: r.usize()?,
                largest: r.usize()?,
                heap: r.usize()?,
            }),
            2 => Err(HeapError::BadAlignment(r.usize()?)),
            _ => Err(HeapError::InvalidFree {
                offset: r.usize()?,
                reason: "not a live range",
            }),
        };
        r.end()?;
        Ok(Proposal {
            bytes,
            align,
            type_name,
            offset,
        })
    }

    fn same_request(&self, other: &Proposal) -> bool {
        (self.bytes, self.align, &self.type_name) == (other.bytes, other.align, &other.type_name)
    }
}

/// Symmetric memory from one heap per rank.
pub struct HeapProvider {
    /// Keeps the rank's fault record and abort word (named in the tables) alive.
    _core: Arc<RankCore>,
    rank: usize,
    heaps: Arc<[RankHeap]>,
    reachable: PeerMask,
    collective: Arc<dyn Collective>,
    stream: Arc<dyn Stream>,
    timeout: Duration,
    /// What every table's header says (the context's fault record, abort word, ...).
    header: crate::rank::TableHeader,
    allocator: Mutex<HeapAllocator>,
    /// The maps handed out, by offset.
    live: Mutex<BTreeMap<usize, SymmetricAddressMap>>,
}

impl HeapProvider {
    /// The provider of the rank of `core`, given every rank's heap as mapped in this
    /// process (`heaps[rank]` is its own). It collects through the rank's collective,
    /// orders on its stream, and writes its context's table header into every table.
    pub fn new(core: Arc<RankCore>, heaps: Arc<[RankHeap]>) -> Result<Self> {
        let (rank, reachable) = (core.rank(), core.reachable().clone());
        let (collective, stream) = (Arc::clone(core.collective()), Arc::clone(core.own_stream()));
        let header = core.table_header();
        let own = heaps.get(rank).ok_or_else(|| {
            Error::InvalidConfig(format!("rank {rank} has no heap among {}", heaps.len()))
        })?;
        if heaps.len() != collective.size() {
            return Err(Error::InvalidConfig(format!(
                "{} heaps for a world of {} ranks",
                heaps.len(),
                collective.size()
            )));
        }
        let allocator = Mutex::new(HeapAllocator::new(own.bytes));
        let timeout = collective.timeout();
        // A heap that could not be mapped is unreachable.
        let reachable = PeerMask::from_fn(heaps.len(), |r| {
            reachable.contains(r) && heaps.get(r).is_some_and(|h| h.base != 0)
        });
        Ok(Self {
            _core: core,
            rank,
            heaps,
            reachable,
            collective,
            stream,
            timeout,
            header,
            allocator,
            live: Mutex::new(BTreeMap::new()),
        })
    }

    fn own(&self) -> &RankHeap {
        &self.heaps[self.rank]
    }

    /// Free bytes in this rank's heap.
    pub fn free_bytes(&self) -> usize {
        lock(&self.allocator).free_bytes()
    }

    /// A copy of this rank's allocator state (for inspection).
    pub fn allocator(&self) -> HeapAllocator {
        lock(&self.allocator).clone()
    }

    fn heap_error(&self, rank: usize, err: &HeapError) -> Error {
        match *err {
            HeapError::Exhausted {
                requested,
                free,
                largest,
                heap,
            } => Error::HeapExhausted {
                rank,
                requested,
                free,
                largest,
                heap,
            },
            HeapError::InvalidFree { offset, reason } => Error::InvalidFree {
                rank,
                offset,
                reason: reason.into(),
            },
            HeapError::BadAlignment(align) => Error::InvalidConfig(format!(
                "symmetric allocation alignment {align} is not a power of two"
            )),
        }
    }

    /// Agrees with every rank on the request and the offset; frees the tentative
    /// allocation on any disagreement.
    fn agree(&self, request: &AllocationRequest) -> Result<usize> {
        let offset = lock(&self.allocator).alloc(request.bytes, request.align);
        let mine = Proposal {
            bytes: request.bytes,
            align: request.align,
            type_name: request.type_name.to_string(),
            offset: offset.clone(),
        };
        let proposals = self
            .collective
            .exchange(self.rank, "symmetric allocation", mine.encode(), Vec::new())
            .and_then(|all| all.iter().map(|c| Proposal::decode(&c.bytes)).collect());
        let undo = || {
            if let Ok(off) = offset {
                let _ = lock(&self.allocator).free(off);
            }
        };
        let proposals: Vec<Proposal> = match proposals {
            Ok(p) => p,
            Err(err) => {
                undo();
                return Err(err);
            }
        };
        if let Err(err) = check_proposals(&proposals).map_err(|e| e.into_error(self)) {
            undo();
            return Err(err);
        }
        offset.map_err(|e| self.heap_error(self.rank, &e))
    }

    fn upload_table(&self, bases: &[u64]) -> Result<u64> {
        peer_table::upload(self.own().device.device(), bases, self.header)
    }
}

enum Disagreement {
    Requests(String),
    Exhausted(usize, HeapError),
    Offsets(String),
}

impl Disagreement {
    fn into_error(self, provider: &HeapProvider) -> Error {
        match self {
            Disagreement::Requests(details) => Error::SymmetryMismatch {
                op: "symmetric allocation".into(),
                details,
            },
            Disagreement::Exhausted(rank, err) => provider.heap_error(rank, &err),
            Disagreement::Offsets(details) => Error::SymmetryMismatch {
                op: "symmetric allocation".into(),
                details,
            },
        }
    }
}

fn check_proposals(proposals: &[Proposal]) -> Result<(), Disagreement> {
    let Some(first) = proposals.first() else {
        return Ok(());
    };
    if proposals.iter().any(|p| !p.same_request(first)) {
        let asked: Vec<String> = proposals
            .iter()
            .enumerate()
            .map(|(r, p)| {
                format!(
                    "rank {r} asked for {} bytes of {} (align {})",
                    p.bytes, p.type_name, p.align
                )
            })
            .collect();
        return Err(Disagreement::Requests(asked.join(", ")));
    }
    if let Some((rank, err)) = proposals
        .iter()
        .enumerate()
        .find_map(|(r, p)| p.offset.as_ref().err().map(|e| (r, e.clone())))
    {
        return Err(Disagreement::Exhausted(rank, err));
    }
    if proposals.iter().any(|p| p.offset != first.offset) {
        let offsets: Vec<String> = proposals
            .iter()
            .enumerate()
            .map(|(r, p)| format!("rank {r} at offset {:?}", p.offset.as_ref().ok()))
            .collect();
        return Err(Disagreement::Offsets(format!(
            "the heaps have diverged ({}): free symmetric buffers in the same order on every rank",
            offsets.join(", ")
        )));
    }
    Ok(())
}

impl SymmetricProvider for HeapProvider {
    fn name(&self) -> &'static str {
        "heap"
    }

    fn allocate(&self, request: &AllocationRequest) -> Result<SymmetricAddressMap> {
        let _span = tracing::debug_span!(
            "symmetric_alloc",
            rank = self.rank,
            bytes = request.bytes,
            ty = request.type_name
        )
        .entered();
        let offset = self.agree(request)?;
        let len = lock(&self.allocator)
            .len_of(offset)
            .unwrap_or(request.bytes);
        let release = || {
            let _ = lock(&self.allocator).free(offset);
        };
        let bases: Vec<u64> = self
            .heaps
            .iter()
            .map(|h| {
                if h.base == 0 {
                    0
                } else {
                    h.base + offset as u64
                }
            })
            .collect();
        let table = match self.upload_table(&bases) {
            Ok(t) => t,
            Err(err) => {
                release();
                return Err(err);
            }
        };
        let base = self.own().base + offset as u64;
        SymmetricAddressMap::new(
            self.rank,
            self.heaps.len(),
            base,
            len,
            bases,
            table,
            self.reachable.clone(),
        )
        .inspect(|map| {
            lock(&self.live).insert(offset, map.clone());
        })
        .inspect_err(|_| {
            release();
            // SAFETY: the table was never handed out.
            let _ = unsafe { peer_table::free(self.own().device.device(), table) };
        })
    }

    fn map_of(&self, addr: u64) -> Result<SymmetricAddressMap> {
        let own = self.own();
        let not_ours = || Error::NotSymmetric {
            provider: "heap",
            addr,
        };
        let offset = addr
            .checked_sub(own.base)
            .filter(|&o| o < own.bytes as u64)
            .ok_or_else(not_ours)? as usize;
        let live = lock(&self.live);
        let (_, map) = live.range(..=offset).next_back().ok_or_else(not_ours)?;
        if map.contains(addr) {
            Ok(map.clone())
        } else {
            Err(not_ours())
        }
    }

    fn free(&self, map: &SymmetricAddressMap) -> Result<()> {
        let own = self.own();
        let offset = map
            .base()
            .checked_sub(own.base)
            .filter(|&o| map.local_rank() == self.rank && o < own.bytes as u64)
            .ok_or_else(|| Error::InvalidFree {
                rank: self.rank,
                offset: 0,
                reason: format!(
                    "address {:#x} (rank {}) is not in this rank's heap",
                    map.base(),
                    map.local_rank()
                ),
            })? as usize;
        if lock(&self.live)
            .get(&offset)
            .is_some_and(|live| live.table() != map.table())
        {
            return Err(Error::InvalidFree {
                rank: self.rank,
                offset,
                reason: "the map's table is not the one this provider handed out for that offset (a map of another allocation)".into(),
            });
        }
        // Queued kernels may still read the table or the range.
        self.stream.synchronize(self.timeout)?;
        lock(&self.allocator)
            .free(offset)
            .map_err(|e| self.heap_error(self.rank, &e))?;
        lock(&self.live).remove(&offset);
        // SAFETY: the table belongs to this allocation, whose work has finished.
        unsafe { peer_table::free(own.device.device(), map.table()) }
    }
}

impl std::fmt::Debug for HeapProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HeapProvider")
            .field("rank", &self.rank)
            .field("heap", self.own())
            .field("free_bytes", &self.free_bytes())
            .finish()
    }
}
