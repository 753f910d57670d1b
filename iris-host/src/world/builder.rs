//! `World`: run a closure as every rank of a world, the ranks being threads of this
//! process or processes of one or several nodes (one rank each).

use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::Duration;

use super::shared::{release_heaps, SharedHeap, WorldLayout};
use super::WorldShared;
use crate::config::timeout_from_env;
use crate::context::Iris;
use crate::module::DeviceSlot;
use crate::symmetric::{PeerMask, ProviderKind, RankHeap};
use crate::transport::{rank_env_from_process, Collective, RankEnv, Rendezvous};
use iris_driver::{Backend, BackendKind, MemoryKind};
use iris_driver::{Error, Result};

/// Bytes of each rank's symmetric heap unless [`World::heap_bytes`] says otherwise.
pub const DEFAULT_HEAP_BYTES: usize = 256 << 20;

/// How the ranks of a world run.
#[derive(Clone, Debug)]
enum Ranks {
    /// All of them, as threads of this process.
    Threads(usize),
    /// One of them in this process; the others are processes of the same job.
    Process(RankEnv),
}

/// A world of ranks, each with its own [`Iris`] context. The same program runs with
/// either kind of world:
///
/// - [`World::threads`]: every rank is a thread of this process, spread over the devices
///   of one backend (rank `r` on device `r % device_count`; several ranks may share a
///   device);
/// - [`World::from_env`]: this process is one rank of a job started by a launcher
///   (`iris-run -n N`, torchrun, Open MPI, Slurm; see [`rank_env_from_process`]), on device
///   `local_rank % device_count`; the job's ranks meet at a rendezvous over an
///   abstract-namespace Unix socket and map each other's memory, or, for a job on
///   several nodes (`MASTER_ADDR`/`MASTER_PORT`), over TCP, mapping only the memory of
///   their node's ranks (the others are unreachable; see `docs/nodes.md`).
///
/// ```
/// # use iris_host::World;
/// # fn main() -> iris_host::Result<()> {
/// let world = World::from_env_or_threads(4)?.heap_bytes(1 << 20);
/// let ranks = world.run(|iris| {
///     let _buf = iris.symmetric_zeros::<f32>(1024)?;
///     iris.barrier()?;
///     Ok(iris.rank())
/// })?;
/// assert!(!ranks.is_empty());
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct World {
    ranks: Ranks,
    heap_bytes: usize,
    backend: Option<BackendKind>,
    timeout: Option<Duration>,
    provider: ProviderKind,
    trace: Option<std::path::PathBuf>,
    sync_stream: bool,
}

impl World {
    /// The backend a world built without [`backend`](World::backend) runs on:
    /// `IRIS_BACKEND`, else the first of cuda, hip and cpu that is present. Makes no world
    /// (no context, nothing traced), so a program can choose its sizes before its worlds
    /// without a probe world taking the trace folder (`IRIS_TRACE` gives a process's
    /// first world `dir/`, later ones `dir/world-2`, ...).
    pub fn default_backend() -> Result<BackendKind> {
        Ok(iris_driver::open_default()?.kind())
    }

    /// A world of `ranks` ranks, one thread each.
    pub fn threads(ranks: usize) -> Self {
        Self::with_ranks(Ranks::Threads(ranks))
    }

    /// This process as one rank of a job, as the launcher's environment says
    /// ([`rank_env_from_process`]). Errors when no launcher's variables are set, or when
    /// they are malformed or contradict each other (naming the variable).
    pub fn from_env() -> Result<Self> {
        match rank_env_from_process()? {
            Some(env) => Ok(Self::process(env)),
            None => Err(Error::InvalidConfig(
                "no launcher set this process's rank (IRIS_RANK, RANK, OMPI_COMM_WORLD_RANK or SLURM_PROCID): start it with `iris-run -n N -- program`, torchrun, mpirun or srun".into(),
            )),
        }
    }

