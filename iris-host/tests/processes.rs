//! Ranks as processes on the CPU backend: every provider (heap, per-allocation IPC,
//! adopted external memory; the SHMEM provider's refusal, the CPU having no SHMEM engine)
//! at 2, 4 and 8 processes started by `iris-run`, the same
//! program as threads, and the faults (a rank that never arrives, a rank that dies
//! mid-rendezvous, two processes claiming one rank, ranks allocating different sizes,
//! maps of foreign memory, bad external tables, a crashing rank under `iris-run`), each an
//! error within a bounded time, never a hang.
//!
//! The processes are this test binary again, running the `child` test with
//! `IRIS_TEST_ROLE` naming what to do; without that variable `child` does nothing.

mod common;

use std::os::fd::AsFd;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use common::*;
use iris_host::driver::{BackendKind, MemoryKind};
use iris_host::{Error, Iris, LaunchConfig, Pod, ProviderKind, Result, SymmetricBuffer, World};

const ROLE: &str = "IRIS_TEST_ROLE";
/// Elements each rank contributes to the all-gather.
const N: usize = 257;
const POISON: f32 = -1.0e30;
/// `remote_add`'s launch: threads, and what each adds.
const BLOCKS: u32 = 4;
const THREADS: u32 = 64;
const PER_THREAD: u64 = 3;

// ----- kernels, as the kernel macro would wrap them ---------------------------------------

fn all_gather(
    iris: &Iris,
    input: &iris_host::Buffer<'_, f32>,
    out: &SymmetricBuffer<'_, f32>,
) -> Result<()> {
    let mut args = iris.args(unit(), ALL_GATHER);
    args.pointer(input)?;
    args.symmetric(out)?;
    args.value(input.len() as u64);
    args.value(iris.rank() as u32);
    args.value(iris.world_size() as u32);
    iris.launch(LaunchConfig::for_elements(input.len() as u64, 64), args)
}

fn remote_add(iris: &Iris, counter: &SymmetricBuffer<'_, u64>) -> Result<()> {
    let mut args = iris.args(unit(), REMOTE_ADD);
    args.symmetric(counter)?;
    args.value(PER_THREAD);
    args.value(iris.world_size() as u32);
    let config = LaunchConfig {
        grid: [BLOCKS, 1, 1],
        block: [THREADS, 1, 1],
    };
    iris.launch(config, args)
}

fn input_of(rank: usize, sign: f32) -> Vec<f32> {
    (0..N).map(|i| sign * (rank * 10_000 + i) as f32).collect()
}

fn expected(world: usize, sign: f32) -> Vec<f32> {
    (0..world).flat_map(|r| input_of(r, sign)).collect()
}

// ----- another system's symmetric memory, to adopt ----------------------------------------

/// A symmetric allocation another system made: exportable memory of every rank,
/// exchanged through descriptors and mapped by every rank. Freed on drop.
struct Foreign<'a> {
    iris: &'a Iris,
    local: u64,
    peers: Vec<u64>,
}

impl<'a> Foreign<'a> {
    fn new(iris: &'a Iris, bytes: usize) -> Result<Self> {
        let device = iris.device();
        let local = device.alloc_exportable(bytes, MemoryKind::Symmetric)?;
        let fd = device.export_fd(local)?;
        let all = iris.all_gather_fds(b"foreign", vec![fd])?;
        let mut peers = Vec::with_capacity(all.len());
        for (rank, contribution) in all.iter().enumerate() {
            assert_eq!(contribution.bytes, b"foreign");
            peers.push(if rank == iris.rank() {
                local
            } else {
                let fd = contribution.fds.first().expect("a descriptor per rank");
                device.import_fd(fd.as_fd(), bytes, MemoryKind::Symmetric)?
            });
        }
        Ok(Self { iris, local, peers })
    }

    fn adopt<T: Pod>(&self, len: usize) -> Result<SymmetricBuffer<'a, T>> {
        // SAFETY: every address is a live mapping of at least `len` elements, freed only
        // when `self` drops, after the buffers adopted from it.
        unsafe { self.iris.adopt_external(self.local, &self.peers, len) }
    }
}

