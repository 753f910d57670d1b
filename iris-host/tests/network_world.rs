//! Ranks on several nodes, on the CPU backend: two "nodes" made as network namespaces
//! joined by a veth pair (each with its own addresses, ports and abstract Unix sockets,
//! so descriptors cannot cross between them), two ranks each. A world of 2 x 2 ranks
//! started by one `iris-run --nnodes 2` a node meets over TCP, all-gathers host values,
//! allocates with the heap, ipc and external providers (the other node's ranks
//! unreachable, a launch touching them refused); a node that never comes is named
//! within the timeout; a node killed mid-run is named; launcher claims that contradict
//! the hosts are refused.
//!
//! The namespaces share the machine's host name, so every rank names its node with
//! `IRIS_HOSTNAME`. Without namespaces (not root, no `ip`), the nodes are two host names
//! on loopback, and each test prints that the namespace variant was skipped and why
//! (`IRIS_TEST_NO_NETNS=1` asks for the loopback variant).
//!
//! The processes are this test binary again, running the `child` test with
//! `IRIS_TEST_ROLE` naming what to do; without that variable `child` does nothing.

mod common;

use std::io::Write;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

use common::*;
use iris_host::driver::{BackendKind, MemoryKind};
use iris_host::{Error, Iris, ProviderKind, Result, SymmetricBuffer, World};

const ROLE: &str = "IRIS_TEST_ROLE";
const HOSTS: [&str; 2] = ["node-a", "node-b"];
/// Ranks on each node.
const PER_NODE: usize = 2;
const WORLD: usize = 2 * PER_NODE;

// ----- what every rank runs ---------------------------------------------------------------

fn host() -> String {
    std::env::var("IRIS_HOSTNAME").unwrap_or_default()
}

/// The ranks of `rank`'s node.
fn node_ranks(rank: usize) -> Vec<usize> {
    let first = rank / PER_NODE * PER_NODE;
    (first..first + PER_NODE).collect()
}

/// A kernel that touches every rank's copy of `out`: refused when a peer is unreachable.
fn touch_every_peer(iris: &Iris, out: &SymmetricBuffer<'_, f32>) -> Result<()> {
    let mut args = iris.args(unit(), ALL_GATHER);
    args.symmetric(out)?;
    Err(Error::InvalidConfig(
        "a launch with unreachable peers was accepted".into(),
    ))
}

fn check_reachability<T: iris_host::Pod>(me: usize, buf: &SymmetricBuffer<'_, T>, what: &str) {
    let map = buf.map();
    assert_eq!(map.world_size(), WORLD, "{what}");
    assert_eq!(map.reachable().ranks(), node_ranks(me), "rank {me}: {what}");
    for r in node_ranks(me) {
        assert!(
            map.peer_base(r).is_some_and(|b| b != 0),
            "rank {me}: {what}: rank {r}"
        );
    }
}