    /// [`from_env`](World::from_env) when a launcher started this process, else a world
    /// of `ranks` threads. Malformed launcher variables are still an error.
    pub fn from_env_or_threads(ranks: usize) -> Result<Self> {
        Ok(match rank_env_from_process()? {
            Some(env) => Self::process(env),
            None => Self::threads(ranks),
        })
    }

    /// This process as rank `env.rank` of a job of `env.world_size` processes, which meet
    /// at the rendezvous named after `env.job_id`.
    pub fn process(env: RankEnv) -> Self {
        Self::with_ranks(Ranks::Process(env))
    }

    fn with_ranks(ranks: Ranks) -> Self {
        Self {
            ranks,
            heap_bytes: DEFAULT_HEAP_BYTES,
            backend: None,
            timeout: None,
            provider: ProviderKind::Heap,
            trace: None,
            sync_stream: false,
        }
    }

    /// Bytes of each rank's symmetric heap (every rank of a job must use the same).
    pub fn heap_bytes(mut self, bytes: usize) -> Self {
        self.heap_bytes = bytes;
        self
    }

    /// The backend to run on (default: `IRIS_BACKEND`, or the first present of cuda,
    /// hip, cpu).
    pub fn backend(mut self, kind: BackendKind) -> Self {
        self.backend = Some(kind);
        self
    }

    /// The bound on every wait (default: `IRIS_TIMEOUT` seconds, or 60 s).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// The provider [`Iris::symmetric`] and its siblings allocate from (default:
    /// [`ProviderKind::Heap`]); [`Iris::symmetric_with`] picks one per allocation.
    pub fn provider(mut self, kind: ProviderKind) -> Self {
        self.provider = kind;
        self
    }

    /// Traces every rank's launches and traced calls into `dir` (default: the folder
    /// `IRIS_TRACE` names, else no tracing): each rank writes `dir/rank-<r>.json` when its
    /// context ends, and the last merges the world's into `dir/trace.json`, a Chrome trace
    /// (see [`crate::trace`]). A process's second world traced into the same `dir`
    /// writes into `dir/world-2`, its third into `dir/world-3`, and so on.
    pub fn trace(mut self, dir: impl Into<std::path::PathBuf>) -> Self {
        self.trace = Some(dir.into());
        self
    }

    /// Gives every rank a second stream, of the device's greatest priority, for the short
    /// kernels other ranks wait on (default: off): the fused GEMMs of `iris::ccl` then
    /// queue their split barrier there, beside the GEMM that computes a rank's own rows,
    /// so that its wait starts at once and its one block starts before the waiting
    /// blocks of the ranks' GEMMs (on one stream it waited behind this rank's own rows,
    /// then behind the other ranks' GEMM blocks). Each rank then takes two of the
    /// process's hardware queues on its device (`Ccl::new` counts them); the CPU backend
    /// runs the same order with a second stream thread. See [`Iris::fork_sync_stream`].
    /// Measured on an H100 (4 ranks on the one GPU), it made the fused GEMMs slower, not
    /// faster (docs/performance.md): off unless asked for.
    pub fn sync_stream(mut self, on: bool) -> Self {
        self.sync_stream = on;
        self
    }

    /// How many ranks the world has.
    pub fn size(&self) -> usize {
        match &self.ranks {
            Ranks::Threads(n) => *n,
            Ranks::Process(env) => env.world_size,
        }
    }

    /// Whether the ranks are processes (this process runs one of them).
    pub fn is_processes(&self) -> bool {
        matches!(self.ranks, Ranks::Process(_))
    }

