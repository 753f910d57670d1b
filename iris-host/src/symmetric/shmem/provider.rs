//! The SHMEM provider: symmetric memory from NVSHMEM's or rocSHMEM's symmetric heap. The
//! engine allocates (`nvshmem_malloc`, collective), and tells each rank where it mapped
//! every peer's copy (`nvshmem_ptr`; NULL for a peer it cannot address directly, such as
//! one across the network: that peer is outside the allocation's reachable mask).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};

use super::runtime::{runtime, ShmemBootstrap, ShmemRuntime};
use crate::module::DeviceSlot;
use crate::rank::RankCore;
use crate::symmetric::{
    live_map_at, peer_table, AllocationRequest, PeerMask, SymmetricAddressMap, SymmetricProvider,
};
use crate::transport::{Collective, Reader, Writer};
use iris_driver::shmem::{LibrarySearch, ShmemEngine};
use iris_driver::sync::lock;
use iris_driver::{Error, Result};

/// Symmetric memory from a SHMEM engine (NVSHMEM on `cuda`, rocSHMEM on `hip`).
///
/// The engine starts on the first allocation (collective). Allocation and free are both
/// collective, as the engines require: every rank allocates and frees the same
/// allocations in the same order. Both are checked over iris's rendezvous first (bounded
/// by the world's timeout), so a rank that asks for a different size, or never comes, is
/// an error naming it instead of a hang inside the engine.
pub struct ShmemProvider {
    /// Keeps the rank's fault record and abort word (named in the tables) alive.
    _core: Arc<RankCore>,
    rank: usize,
    world_size: usize,
    /// How many ranks share this process (the engines allow one).
    ranks_in_process: usize,
    device: Arc<DeviceSlot>,
    collective: Arc<dyn Collective>,
    runtime: OnceLock<Arc<ShmemRuntime>>,
    /// Serialises the engine's start among this rank's callers.
    starting: Mutex<()>,
    /// By this rank's base address.
    live: Mutex<BTreeMap<u64, SymmetricAddressMap>>,
    /// What every table's header says (the context's fault record, abort word, ...).
    header: crate::rank::TableHeader,
}

impl ShmemProvider {
    /// The provider of the rank of `core` (whose process holds one rank, or all of them
    /// as threads), collecting through the rank's collective; its tables carry its context's
    /// table header. Nothing is loaded until the first
    /// allocation.
    pub fn new(core: Arc<RankCore>) -> Self {
        let (rank, world_size) = (core.rank(), core.world_size());
        let ranks_in_process = if core.is_process_world() {
            1
        } else {
            world_size
        };
        let collective = Arc::clone(core.collective());
        let (device, header) = (Arc::clone(core.device_slot()), core.table_header());
        Self {
            _core: core,
            rank,
            world_size,
            ranks_in_process,
            device,
            collective,
            runtime: OnceLock::new(),
            starting: Mutex::new(()),
            live: Mutex::new(BTreeMap::new()),
            header,
        }
    }

    /// The engine this provider uses on its device's backend, or why there is none.
    pub fn engine(&self) -> Result<ShmemEngine> {
        let backend = self.device.device().info().backend;
        ShmemEngine::for_backend(backend).ok_or_else(|| Error::ShmemUnavailable {
            engine: "SHMEM",
            reason: format!(
                "no SHMEM engine runs on the {backend} backend (NVSHMEM needs cuda, rocSHMEM needs hip)"
            ),
        })
    }

    /// Whether the engine can serve this rank, without starting it: the backend has an
    /// engine and this process holds one rank. (Whether its library loads is known only
    /// at the first allocation.)
    pub fn check_usable(&self) -> Result<ShmemEngine> {
        let engine = self.engine()?;
        if self.ranks_in_process != 1 {
            return Err(Error::ShmemUnavailable {
                engine: engine.name(),
                reason: format!(
                    "it holds one PE per process, and this process runs {} ranks as threads: start one process per rank (iris-run, torchrun, mpirun)",
                    self.ranks_in_process
                ),
            });
        }
        Ok(engine)
    }

    /// The running engine, started on first use (collective).
    fn started(&self) -> Result<&Arc<ShmemRuntime>> {
        if let Some(rt) = self.runtime.get() {
            return Ok(rt);
        }
        let _guard = lock(&self.starting);
        if let Some(rt) = self.runtime.get() {
            return Ok(rt);
        }
        let engine = self.check_usable()?;
        self.device.device().make_current()?;
        let bootstrap = ShmemBootstrap::from_env()?;
        let rt = runtime(
            engine,
            self.rank,
            self.world_size,
            bootstrap,
            &LibrarySearch::from_env(engine),
            &*self.collective,
        )?;
        Ok(self.runtime.get_or_init(|| rt))
    }

    /// Leaves a started engine running when the context ends with its work unfinished (a
    /// kernel may still use the engine's memory): this device stays open until the
    /// process exits.
    pub(crate) fn abandon(&self) {
        if self.runtime.get().is_some() {
            tracing::warn!(
                rank = self.rank,
                "the SHMEM engine is left running until the process exits"
            );
            std::mem::forget(Arc::clone(&self.device));
        }
    }

    /// Ends the engine when the context ends: once every rank is here (bounded by the
    /// world's timeout), each finalizes it while its device is still open. When a rank
    /// does not come, the engine is left running and this device stays open until the
    /// process exits (the engine's threads still use it).
    pub(crate) fn finish(&self) {
        let Some(rt) = self.runtime.get() else {
            return;
        };
        let what = format!("{} finalize", rt.library.engine().name());
        let met = self.collective.barrier(self.rank, &what);
        match met.and_then(|()| self.device.device().make_current()) {
            Ok(()) => rt.finalize(),
            Err(err) => {
                tracing::warn!(rank = self.rank, %err, "the SHMEM engine is left running until the process exits");
                std::mem::forget(Arc::clone(&self.device));
            }
        }
    }