impl Drop for Foreign<'_> {
    fn drop(&mut self) {
        for &addr in &self.peers {
            // SAFETY: the adopted buffers are gone and the rank's work has finished.
            unsafe { self.iris.device().free_shared(addr) }.expect("free_shared");
        }
    }
}

// ----- what every rank runs ---------------------------------------------------------------

/// The unified provider contract: the same kernels over memory from each provider give
/// the same results; tables of different allocations are never mixed up; foreign memory
/// and foreign maps are refused; external tables are validated.
fn contract_rank(iris: &Iris) -> Result<String> {
    let (me, world) = (iris.rank(), iris.world_size());
    let input = iris.from_slice(&input_of(me, 1.0))?;
    let poison = vec![POISON; world * N];
    // values cross between processes as bytes
    assert_eq!(
        iris.all_gather(me as u64)?,
        (0..world as u64).collect::<Vec<_>>()
    );
    let names = iris.all_gather(format!("rank {me}"))?;
    assert_eq!(names.last(), Some(&format!("rank {}", world - 1)));
    assert_eq!(
        iris.all_gather(input_of(me, 2.0))?[world - 1],
        input_of(world - 1, 2.0)
    );
    assert_eq!(iris.is_process_world(), std::env::var(ROLE).is_ok());
    let threads = u64::from(BLOCKS * THREADS);
    let mut results = Vec::new();
    for kind in ProviderKind::ALL {
        if kind == ProviderKind::Shmem {
            // The CPU backend has no SHMEM engine: every rank is told so, and nothing
            // waits (the GPU runs are in the facade's processes_e2e).
            let err = iris.symmetric_with::<f32>(kind, 4).unwrap_err();
            assert!(matches!(err, Error::ShmemUnavailable { .. }), "{err}");
            assert!(
                err.to_string()
                    .contains("no SHMEM engine runs on the cpu backend"),
                "{err}"
            );
            continue;
        }
        let foreign_out = Foreign::new(iris, world * N * 4)?;
        let foreign_counter = Foreign::new(iris, 8)?;
        let (out, counter) = match kind {
            ProviderKind::External => {
                let out = foreign_out.adopt::<f32>(world * N)?;
                out.copy_from_slice(&poison)?;
                (out, foreign_counter.adopt::<u64>(1)?)
            }
            kind => (
                iris.symmetric_from_slice_with(kind, &poison)?,
                iris.symmetric_with::<u64>(kind, 1)?,
            ),
        };
        assert_eq!(out.provider(), kind);
        assert_eq!(out.map().world_size(), world);
        assert_eq!(out.map().peer_base(me), Some(out.map().base()));
        iris.barrier()?;
        all_gather(iris, &input, &out)?;
        remote_add(iris, &counter)?;
        iris.barrier()?;
        let gathered = out.to_vec()?;
        assert!(
            gathered == expected(world, 1.0),
            "rank {me}: the {kind} all-gather is wrong"
        );
        let count = counter.to_vec()?[0];
        assert_eq!(
            count,
            world as u64 * threads * PER_THREAD,
            "rank {me}: {kind} remote atomics"
        );
        results.push((gathered, count));
        iris.barrier()?;
        out.free()?;
        counter.free()?;
        drop(foreign_out);
        drop(foreign_counter);
    }
    assert!(
        results.windows(2).all(|w| w[0] == w[1]),
        "every provider gives the same result"
    );

    // Two allocations' tables are never mixed up.
    let a = iris.symmetric_with::<f32>(ProviderKind::Heap, world * N)?;
    let b = iris.symmetric_from_slice_with(ProviderKind::Ipc, &poison)?;
    let c = iris.symmetric_from_slice_with(ProviderKind::Ipc, &poison)?;
    let tables = [a.map().table(), b.map().table(), c.map().table()];
    assert!(tables[0] != tables[1] && tables[1] != tables[2] && tables[0] != tables[2]);
    for r in 0..world {
        assert_ne!(
            b.peer_addr(r),
            c.peer_addr(r),
            "rank {r}'s copies of b and c"
        );
    }
    let negated = iris.from_slice(&input_of(me, -1.0))?;
    iris.barrier()?;
    all_gather(iris, &input, &b)?;
    all_gather(iris, &negated, &c)?;
    iris.barrier()?;
    assert!(b.to_vec()? == expected(world, 1.0), "b holds its own data");
    assert!(c.to_vec()? == expected(world, -1.0), "c holds its own data");
    assert!(a.to_vec()?.iter().all(|&v| v == 0.0), "a was not written");

    // A provider maps only what it allocated; it frees only its own maps.
    let (heap, ipc, external) = (
        iris.provider(ProviderKind::Heap),
        iris.provider(ProviderKind::Ipc),
        iris.provider(ProviderKind::External),
    );
    assert_eq!(&ipc.map_of(c.map().base() + 8)?, c.map());
    assert_eq!(&heap.map_of(a.map().base())?, a.map());
    for (provider, addr) in [
        (heap, c.map().base()),
        (ipc, a.map().base()),
        (external, b.map().base()),
        (heap, input.addr()),
        (ipc, input.addr()),
    ] {
        let err = provider.map_of(addr).unwrap_err();
        assert!(matches!(err, Error::NotSymmetric { .. }), "{err}");
    }
    for (provider, map) in [(heap, b.map()), (ipc, a.map()), (external, c.map())] {
        let err = provider.free(map).unwrap_err();
        assert!(matches!(err, Error::InvalidFree { .. }), "{err}");
    }
    let err = iris
        .symmetric_with::<f32>(ProviderKind::External, 4)
        .unwrap_err();
    assert!(err.to_string().contains("allocates nothing"), "{err}");

    // Freeing one allocation leaves the others' tables alone.
    iris.barrier()?;
    b.free()?;
    let d = iris.symmetric_with::<f32>(ProviderKind::Ipc, world * N)?;
    assert_ne!(d.map().table(), c.map().table());
    all_gather(iris, &input, &c)?;
    iris.barrier()?;
    assert!(c.to_vec()? == expected(world, 1.0), "c after b was freed");
    iris.barrier()?;
    drop((a, c, d));

    // External tables are validated, never re-exchanged.
    let foreign = Foreign::new(iris, 4096)?;
    let mut long = foreign.peers.clone();
    long.push(foreign.local);
    for table in [&long[..], &foreign.peers[..world - 1]] {
        // SAFETY: refused before anything is used.
        let err = unsafe { iris.adopt_external::<f32>(foreign.local, table, 16) }.unwrap_err();
        assert!(matches!(err, Error::InvalidAddressMap(_)), "{err}");
        assert!(
            err.to_string().contains("entries but the world has"),
            "{err}"
        );
    }
    let mut wrong = foreign.peers.clone();
    wrong[me] += 64;
    // SAFETY: refused before anything is used.
    let err = unsafe { iris.adopt_external::<f32>(foreign.local, &wrong, 16) }.unwrap_err();
    assert!(
        err.to_string().contains(&format!("entry for rank {me}")),
        "{err}"
    );
    if world > 1 {
        // A peer that could not be mapped is marked; launching with it is refused.
        let mut partial = foreign.peers.clone();
        partial[(me + 1) % world] = 0;
        // SAFETY: the adopted buffer is never launched and is freed before `foreign`.
        let buf = unsafe { iris.adopt_external::<f32>(foreign.local, &partial, 16) }?;
        assert_eq!(buf.map().reachable().missing(), vec![(me + 1) % world]);
        let err = all_gather(iris, &input, &buf).unwrap_err();
        assert!(matches!(err, Error::UnreachablePeer { .. }), "{err}");
    }
    iris.barrier()?;
    drop(foreign);
    Ok(format!("contract ok: rank {me} of {world}"))
}