    /// Runs `f` once for every rank this process runs, with that rank's [`Iris`], and
    /// returns their results in rank order: every rank's for a world of threads, this
    /// process's one rank's for a world of processes.
    ///
    /// If a rank returns an error or panics, ranks blocked in a collective (in this
    /// process or another) wake with an error naming it, and `run` returns
    /// [`Error::RankFailed`] or [`Error::RankPanicked`] naming the first rank that failed
    /// on its own account.
    pub fn run<R, F>(self, f: F) -> Result<Vec<R>>
    where
        R: Send,
        F: Fn(&Iris) -> Result<R> + Sync,
    {
        let timeout = match self.timeout {
            Some(t) => t,
            None => timeout_from_env()?,
        };
        let backend = match self.backend {
            Some(kind) => iris_driver::open(kind)?,
            None => iris_driver::open_default()?,
        };
        let trace = self
            .trace
            .clone()
            .or_else(crate::config::trace_dir_from_env)
            .map(|dir| crate::trace::world_folder(&dir));
        let ranks = match &self.ranks {
            Ranks::Threads(n) => *n,
            Ranks::Process(env) => {
                let mut world =
                    super::process::setup(env, self.heap_bytes, self.provider, timeout, backend)?;
                world.trace = trace;
                world.sync_stream = self.sync_stream;
                let shared = Arc::new(world);
                let result = run_rank(env.rank, &shared, &f);
                drop(shared);
                return result.map(|value| vec![value]).map_err(|err| match err {
                    Error::RankPanicked { .. } | Error::RankFailed { .. } => err,
                    other => Error::RankFailed {
                        rank: env.rank,
                        source: Box::new(other),
                    },
                });
            }
        };
        if ranks == 0 {
            return Err(Error::InvalidConfig(
                "a world needs at least one rank".into(),
            ));
        }
        let mut world = self.setup(ranks, timeout, backend)?;
        world.trace = trace;
        world.sync_stream = self.sync_stream;
        let shared = Arc::new(world);
        let results: Vec<Result<R>> = std::thread::scope(|s| {
            let mut handles = Vec::with_capacity(ranks);
            for rank in 0..ranks {
                let (shared, f) = (&shared, &f);
                let spawned = std::thread::Builder::new()
                    .name(format!("iris-rank-{rank}"))
                    .spawn_scoped(s, move || run_rank(rank, shared, f));
                match spawned {
                    Ok(handle) => handles.push(Ok(handle)),
                    Err(source) => {
                        shared
                            .collective
                            .poison(rank, "could not start its thread".into());
                        shared.collective.depart(rank);
                        handles.push(Err(Error::Io {
                            what: format!("starting the thread of rank {rank}"),
                            source,
                        }));
                    }
                }
            }
            handles
                .into_iter()
                .enumerate()
                .map(|(rank, h)| {
                    h.and_then(|h| {
                        h.join().unwrap_or_else(|_| {
                            Err(Error::RankPanicked {
                                rank,
                                message: "the rank's thread panicked".into(),
                            })
                        })
                    })
                })
                .collect()
        });
        drop(shared);
        collect(results)
    }