fn world_rank(iris: &Iris) -> Result<String> {
    let (me, world) = (iris.rank(), iris.world_size());
    assert_eq!(world, WORLD);
    assert!(iris.is_process_world());
    // host values cross nodes as bytes
    assert_eq!(
        iris.all_gather(me as u64 * 7)?,
        (0..WORLD as u64).map(|r| r * 7).collect::<Vec<_>>()
    );
    let names = iris.all_gather(format!("rank {me} on {}", host()))?;
    assert_eq!(names[3], "rank 3 on node-b");
    assert_eq!(names[0], "rank 0 on node-a");
    let other = if me < PER_NODE { PER_NODE } else { 0 };
    for kind in [ProviderKind::Heap, ProviderKind::Ipc] {
        let buf = iris.symmetric_with::<f32>(kind, 64)?;
        check_reachability(me, &buf, kind.name());
        let err = touch_every_peer(iris, &buf).unwrap_err();
        assert!(
            matches!(err, Error::UnreachablePeer { rank, peer } if rank == me && peer == other),
            "rank {me}: {kind}: {err}"
        );
        iris.barrier()?;
        buf.free()?;
    }
    // Another system's memory, exchanged by descriptors: only the node's ranks pass them.
    let device = iris.device();
    let bytes = 4096;
    let local = device.alloc_exportable(bytes, MemoryKind::Symmetric)?;
    let fd = device.export_fd(local)?;
    let all = iris.all_gather_fds(b"foreign", vec![fd])?;
    let mut peers = vec![0u64; WORLD];
    let mut imported = Vec::new();
    for (r, c) in all.iter().enumerate() {
        assert_eq!(c.bytes, b"foreign");
        let same_node = node_ranks(me).contains(&r);
        assert_eq!(
            c.fds.len(),
            usize::from(same_node),
            "rank {me}: rank {r}'s fds"
        );
        peers[r] = if r == me {
            local
        } else if let Some(fd) = c.fds.first() {
            let addr = device.import_fd(
                std::os::fd::AsFd::as_fd(&**fd),
                bytes,
                MemoryKind::Symmetric,
            )?;
            imported.push(addr);
            addr
        } else {
            // a stale address from elsewhere: never reachable across nodes
            0xdead_0000
        };
    }
    drop(all);
    {
        // SAFETY: the buffer is never launched with (refused) and dropped before the
        // memory is freed.
        let buf = unsafe { iris.adopt_external::<f32>(local, &peers, 16) }?;
        check_reachability(me, &buf, "external");
        let err = touch_every_peer(iris, &buf).unwrap_err();
        assert!(
            matches!(err, Error::UnreachablePeer { peer, .. } if peer == other),
            "{err}"
        );
    }
    iris.barrier()?;
    for addr in imported.into_iter().chain([local]) {
        // SAFETY: nothing uses the memory any more.
        unsafe { device.free_shared(addr) }?;
    }
    iris.barrier()?;
    Ok(format!("network ok: rank {me} of {world} on {}", host()))
}

fn process_world() -> Result<World> {
    Ok(World::from_env()?
        .backend(BackendKind::Cpu)
        .heap_bytes(1 << 20))
}