    /// Checks over iris's rendezvous that every rank asks for the same allocation.
    fn agree(&self, engine: ShmemEngine, request: &AllocationRequest) -> Result<()> {
        let mut w = Writer::new();
        w.usize(request.bytes)
            .usize(request.align)
            .str(request.type_name);
        let what = format!("{} allocation", engine.name());
        let asked = self
            .collective
            .exchange(self.rank, &what, w.finish(), Vec::new())?;
        let mut all = Vec::new();
        for c in &asked {
            let mut r = Reader::new("shmem allocation request", &c.bytes);
            let got = (r.usize()?, r.usize()?, r.string()?);
            r.end()?;
            all.push(got);
        }
        let mine = (request.bytes, request.align, request.type_name.to_string());
        if all.iter().any(|a| *a != mine) {
            let details: Vec<String> = all
                .iter()
                .enumerate()
                .map(|(r, (b, a, t))| format!("rank {r} asked for {b} bytes of {t} (align {a})"))
                .collect();
            return Err(Error::SymmetryMismatch {
                op: what,
                details: details.join(", "),
            });
        }
        Ok(())
    }
}

impl SymmetricProvider for ShmemProvider {
    fn name(&self) -> &'static str {
        "shmem"
    }

    fn allocate(&self, request: &AllocationRequest) -> Result<SymmetricAddressMap> {
        let rt = self.started()?;
        let engine = rt.library.engine();
        let _span = tracing::debug_span!(
            "shmem_alloc",
            rank = self.rank,
            bytes = request.bytes,
            ty = request.type_name
        )
        .entered();
        self.agree(engine, request)?;
        let lib = &rt.library;
        let names = engine.entry_points();
        self.device.device().make_current()?;
        // SAFETY: the engine is started; every rank makes this call with the same size
        // (checked just above).
        let local = unsafe { lib.malloc(request.bytes.max(1)) };
        let info = self.device.device().info();
        if local == 0 {
            return Err(Error::OutOfMemory {
                backend: info.backend,
                ordinal: info.ordinal,
                bytes: request.bytes,
                reason: format!(
                    "{} returned NULL: the engine's symmetric heap is full (NVSHMEM_SYMMETRIC_SIZE / ROCSHMEM_HEAP_SIZE set its size)",
                    names.malloc[0]
                ),
            });
        }
        let free_local = || {
            // SAFETY: every rank reaches this point with its own copy of the same
            // allocation (the failure is symmetric), so the collective free matches.
            unsafe { lib.free(local) }
        };
        if local % request.align.max(1) as u64 != 0 {
            free_local();
            return Err(Error::InvalidConfig(format!(
                "{} returned {local:#x}, which is not aligned to {}",
                names.malloc[0], request.align
            )));
        }
        let bases: Vec<u64> = (0..self.world_size)
            // SAFETY: `local` is a live symmetric address; `pe` is a valid PE.
            .map(|pe| unsafe { lib.ptr(local, pe as i32) })
            .collect();
        let reachable = PeerMask::from_fn(self.world_size, |r| bases[r] != 0);
        let table = match peer_table::upload(self.device.device(), &bases, self.header) {
            Ok(t) => t,
            Err(err) => {
                free_local();
                return Err(err);
            }
        };
        let map = SymmetricAddressMap::new(
            self.rank,
            self.world_size,
            local,
            request.bytes,
            bases,
            table,
            reachable,
        );
        match map {
            Ok(map) => {
                if !map.reachable().missing().is_empty() {
                    tracing::info!(rank = self.rank, missing = ?map.reachable().missing(), "peers outside direct reach of this rank (over the network)");
                }
                lock(&self.live).insert(local, map.clone());
                Ok(map)
            }
            Err(err) => {
                // SAFETY: the table was never handed out.
                let _ = unsafe { peer_table::free(self.device.device(), table) };
                free_local();
                Err(err)
            }
        }
    }

    fn map_of(&self, addr: u64) -> Result<SymmetricAddressMap> {
        live_map_at(&lock(&self.live), addr, "shmem", |m| m)
    }

    fn free(&self, map: &SymmetricAddressMap) -> Result<()> {
        let Some(rt) = self.runtime.get() else {
            return Err(Error::NotSymmetric {
                provider: "shmem",
                addr: map.base(),
            });
        };
        let removed = lock(&self.live).remove(&map.base());
        let Some(own) = removed else {
            return Err(Error::NotSymmetric {
                provider: "shmem",
                addr: map.base(),
            });
        };
        let device = self.device.device();
        // SAFETY: the table is this provider's, and the rank's stream was synchronized
        // by the caller (no kernel uses it).
        if let Err(err) = unsafe { peer_table::free(device, own.table()) } {
            tracing::warn!(rank = self.rank, %err, "releasing a shmem peer table");
        }
        // The engine's free is collective: meet over iris's rendezvous first, so a rank
        // that never frees is a timeout naming it rather than a hang in the engine. A
        // failed meeting leaks this copy (the engine cannot free it alone).
        let what = format!("{} free", rt.library.engine().name());
        self.collective.barrier(self.rank, &what)?;
        self.device.device().make_current()?;
        // SAFETY: every rank frees this allocation now (the barrier above), and no kernel
        // of any rank still uses it (each synchronized before the barrier).
        unsafe { rt.library.free(own.base()) };
        Ok(())
    }
}