/// Ranks asking for different sizes get an error from every provider, not a hang, and
/// the next agreeing allocation works.
fn mismatch_rank(iris: &Iris) -> Result<String> {
    for kind in [ProviderKind::Heap, ProviderKind::Ipc] {
        let len = if iris.rank() == 1 { 200 } else { 100 };
        let err = iris.symmetric_with::<f32>(kind, len).unwrap_err();
        assert!(
            matches!(err, Error::SymmetryMismatch { .. }),
            "{kind}: {err}"
        );
        assert!(
            err.to_string()
                .contains("rank 1 asked for 800 bytes of f32"),
            "{kind}: {err}"
        );
        let ok = iris.symmetric_with::<u32>(kind, 10)?;
        iris.barrier()?;
        drop(ok);
    }
    Ok(format!("mismatch ok: rank {}", iris.rank()))
}

fn process_world() -> Result<World> {
    Ok(World::from_env()?
        .backend(BackendKind::Cpu)
        .heap_bytes(1 << 20))
}

/// What the process does, by `IRIS_TEST_ROLE`.
fn role(name: &str) -> Result<String> {
    let rank: usize = std::env::var("IRIS_RANK")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(0);
    let die_rank: Option<usize> = std::env::var("IRIS_TEST_DIE")
        .ok()
        .and_then(|r| r.parse().ok());
    match name {
        "contract" => process_world()?.run(contract_rank).map(|v| v.join("")),
        "mismatch" => process_world()?.run(mismatch_rank).map(|v| v.join("")),
        "join" => process_world()?
            .run(|iris| {
                iris.barrier()?;
                if let Ok(ms) = std::env::var("IRIS_TEST_LINGER_MS") {
                    std::thread::sleep(Duration::from_millis(ms.parse().unwrap_or(0)));
                    iris.barrier()?;
                }
                Ok(format!("joined: rank {}", iris.rank()))
            })
            .map(|v| v.join("")),
        "die" => process_world()?
            .run(|iris| {
                if std::env::var("IRIS_TEST_FAIL_INSTEAD").is_ok() && Some(iris.rank()) == die_rank
                {
                    std::thread::sleep(Duration::from_millis(300));
                    return Err(Error::InvalidConfig("a deliberate failure".into()));
                }
                if Some(iris.rank()) == die_rank {
                    std::thread::sleep(Duration::from_millis(300));
                    no_core_dump();
                    std::process::abort();
                }
                iris.barrier()?;
                Ok("survived".to_string())
            })
            .map(|v| v.join("")),
        "crash" => {
            // a line of its own: the test harness has printed `test child ... ` already
            println!("\npid {}", std::process::id());
            if Some(rank) == die_rank {
                std::thread::sleep(Duration::from_millis(300));
                no_core_dump();
                std::process::abort();
            }
            if rank == 2 && std::env::var("IRIS_TEST_EXIT7").is_ok() {
                std::process::exit(7);
            }
            std::thread::sleep(Duration::from_secs(60));
            Ok("slept".into())
        }
        other => Err(Error::InvalidConfig(format!("unknown role {other}"))),
    }
}