/// What the process does, by `IRIS_TEST_ROLE`.
fn role(name: &str) -> Result<String> {
    match name {
        "world" => process_world()?.run(world_rank).map(|v| v.join("")),
        "join" => process_world()?
            .run(|iris| {
                iris.barrier()?;
                if std::env::var("IRIS_TEST_DIE_HOST").ok() == Some(host()) {
                    std::thread::sleep(Duration::from_millis(300));
                    no_core_dump();
                    std::process::abort();
                }
                iris.barrier()?;
                Ok(format!("joined: rank {}", iris.rank()))
            })
            .map(|v| v.join("")),
        "traced" => {
            let dir = std::env::var("IRIS_TEST_TRACE_DIR").unwrap_or_default();
            process_world()?
                .trace(dir)
                .run(|iris| {
                    let _step = iris.trace_span("step", 0);
                    iris.barrier()?;
                    Ok(format!("traced: rank {}", iris.rank()))
                })
                .map(|v| v.join(""))
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

// ----- the nodes --------------------------------------------------------------------------

/// Two nodes: network namespaces joined by a veth pair (deleted on drop, even when a
/// test fails), or two host names on loopback.
struct Nodes {
    /// The namespaces, when there are.
    netns: Option<[String; 2]>,
    /// Rank 0's node's address.
    master_addr: String,
    /// `MASTER_PORT` (rank 0 listens on the next port).
    master_port: u16,
}

static NEXT: AtomicUsize = AtomicUsize::new(0);

fn ip(args: &[&str]) -> std::result::Result<(), String> {
    let out = Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("`ip` cannot run: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "`ip {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

impl Nodes {
    fn new(test: &str) -> Nodes {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let tag = format!("{}x{n}", std::process::id());
        let names = [format!("irisA{tag}"), format!("irisB{tag}")];
        let nodes = Nodes {
            netns: Some(names.clone()),
            master_addr: "10.231.0.1".into(),
            master_port: 29500,
        };
        match nodes.make_namespaces(&names, &tag) {
            Ok(()) => nodes,
            Err(reason) => {
                drop(nodes);
                // straight to the standard error, past the test harness's capture: never
                // silent
                let _ = writeln!(
                    std::io::stderr().lock(),
                    "{test}: the network-namespace variant was SKIPPED ({reason}); running over loopback with IRIS_HOSTNAME naming the nodes instead"
                );
                // a port nobody listens on, and the next one free too with luck
                let port = std::net::TcpListener::bind("127.0.0.1:0")
                    .and_then(|l| l.local_addr())
                    .map(|a| a.port())
                    .expect("a free port");
                Nodes {
                    netns: None,
                    master_addr: "127.0.0.1".into(),
                    master_port: port - 1,
                }
            }
        }
    }

    fn make_namespaces(&self, names: &[String; 2], tag: &str) -> std::result::Result<(), String> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return Err("not root".into());
        }
        if std::env::var_os("IRIS_TEST_NO_NETNS").is_some() {
            return Err("IRIS_TEST_NO_NETNS is set".into());
        }
        let veth = [format!("iv{tag}a"), format!("iv{tag}b")];
        ip(&["netns", "add", &names[0]])?;
        ip(&["netns", "add", &names[1]])?;
        ip(&[
            "link", "add", &veth[0], "type", "veth", "peer", "name", &veth[1],
        ])?;
        for i in 0..2 {
            let addr = format!("10.231.0.{}/24", i + 1);
            ip(&["link", "set", &veth[i], "netns", &names[i]])?;
            ip(&["-n", &names[i], "addr", "add", &addr, "dev", &veth[i]])?;
            ip(&["-n", &names[i], "link", "set", &veth[i], "up"])?;
            ip(&["-n", &names[i], "link", "set", "lo", "up"])?;
        }
        Ok(())
    }

    /// A command running `program` on node `node`.
    fn command(&self, node: usize, program: &str) -> Command {
        let mut command = match &self.netns {
            Some(names) => {
                let mut c = Command::new("ip");
                c.args(["netns", "exec", &names[node], program]);
                c
            }
            None => Command::new(program),
        };
        command.env("IRIS_HOSTNAME", HOSTS[node]);
        command
    }
}

impl Drop for Nodes {
    fn drop(&mut self) {
        if let Some(names) = &self.netns {
            for name in names {
                // deleting a namespace deletes its end of the veth pair, and so both
                let _ = ip(&["netns", "del", name]);
            }
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

/// The environment every rank process gets, on top of `command`'s.
fn rank_command(mut command: Command, role: &str, timeout_s: f64) -> Command {
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
        "LOCAL_RANK",
        "LOCAL_WORLD_SIZE",
        "MASTER_ADDR",
        "MASTER_PORT",
        "IRIS_MASTER_PORT",
        "IRIS_RENDEZVOUS",
        "OMPI_COMM_WORLD_RANK",
        "SLURM_PROCID",
        "IRIS_RANK",
        "IRIS_WORLD_SIZE",
        "IRIS_LOCAL_RANK",
        "IRIS_LOCAL_WORLD_SIZE",
        "IRIS_JOB_ID",
        "IRIS_TEST_DIE_HOST",
    ] {
        command.env_remove(var);
    }
    command
}

fn exe() -> String {
    std::env::current_exe()
        .expect("current_exe")
        .to_string_lossy()
        .into_owned()
}

/// Node `node`'s `iris-run --nnodes 2` running `role`.
fn iris_run_node(nodes: &Nodes, node: usize, role: &str, timeout_s: f64) -> Child {
    iris_run_node_with(nodes, node, role, timeout_s, &[])
}

/// [`iris_run_node`] with more environment for the ranks.
fn iris_run_node_with(
    nodes: &Nodes,
    node: usize,
    role: &str,
    timeout_s: f64,
    env: &[(&str, &str)],
) -> Child {
    let mut command = nodes.command(node, env!("CARGO_BIN_EXE_iris-run"));
    command.args([
        "--nnodes",
        "2",
        "--node-rank",
        &node.to_string(),
        "--nproc-per-node",
        &PER_NODE.to_string(),
        "--master-addr",
        &nodes.master_addr,
        "--master-port",
        &nodes.master_port.to_string(),
        "--",
        &exe(),
    ]);
    rank_command(command, role, timeout_s)
        .envs(env.iter().copied())
        .spawn()
        .expect("spawn iris-run")
}

/// Rank `rank` of `role` on node `node`, with torchrun's variables and no launcher.
fn spawn_rank(
    nodes: &Nodes,
    node: usize,
    rank: usize,
    local: (usize, usize),
    role: &str,
    timeout_s: f64,
    env: &[(&str, &str)],
) -> Child {
    let mut command = rank_command(nodes.command(node, &exe()), role, timeout_s);
    command.envs([
        ("RANK", rank.to_string()),
        ("WORLD_SIZE", WORLD.to_string()),
        ("LOCAL_RANK", local.0.to_string()),
        ("LOCAL_WORLD_SIZE", local.1.to_string()),
        ("MASTER_ADDR", nodes.master_addr.clone()),
        ("MASTER_PORT", nodes.master_port.to_string()),
    ]);
    command.envs(env.iter().copied());
    command.spawn().expect("spawn a rank")
}

#[test]
fn two_nodes_of_two_ranks_meet_gather_and_allocate() {
    let nodes = Nodes::new("two_nodes_of_two_ranks_meet_gather_and_allocate");
    let children = (0..2)
        .map(|node| iris_run_node(&nodes, node, "world", 20.0))
        .collect();
    let ended = wait_all(children, Duration::from_secs(90));
    for (node, e) in ended.iter().enumerate() {
        assert_eq!(e.code, Some(0), "node {node}: {e:#?}");
        for local in 0..PER_NODE {
            let rank = node * PER_NODE + local;
            let line = format!(
                "[rank {rank}] ROLE-OK network ok: rank {rank} of {WORLD} on {}",
                HOSTS[node]
            );
            assert!(e.stdout.contains(&line), "{line}: {e:#?}");
        }
    }
}

#[test]
fn a_traced_world_across_nodes_is_on_rank_0s_clock() {
    let nodes = Nodes::new("a_traced_world_across_nodes_is_on_rank_0s_clock");
    let dir = std::env::temp_dir().join(format!("iris-network-trace-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let dir_text = dir.to_string_lossy().into_owned();
    let env = [("IRIS_TEST_TRACE_DIR", dir_text.as_str())];
    let children = (0..2)
        .map(|node| iris_run_node_with(&nodes, node, "traced", 20.0, &env))
        .collect();
    let ended = wait_all(children, Duration::from_secs(90));
    for (node, e) in ended.iter().enumerate() {
        assert_eq!(e.code, Some(0), "node {node}: {e:#?}");
    }
    let read = |name: &str| -> serde_json::Value {
        let path = dir.join(name);
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path:?}: {e}"))
    };
    for rank in 0..WORLD {
        let file = read(&format!("rank-{rank}.json"));
        let offset = file["host_clock"]["offset_ns"].as_i64().unwrap();
        eprintln!("rank {rank}: host clock {}", file["host_clock"]);
        if rank < PER_NODE {
            // Rank 0's node: its clock, not measured.
            assert_eq!(offset, 0, "rank {rank}");
            assert_eq!(file["host_clock"]["error_ns"], 0, "rank {rank}");
        } else {
            // The other node's ranks measured an offset and its error bounds. Both
            // "nodes" are this machine, whose one clock makes the true offset 0: it lies
            // within the bounds (each is a bound whatever the delays).
            let error = file["host_clock"]["error_ns"].as_u64().unwrap();
            assert!(
                offset.unsigned_abs() <= error && error < 100_000_000,
                "rank {rank}: offset {offset} ns, error {error} ns"
            );
        }
    }
    // Every rank's step lies on one timeline: they all overlap the same barrier.
    let trace = read("trace.json");
    let steps: Vec<(f64, f64)> = trace["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["name"] == "step" && e["ph"] == "X")
        .map(|e| {
            let ts = e["ts"].as_f64().unwrap();
            (ts, ts + e["dur"].as_f64().unwrap())
        })
        .collect();
    assert_eq!(steps.len(), WORLD, "{steps:?}");
    let last_start = steps.iter().map(|s| s.0).fold(f64::MIN, f64::max);
    let first_end = steps.iter().map(|s| s.1).fold(f64::MAX, f64::min);
    assert!(
        last_start <= first_end + 200_000.0,
        "the ranks' steps do not overlap: {steps:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_node_that_never_comes_is_named_within_the_timeout() {
    let nodes = Nodes::new("a_node_that_never_comes_is_named_within_the_timeout");
    let timeout = 2.0;
    let children = (0..PER_NODE)
        .map(|r| spawn_rank(&nodes, 0, r, (r, PER_NODE), "join", timeout, &[]))
        .collect();
    let ended = wait_all(children, Duration::from_secs(60));
    for (r, e) in ended.iter().enumerate() {
        assert_eq!(e.code, Some(1), "rank {r}: {e:#?}");
        assert!(e.stderr.contains("ROLE-ERROR"), "rank {r}: {e:#?}");
        // rank 0 (the hub) names both missing ranks; rank 1 hears it from the hub
        assert!(
            e.stderr.contains("rank(s) 2, 3 did not arrive"),
            "rank {r}: {e:#?}"
        );
        assert!(e.elapsed < Duration::from_secs(15), "rank {r}: {e:#?}");
    }
}

#[test]
fn a_node_killed_mid_run_is_named() {
    let nodes = Nodes::new("a_node_killed_mid_run_is_named");
    let die = [("IRIS_TEST_DIE_HOST", "node-b")];
    let children = (0..WORLD)
        .map(|r| {
            let node = r / PER_NODE;
            let local = (r % PER_NODE, PER_NODE);
            spawn_rank(&nodes, node, r, local, "join", 20.0, &die)
        })
        .collect();
    let ended = wait_all(children, Duration::from_secs(60));
    for (r, e) in ended.iter().enumerate() {
        assert_ne!(e.code, Some(0), "rank {r}: {e:#?}");
    }
    for (r, e) in ended.iter().take(PER_NODE).enumerate() {
        assert_eq!(e.code, Some(1), "rank {r}: {e:#?}");
        assert!(
            e.stderr.contains("on node-b) exited or died")
                && (e.stderr.contains("rank 2 closed") || e.stderr.contains("rank 3 closed")),
            "rank {r}: {e:#?}"
        );
        // named at once, not after the 20 s timeout
        assert!(e.elapsed < Duration::from_secs(15), "rank {r}: {e:#?}");
    }
}

#[test]
fn launcher_claims_that_contradict_the_hosts_are_refused() {
    let nodes = Nodes::new("launcher_claims_that_contradict_the_hosts_are_refused");
    // ranks 0, 1, 2 on node-a and 3 on node-b, each told its node runs two ranks
    let children = (0..WORLD)
        .map(|r| {
            let node = usize::from(r == 3);
            spawn_rank(&nodes, node, r, (r % PER_NODE, PER_NODE), "join", 20.0, &[])
        })
        .collect();
    let ended = wait_all(children, Duration::from_secs(60));
    for (r, e) in ended.iter().enumerate() {
        assert_eq!(e.code, Some(1), "rank {r}: {e:#?}");
        assert!(
            e.stderr.contains("LOCAL_WORLD_SIZE") && e.stderr.contains("node-a"),
            "rank {r}: {e:#?}"
        );
    }
}
