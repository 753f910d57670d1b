//! Setting up this process as one rank of a job: join the job's rendezvous (of this node,
//! or over the network for a job on several nodes), export this rank's heap, map every
//! other rank's of this node (the ranks of other nodes are unreachable).

use std::collections::BTreeMap;
use std::os::fd::AsFd;
use std::sync::Arc;
use std::time::Duration;

use super::shared::{release_heaps, SharedHeap, WorldLayout};
use super::WorldShared;
use crate::module::DeviceSlot;
use crate::symmetric::{PeerMask, ProviderKind, RankHeap};
use crate::transport::env::{IRIS_JOB_ID, MASTER_ADDR};
use crate::transport::{
    decode_status, encode_status, Collective, NetworkRendezvous, NodeClaim, ProcessRendezvous,
    RankEnv, Reader, Writer,
};
use iris_driver::{Backend, MemoryKind};
use iris_driver::{Error, Result};

/// The shared state of this process's rank of the job `env` describes.
pub(super) fn setup(
    env: &RankEnv,
    heap_bytes: usize,
    provider: ProviderKind,
    timeout: Duration,
    backend: Arc<dyn Backend>,
) -> Result<WorldShared> {
    let _span = tracing::info_span!(
        "process_world_setup",
        rank = env.rank,
        size = env.world_size,
        launcher = %env.launcher
    )
    .entered();
    if let (true, None) = (env.multi_node(), &env.network) {
        return Err(Error::InvalidEnv {
            var: MASTER_ADDR,
            value: String::new(),
            reason: format!(
                "the job spans several nodes ({} of its {} ranks on this one, as {} says): set MASTER_ADDR and MASTER_PORT to rank 0's node and a port, for the ranks to meet over the network",
                env.local_world_size.unwrap_or(0),
                env.world_size,
                env.launcher
            ),
        });
    }
    let job_id = env.job_id.as_deref().ok_or_else(|| Error::InvalidEnv {
        var: IRIS_JOB_ID,
        value: String::new(),
        reason: format!(
            "{} gave no job id: set {IRIS_JOB_ID} to a name shared by the job's ranks and no other running job",
            env.launcher
        ),
    })?;
    let count = backend.device_count();
    if count == 0 {
        return Err(Error::BackendUnavailable {
            kind: backend.kind(),
            reason: "it found no device".into(),
        });
    }
    let (collective, local_rank): (Arc<dyn Collective>, usize) = match &env.network {
        Some(addr) => {
            let claim = NodeClaim {
                local_rank: env.local_rank,
                local_world_size: env.local_world_size,
            };
            let rendezvous =
                NetworkRendezvous::join(job_id, addr, env.rank, env.world_size, claim, timeout)?;
            let local = rendezvous.layout().local_rank(env.rank);
            (Arc::new(rendezvous), local)
        }
        None => {
            let rendezvous = ProcessRendezvous::join(job_id, env.rank, env.world_size, timeout)?;
            (Arc::new(rendezvous), env.local_rank.unwrap_or(env.rank))
        }
    };
    let slot = match backend.device(local_rank % count) {
        Ok(device) => DeviceSlot::of(device),
        Err(err) => {
            collective.poison(env.rank, format!("failed to set up: {err}"));
            return Err(err);
        }
    };
    let exchanged = exchange_heaps(env, heap_bytes, &slot, &*collective);
    let (heaps, reachable, release) = match exchanged {
        Ok(done) => done,
        Err(err) => {
            if !err.is_secondary() {
                collective.poison(env.rank, format!("failed to set up: {err}"));
            }
            return Err(err);
        }
    };
    Ok(WorldShared::new(WorldLayout {
        timeout,
        collective,
        backend,
        heaps: heaps.into(),
        reachable: BTreeMap::from([(env.rank, reachable)]),
        provider,
        processes: true,
        release,
    }))
}

type Heaps = (Vec<RankHeap>, PeerMask, Vec<SharedHeap>);

/// Allocates and exports this rank's heap, and maps every other rank's (a heap that
/// cannot be mapped makes its rank unreachable).
fn exchange_heaps(
    env: &RankEnv,
    heap_bytes: usize,
    slot: &Arc<DeviceSlot>,
    collective: &dyn Collective,
) -> Result<Heaps> {
    let device = slot.device();
    let size = heap_bytes.max(1);
    let mut release = Vec::new();
    let own = device
        .alloc_exportable(size, MemoryKind::Symmetric)
        .inspect(|&addr| {
            release.push(SharedHeap {
                device: Arc::clone(slot),
                addr,
                shared: true,
            })
        })
        .and_then(|addr| device.export_fd(addr).map(|fd| (addr, fd)));
    let mut w = Writer::new();
    w.usize(heap_bytes);
    encode_status(&mut w, &own.as_ref().map(drop).map_err(ToString::to_string));
    let fds = own
        .as_ref()
        .map(|(_, fd)| fd.try_clone())
        .ok()
        .and_then(|d| d.ok());
    let gathered = collective.exchange(
        env.rank,
        "heap exchange",
        w.finish(),
        fds.into_iter().collect(),
    );
    let result = (|| {
        let contributions = gathered?;
        // this rank's own failure first: every rank that failed reports its own
        let (own_base, _) = own.map_err(|e| e.on_rank(env.rank))?;
        let mut sizes = Vec::with_capacity(contributions.len());
        for (r, c) in contributions.iter().enumerate() {
            let mut reader = Reader::new("heap exchange", &c.bytes);
            let bytes = reader.usize()?;
            let status = decode_status(&mut reader)?;
            reader.end()?;
            if let (Err(reason), true) = (&status, r != env.rank) {
                return Err(Error::PeerFailed {
                    rank: env.rank,
                    what: "heap exchange".into(),
                    peer: r,
                    reason: format!("could not export its heap: {reason}"),
                });
            }
            sizes.push(bytes);
        }
        if sizes.iter().any(|&s| s != heap_bytes) {
            let each: Vec<String> = sizes
                .iter()
                .enumerate()
                .map(|(r, s)| format!("rank {r} has {s} bytes"))
                .collect();
            return Err(Error::SymmetryMismatch {
                op: "heap exchange".into(),
                details: format!("the ranks' heaps differ in size: {}", each.join(", ")),
            });
        }
        let mut heaps = Vec::with_capacity(contributions.len());
        let mut reachable = PeerMask::none(contributions.len());
        for (r, c) in contributions.iter().enumerate() {
            let base = if r == env.rank {
                own_base
            } else {
                match c
                    .fds
                    .first()
                    .map(|fd| device.import_fd(fd.as_fd(), size, MemoryKind::Symmetric))
                {
                    Some(Ok(addr)) => {
                        release.push(SharedHeap {
                            device: Arc::clone(slot),
                            addr,
                            shared: true,
                        });
                        addr
                    }
                    Some(Err(err)) => {
                        tracing::warn!(rank = env.rank, peer = r, %err, "a peer's heap cannot be mapped; it is unreachable");
                        0
                    }
                    None => 0,
                }
            };
            // a rank of another node is never reachable (it passed no descriptor)
            if base != 0 && collective.node_of(r) == collective.node_of(env.rank) {
                reachable.insert(r);
            }
            heaps.push(RankHeap {
                device: Arc::clone(slot),
                base,
                bytes: heap_bytes,
            });
        }
        Ok((heaps, reachable))
    })();
    match result {
        Ok((heaps, reachable)) => Ok((heaps, reachable, release)),
        Err(err) => {
            release_heaps(&release);
            Err(err)
        }
    }
}