/// The entry point of every spawned process; does nothing in a normal test run.
#[test]
fn child() {
    let Ok(name) = std::env::var(ROLE) else {
        return;
    };
    match role(&name) {
        Ok(message) => {
            println!("\nROLE-OK {message}");
            std::process::exit(0);
        }
        Err(err) => {
            eprintln!("ROLE-ERROR {err}");
            std::process::exit(1);
        }
    }
}

// ----- the parent's side ------------------------------------------------------------------

/// The test kernels, built once and kept in a memfd the processes inherit (nothing is
/// written to the file system); its path in every process.
fn kernels_file() -> &'static str {
    static FILE: OnceLock<(std::os::fd::OwnedFd, String)> = OnceLock::new();
    &FILE
        .get_or_init(|| {
            use std::os::fd::AsRawFd;
            // no CLOEXEC: the processes this one starts inherit it at the same number
            let fd = rustix::fs::memfd_create("iris-test-kernels", rustix::fs::MemfdFlags::empty())
                .expect("memfd_create");
            let mut file = std::fs::File::from(fd.try_clone().expect("dup"));
            std::io::Write::write_all(&mut file, kernels_so()).expect("write the kernels");
            let path = format!("/proc/self/fd/{}", fd.as_raw_fd());
            (fd, path)
        })
        .1
}