    fn setup(
        &self,
        ranks: usize,
        timeout: Duration,
        backend: Arc<dyn Backend>,
    ) -> Result<WorldShared> {
        let _span = tracing::info_span!("world_setup", ranks, backend = %backend.kind()).entered();
        let count = backend.device_count();
        if count == 0 {
            return Err(Error::BackendUnavailable {
                kind: backend.kind(),
                reason: "it found no device".into(),
            });
        }
        let used = count.min(ranks);
        let slots: Vec<Arc<DeviceSlot>> = (0..used)
            .map(|d| backend.device(d).map(DeviceSlot::of))
            .collect::<Result<_>>()?;
        let mut access = vec![vec![false; used]; used];
        for (a, row) in access.iter_mut().enumerate() {
            for (b, can) in row.iter_mut().enumerate() {
                *can = a == b || backend.can_access_peer(a, b)?;
                if *can && a != b {
                    backend.enable_peer_access(a, b)?;
                }
            }
        }
        let device_of = |rank: usize| rank % used;
        let mut heaps: Vec<RankHeap> = Vec::with_capacity(ranks);
        let mut release: Vec<SharedHeap> = Vec::with_capacity(ranks);
        for rank in 0..ranks {
            let slot = &slots[device_of(rank)];
            match slot
                .device()
                .alloc(self.heap_bytes.max(1), MemoryKind::Symmetric)
            {
                Ok(base) => {
                    heaps.push(RankHeap {
                        device: Arc::clone(slot),
                        base,
                        bytes: self.heap_bytes,
                    });
                    release.push(SharedHeap {
                        device: Arc::clone(slot),
                        addr: base,
                        shared: false,
                    });
                }
                Err(err) => {
                    release_heaps(&release);
                    return Err(err);
                }
            }
        }
        let reachable: BTreeMap<usize, PeerMask> = (0..ranks)
            .map(|r| {
                let mask = PeerMask::from_fn(ranks, |p| access[device_of(r)][device_of(p)]);
                (r, mask)
            })
            .collect();
        let collective: Arc<dyn Collective> = Arc::new(Rendezvous::new(ranks, timeout));
        Ok(WorldShared::new(WorldLayout {
            timeout,
            collective,
            backend,
            heaps: heaps.into(),
            reachable,
            provider: self.provider,
            processes: false,
            release,
        }))
    }
}

fn run_rank<R, F>(rank: usize, shared: &Arc<WorldShared>, f: &F) -> Result<R>
where
    F: Fn(&Iris) -> Result<R>,
{
    let _span = tracing::info_span!("rank", rank).entered();
    // The context is made apart from `f`'s call, so that a failure or a panic in `f`
    // raises the world's abort before the context is dropped: dropping it waits for this
    // rank's work, and peers' kernels waiting for this rank must give up first.
    let result = match catch_unwind(AssertUnwindSafe(|| {
        shared.rank_setup(rank).and_then(Iris::new)
    })) {
        Ok(Ok(iris)) => {
            let outcome = catch_unwind(AssertUnwindSafe(|| f(&iris)));
            let result = outcome_of(rank, shared, outcome);
            drop(iris);
            result
        }
        Ok(Err(err)) => outcome_of(rank, shared, Ok(Err(err))),
        Err(panic) => outcome_of(rank, shared, Err(panic)),
    };
    shared.collective.depart(rank);
    result
}

/// A rank's outcome: a failure (an error, or a panic) poisons the collective and raises
/// the world's abort, and becomes the rank's error.
fn outcome_of<R>(
    rank: usize,
    shared: &Arc<WorldShared>,
    outcome: std::thread::Result<Result<R>>,
) -> Result<R> {
    match outcome {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(err)) => {
            if !err.is_secondary() {
                shared.collective.poison(rank, format!("failed: {err}"));
            }
            shared.abort.raise(format!("rank {rank} failed: {err}"));
            Err(err)
        }
        Err(panic) => {
            let message = iris_driver::error::panic_message(&*panic);
            shared
                .collective
                .poison(rank, format!("panicked: {message}"));
            shared
                .abort
                .raise(format!("rank {rank} panicked: {message}"));
            Err(Error::RankPanicked { rank, message })
        }
    }
}

/// The ranks' values, or the error of the first rank that failed on its own account.
fn collect<R>(results: Vec<Result<R>>) -> Result<Vec<R>> {
    if results.iter().all(Result::is_ok) {
        return Ok(results.into_iter().filter_map(Result::ok).collect());
    }
    let mut errors: Vec<(usize, Error)> = results
        .into_iter()
        .enumerate()
        .filter_map(|(rank, r)| r.err().map(|e| (rank, e)))
        .collect();
    let pick = errors
        .iter()
        .position(|(_, e)| !e.is_secondary())
        .unwrap_or(0);
    let (rank, err) = errors.swap_remove(pick);
    Err(match err {
        Error::RankPanicked { .. } | Error::RankFailed { .. } => err,
        other => Error::RankFailed {
            rank,
            source: Box::new(other),
        },
    })
}