fn unique_job(name: &str) -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    format!(
        "test-{}-{name}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// The `iris-run` launcher: the one cargo built, or `IRIS_RUN_BIN` where this binary runs
/// away from its build (scripts/device-run.sh sets it from the bundle).
fn launcher() -> std::ffi::OsString {
    std::env::var_os("IRIS_RUN_BIN").unwrap_or_else(|| env!("CARGO_BIN_EXE_iris-run").into())
}

/// A command running `role` in this test binary: directly, or as `n` ranks through
/// `iris-run` when `ranks` is `Some(n)`.
fn child_command(ranks: Option<usize>, role: &str, timeout_s: f64) -> Command {
    let exe = std::env::current_exe().expect("current_exe");
    let mut command = match ranks {
        Some(n) => {
            let mut c = Command::new(launcher());
            c.args(["-n", &n.to_string(), "--"]).arg(&exe);
            c
        }
        None => Command::new(&exe),
    };
    command
        .args(["child", "--exact", "--nocapture", "--test-threads=1"])
        .env(ROLE, role)
        .env("IRIS_BACKEND", "cpu")
        .env("IRIS_TIMEOUT", timeout_s.to_string())
        .env("IRIS_TEST_KERNELS_SO", kernels_file())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for var in [
        "RANK",
        "WORLD_SIZE",
        "OMPI_COMM_WORLD_RANK",
        "SLURM_PROCID",
        "IRIS_TEST_DIE",
        "IRIS_TEST_EXIT7",
        "IRIS_TEST_LINGER_MS",
        "IRIS_TEST_FAIL_INSTEAD",
        "IRIS_RANK",
        "IRIS_WORLD_SIZE",
        "IRIS_LOCAL_RANK",
        "IRIS_LOCAL_WORLD_SIZE",
        "IRIS_JOB_ID",
    ] {
        command.env_remove(var);
    }
    command
}

/// Starts rank `rank` of `world` of job `job` running `role` directly (no launcher).
fn spawn_rank(
    role: &str,
    job: &str,
    rank: usize,
    world: usize,
    timeout_s: f64,
    env: &[(&str, &str)],
) -> Child {
    let mut command = child_command(None, role, timeout_s);
    command
        .env("IRIS_RANK", rank.to_string())
        .env("IRIS_WORLD_SIZE", world.to_string())
        .env("IRIS_JOB_ID", job)
        .envs(env.iter().copied());
    command.spawn().expect("spawn a rank")
}

/// Runs `role` on `n` processes through `iris-run`.
fn iris_run(role: &str, n: usize, timeout_s: f64, env: &[(&str, &str)], limit: Duration) -> Ended {
    let mut command = child_command(Some(n), role, timeout_s);
    command.envs(env.iter().copied());
    let child = command.spawn().expect("spawn iris-run");
    wait_all(vec![child], limit).remove(0)
}

fn run_contract(n: usize) {
    let start = Instant::now();
    let ended = iris_run("contract", n, 20.0, &[], Duration::from_secs(60));
    assert_eq!(ended.code, Some(0), "{n} processes: {ended:#?}");
    for rank in 0..n {
        let line = format!("[rank {rank}] ROLE-OK contract ok: rank {rank} of {n}");
        assert!(
            ended.stdout.lines().any(|l| l == line),
            "missing {line:?}: {ended:#?}"
        );
    }
    eprintln!("contract at {n} processes: {:?}", start.elapsed());
}

#[test]
fn provider_contract_at_2_processes() {
    run_contract(2);
}

#[test]
fn provider_contract_at_4_processes() {
    run_contract(4);
}

#[test]
fn provider_contract_at_8_processes() {
    run_contract(8);
}

#[test]
fn the_same_program_runs_as_threads() {
    for n in [1, 2, 4] {
        let out = World::threads(n)
            .backend(BackendKind::Cpu)
            .heap_bytes(1 << 20)
            .run(contract_rank)
            .unwrap_or_else(|e| panic!("{n} threads: {e}"));
        assert_eq!(out.len(), n);
    }
    World::threads(3)
        .backend(BackendKind::Cpu)
        .heap_bytes(1 << 20)
        .run(mismatch_rank)
        .unwrap();
}

#[test]
fn ranks_allocating_different_sizes_get_an_error_not_a_hang() {
    let ended = iris_run("mismatch", 3, 3.0, &[], Duration::from_secs(30));
    assert_eq!(ended.code, Some(0), "{ended:#?}");
    assert_eq!(
        ended.stdout.matches("ROLE-OK mismatch ok").count(),
        3,
        "{ended:#?}"
    );
}

fn assert_failed(ended: &[Ended], ranks: &[usize], text: &str, within: Duration) {
    for &i in ranks {
        let e = &ended[i];
        assert_eq!(e.code, Some(1), "process {i} must fail: {e:#?}");
        assert!(e.stderr.contains("ROLE-ERROR"), "process {i}: {e:#?}");
        assert!(
            e.stderr.contains(text),
            "process {i} must say {text:?}: {e:#?}"
        );
        assert!(
            e.elapsed < within,
            "process {i} took {:?}: {e:#?}",
            e.elapsed
        );
    }
}

#[test]
fn a_rank_that_never_arrives_is_named_after_the_timeout() {
    let job = unique_job("never");
    let children = vec![
        spawn_rank("join", &job, 0, 3, 2.0, &[]),
        spawn_rank("join", &job, 1, 3, 2.0, &[]),
    ];
    let ended = wait_all(children, Duration::from_secs(30));
    assert_failed(
        &ended,
        &[0, 1],
        "rank(s) 2 did not arrive",
        Duration::from_secs(15),
    );
    for e in &ended {
        assert!(
            e.elapsed >= Duration::from_millis(1500),
            "it waited the 2 s timeout (counted from before the processes started): {e:#?}"
        );
    }
}

#[test]
fn a_rank_that_dies_mid_rendezvous_is_named_at_once() {
    // a member dies while the others wait in a barrier; then the hub does
    for (dead, survivors) in [(2usize, [0usize, 1]), (0, [1, 2])] {
        let job = unique_job("die");
        let dead_s = dead.to_string();
        let env = [("IRIS_TEST_DIE", dead_s.as_str())];
        let children = (0..3)
            .map(|r| spawn_rank("die", &job, r, 3, 30.0, &env))
            .collect();
        let ended = wait_all(children, Duration::from_secs(60));
        // detected long before the 30 s timeout
        assert_failed(
            &ended,
            &survivors,
            &format!("rank {dead} closed its connection"),
            Duration::from_secs(15),
        );
        assert_eq!(ended[dead].code, None, "rank {dead} was killed by SIGABRT");
    }
    // a rank that returns an error (rather than dying) is named with its reason
    for (failed, survivors) in [(1usize, [0usize, 2]), (0, [1, 2])] {
        let job = unique_job("fail");
        let failed_s = failed.to_string();
        let env = [
            ("IRIS_TEST_DIE", failed_s.as_str()),
            ("IRIS_TEST_FAIL_INSTEAD", "1"),
        ];
        let children = (0..3)
            .map(|r| spawn_rank("die", &job, r, 3, 30.0, &env))
            .collect();
        let ended = wait_all(children, Duration::from_secs(60));
        assert_failed(
            &ended,
            &survivors,
            &format!("rank {failed} failed: invalid configuration: a deliberate failure"),
            Duration::from_secs(15),
        );
        assert_failed(
            &ended,
            &[failed],
            "a deliberate failure",
            Duration::from_secs(15),
        );
    }
}

#[test]
fn two_processes_claiming_one_rank_is_an_error_naming_it() {
    // while the job gathers: everyone fails, naming the rank
    // (the second claimant starts late, so that the job's other rank has connected)
    for (claims, rank) in [([0usize, 1, 1], 1), ([1, 0, 0], 0)] {
        let job = unique_job("dup");
        let mut children = Vec::new();
        for (i, &r) in claims.iter().enumerate() {
            if i == 2 {
                std::thread::sleep(Duration::from_millis(500));
            }
            children.push(spawn_rank("join", &job, r, 3, 30.0, &[]));
        }
        let ended = wait_all(children, Duration::from_secs(60));
        assert_failed(
            &ended,
            &[0, 1, 2],
            &format!("two processes claim rank {rank}"),
            Duration::from_secs(15),
        );
    }
    // after the job gathered: the late claimant is refused, the job goes on
    let job = unique_job("late");
    let linger = [("IRIS_TEST_LINGER_MS", "2500")];
    let mut children = vec![
        spawn_rank("join", &job, 0, 2, 30.0, &linger),
        spawn_rank("join", &job, 1, 2, 30.0, &linger),
    ];
    std::thread::sleep(Duration::from_millis(800));
    children.push(spawn_rank("join", &job, 1, 2, 30.0, &[]));
    let ended = wait_all(children, Duration::from_secs(60));
    assert_eq!(ended[0].code, Some(0), "{ended:#?}");
    assert_eq!(ended[1].code, Some(0), "{ended:#?}");
    assert_failed(
        &ended,
        &[2],
        "two processes claim rank 1",
        Duration::from_secs(15),
    );
}

#[test]
fn iris_run_stops_the_job_when_a_rank_crashes() {
    let start = Instant::now();
    let ended = iris_run(
        "crash",
        3,
        30.0,
        &[("IRIS_TEST_DIE", "1")],
        Duration::from_secs(40),
    );
    assert_eq!(ended.code, Some(128 + libc::SIGABRT), "{ended:#?}");
    assert!(
        ended.stderr.contains("rank 1 was killed by signal SIGABRT"),
        "{ended:#?}"
    );
    assert!(
        start.elapsed() < Duration::from_secs(20),
        "the others were stopped: {ended:#?}"
    );
    for rank in [0, 2] {
        let prefix = format!("[rank {rank}] pid ");
        let pid = ended
            .stdout
            .lines()
            .find_map(|l| l.strip_prefix(&prefix))
            .unwrap_or_else(|| panic!("rank {rank} printed its pid: {ended:#?}"));
        assert!(
            !std::path::Path::new(&format!("/proc/{pid}")).exists(),
            "rank {rank} (pid {pid}) was killed and reaped"
        );
    }

    let ended = iris_run(
        "crash",
        3,
        30.0,
        &[("IRIS_TEST_EXIT7", "1")],
        Duration::from_secs(40),
    );
    assert_eq!(ended.code, Some(7), "{ended:#?}");
    assert!(
        ended.stderr.contains("rank 2 exited with code 7"),
        "{ended:#?}"
    );

    let ok = Command::new(launcher())
        .args([
            "-n",
            "2",
            "--",
            "sh",
            "-c",
            "echo hello from $IRIS_RANK of $IRIS_WORLD_SIZE",
        ])
        .output()
        .expect("iris-run");
    assert!(ok.status.success());
    let text = String::from_utf8_lossy(&ok.stdout);
    assert!(text.contains("[rank 0] hello from 0 of 2"), "{text}");
    assert!(text.contains("[rank 1] hello from 1 of 2"), "{text}");
    let usage = Command::new(launcher()).output().expect("iris-run");
    assert_eq!(usage.status.code(), Some(2));
}

#[test]
fn a_torchrun_environment_forms_a_job() {
    let run_id = unique_job("torchrun");
    let children = (0..2)
        .map(|r| {
            let mut command = child_command(None, "join", 20.0);
            command.envs([
                ("RANK", r.to_string()),
                ("WORLD_SIZE", "2".to_string()),
                ("LOCAL_RANK", r.to_string()),
                ("LOCAL_WORLD_SIZE", "2".to_string()),
                ("TORCHELASTIC_RUN_ID", run_id.clone()),
                ("MASTER_ADDR", "127.0.0.1".to_string()),
                ("MASTER_PORT", "29500".to_string()),
            ]);
            command.spawn().expect("spawn a rank")
        })
        .collect();
    let ended = wait_all(children, Duration::from_secs(60));
    for (r, e) in ended.iter().enumerate() {
        assert_eq!(e.code, Some(0), "{e:#?}");
        assert!(
            e.stdout.contains(&format!("ROLE-OK joined: rank {r}")),
            "{e:#?}"
        );
    }
}
