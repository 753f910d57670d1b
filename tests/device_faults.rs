//! Faults across processes while a kernel waits: a rank is killed (SIGKILL) while a kernel
//! on another rank waits for it in the device-side barrier of `iris::ccl`. The waiting
//! kernel's wait is bounded in time; when it gives up it records the rank it waited for, and the
//! host turns that into an error naming the rank, well within `IRIS_TIMEOUT`. Never a
//! hang. Each victim is tried both as a member and as the rank that hosts the rendezvous.
//!
//! Runs on the CPU backend, and on CUDA too when `IRIS_FAULT_BACKENDS` names it (for a GPU
//! machine: `IRIS_FAULT_BACKENDS=cpu,cuda`).
//!
//! The processes are this test binary again, running the `child` test with
//! `IRIS_TEST_ROLE` set; without that variable `child` does nothing.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use iris::ccl::{self, AllReduceAlgo, Ccl, ReduceOp};
use iris::{BackendKind, Error, Iris, World};

const ROLE: &str = "IRIS_TEST_ROLE";
/// The bound on every host wait in the children.
const TIMEOUT_S: u64 = 30;

/// How long a barrier wait waits: long enough that the survivor is still waiting when its
/// peer is killed, short enough that it gives up in about a second.
const WAIT_LIMIT: Duration = Duration::from_secs(1);

fn say(line: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "\n{line}");
    let _ = out.flush();
}

/// One rank of the job: creates the communicator, then the victim waits to be killed and
/// the survivor runs an all-reduce and a barrier and reports what `synchronize` says.
fn rank_main(iris: &Iris, victim: usize) -> iris::Result<String> {
    let ccl = Ccl::new(iris)?.with_wait_limit(WAIT_LIMIT);
    let input = iris.symmetric_full::<f32>(1024, 1.0)?;
    let output = iris.symmetric_full::<f32>(1024, f32::NAN)?;
    // Every rank uses the collective once first: the first use of a kernel unit loads it
    // on every rank together (a host-side step the victim would never reach).
    ccl::all_reduce(&ccl, &input, &output, ReduceOp::Sum, AllReduceAlgo::OneShot)?;
    ccl.synchronize()?;
    output.copy_from_slice(&[f32::NAN; 1024])?;
    iris.barrier()?; // host-side: everything is allocated and loaded on every rank
    say(&format!("READY {}", iris.rank()));
    if iris.rank() == victim {
        std::thread::sleep(Duration::from_secs(60)); // killed long before
        return Ok("the victim was not killed".into());
    }
    let start = Instant::now();
    ccl::all_reduce(&ccl, &input, &output, ReduceOp::Sum, AllReduceAlgo::OneShot)?;
    ccl.barrier()?;
    say(&format!("WAITING {}", iris.rank()));
    let outcome = ccl.synchronize();
    let elapsed = start.elapsed();
    let untouched = output.to_vec()?.iter().all(|x| x.is_nan());
    match outcome {
        Ok(()) => Ok("the barrier passed without the victim".into()),
        Err(err) => {
            say(&format!(
                "SURVIVOR-ERROR after {} ms (output untouched: {untouched}): {err}",
                elapsed.as_millis()
            ));
            Err(err)
        }
    }
}

/// The entry point of every spawned process; does nothing in a normal test run.
#[test]
fn child() {
    let Ok(role) = std::env::var(ROLE) else {
        return;
    };
    let result = match role.as_str() {
        "ccl-victim" => {
            let victim = std::env::var("IRIS_TEST_VICTIM")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(usize::MAX);
            World::from_env().and_then(|w| {
                w.heap_bytes(1 << 20)
                    .run(|iris| rank_main(iris, victim))
                    .map(|v| v.join(""))
            })
        }
        other => Err(Error::InvalidConfig(format!("unknown role {other}"))),
    };
    match result {
        Ok(message) => {
            say(&format!("ROLE-OK {message}"));
            std::process::exit(0);
        }
        Err(err) => {
            eprintln!("ROLE-ERROR {err}");
            std::process::exit(1);
        }
    }
}

// ----- the parent's side ------------------------------------------------------------------

fn unique_job(name: &str) -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    format!(
        "fault-{}-{name}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

fn spawn_rank(backend: BackendKind, job: &str, rank: usize, world: usize, victim: usize) -> Child {
    let exe = std::env::current_exe().expect("current_exe");
    let mut command = Command::new(exe);
    command
        .args(["child", "--exact", "--nocapture", "--test-threads=1"])
        .env(ROLE, "ccl-victim")
        .env("IRIS_BACKEND", backend.name())
        .env("IRIS_TIMEOUT", TIMEOUT_S.to_string())
        .env("IRIS_RANK", rank.to_string())
        .env("IRIS_WORLD_SIZE", world.to_string())
        .env("IRIS_JOB_ID", job)
        .env("IRIS_TEST_VICTIM", victim.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for var in [
        "RANK",
        "WORLD_SIZE",
        "OMPI_COMM_WORLD_RANK",
        "SLURM_PROCID",
        "IRIS_LOCAL_RANK",
        "IRIS_LOCAL_WORLD_SIZE",
    ] {
        command.env_remove(var);
    }
    command.spawn().expect("spawn a rank")
}

/// What one process printed, and how it ended.
#[derive(Debug, Default)]
struct Ended {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    /// From the kill to the end of the process.
    after_kill: Option<Duration>,
}

/// Runs a job of `world` processes, kills `victim` with SIGKILL once every rank is ready
/// (the survivors are then inside or entering the device-side barrier), and waits at
/// most `limit` for the others (then kills them all and fails: a hang).
fn run_job(backend: BackendKind, world: usize, victim: usize, limit: Duration) -> Vec<Ended> {
    let job = unique_job("ccl");
    let mut children: Vec<Child> = (0..world)
        .map(|r| spawn_rank(backend, &job, r, world, victim))
        .collect();
    let (tx, rx) = mpsc::channel::<(usize, Option<String>)>();
    let mut readers = Vec::new();
    for (rank, child) in children.iter_mut().enumerate() {
        let stdout = child.stdout.take().expect("piped stdout");
        let mut stderr = child.stderr.take().expect("piped stderr");
        let tx = tx.clone();
        readers.push(std::thread::spawn(move || {
            let mut all = String::new();
            for line in BufReader::new(stdout).lines().map_while(|l| l.ok()) {
                let _ = tx.send((rank, Some(line.clone())));
                all.push_str(&line);
                all.push('\n');
            }
            let _ = tx.send((rank, None));
            let mut err = String::new();
            let _ = stderr.read_to_string(&mut err);
            (all, err)
        }));
    }
    drop(tx);
    let start = Instant::now();
    // every rank ready, and the survivors waiting
    let mut ready = vec![false; world];
    let mut waiting = vec![false; world];
    let mut closed = vec![false; world];
    let mut killed_at = None;
    while closed.iter().any(|c| !c) {
        let left = limit.saturating_sub(start.elapsed());
        match rx.recv_timeout(left) {
            Ok((rank, Some(line))) => {
                if line.starts_with("READY ") {
                    ready[rank] = true;
                }
                if line.starts_with("WAITING ") {
                    waiting[rank] = true;
                }
            }
            Ok((rank, None)) => closed[rank] = true,
            Err(_) => {
                for child in &mut children {
                    let _ = child.kill();
                }
                panic!("the job hung for {limit:?} (ready {ready:?}, waiting {waiting:?})");
            }
        }
        let survivors_waiting = (0..world).filter(|&r| r != victim).all(|r| waiting[r]);
        if killed_at.is_none() && ready.iter().all(|&r| r) && survivors_waiting {
            // let the kernels spin a little, then kill the victim
            std::thread::sleep(Duration::from_millis(100));
            let _ = children[victim].kill();
            killed_at = Some(Instant::now());
        }
        let ended_early =
            closed[victim] || (0..world).any(|r| r != victim && closed[r] && !waiting[r]);
        if killed_at.is_none() && ended_early {
            // a rank ended before it could wait: stop the job, report it below
            for child in &mut children {
                let _ = child.kill();
            }
            break;
        }
    }
    let mut ended: Vec<Ended> = Vec::new();
    for (child, reader) in children.iter_mut().zip(readers) {
        let status = child.wait().expect("wait");
        let (stdout, stderr) = reader.join().unwrap_or_default();
        ended.push(Ended {
            code: status.code(),
            stdout,
            stderr,
            after_kill: killed_at.map(|k| k.elapsed()),
        });
    }
    assert!(
        killed_at.is_some(),
        "a rank ended before the victim was killed: {ended:#?}"
    );
    ended
}

fn backends() -> Vec<BackendKind> {
    let names = std::env::var("IRIS_FAULT_BACKENDS").unwrap_or_else(|_| "cpu".into());
    names
        .split(',')
        .filter(|n| !n.trim().is_empty())
        .map(|n| BackendKind::from_name(n).expect("IRIS_FAULT_BACKENDS"))
        .collect()
}

fn check_survivors(backend: BackendKind, world: usize, victim: usize) {
    let started = Instant::now();
    let ended = run_job(backend, world, victim, Duration::from_secs(TIMEOUT_S + 30));
    assert_eq!(
        ended[victim].code, None,
        "the victim was killed: {ended:#?}"
    );
    let mut barriers = Vec::new();
    for (rank, e) in ended.iter().enumerate().filter(|&(r, _)| r != victim) {
        assert_eq!(e.code, Some(1), "{backend}: rank {rank} must fail: {e:#?}");
        let line = e
            .stdout
            .lines()
            .find(|l| l.starts_with("SURVIVOR-ERROR"))
            .unwrap_or_else(|| panic!("{backend}: rank {rank} reported nothing: {e:#?}"));
        let names = format!("rank {rank} stopped waiting in a device-side barrier (epoch ");
        let missing = format!("): rank {victim} did not arrive within");
        assert!(
            line.contains(&names) && line.contains(&missing),
            "{backend}: {line}"
        );
        assert!(line.contains("output untouched: true"), "{backend}: {line}");
        let barrier = line
            .split_once("(epoch ")
            .and_then(|(_, rest)| rest.split_once(')'))
            .map(|(barrier, _)| barrier.to_string())
            .unwrap_or_default();
        barriers.push(barrier);
        assert!(
            e.stderr
                .contains(&format!("ROLE-ERROR rank {rank} failed: {names}"))
                && e.stderr.contains(&missing),
            "{backend}: rank {rank}: {e:#?}"
        );
        let after = e.after_kill.unwrap_or_default();
        assert!(
            after < Duration::from_secs(TIMEOUT_S),
            "{backend}: rank {rank} ended {after:?} after the kill, past IRIS_TIMEOUT: {e:#?}"
        );
        eprintln!("{backend}, {world} ranks, rank {victim} killed: rank {rank}: {line} (process ended {after:.2?} after the kill)");
    }
    // Whether a survivor gave up itself or was told to stop by one that did, every survivor
    // names the same barrier, a real one (epochs start at 1).
    assert!(
        barriers
            .iter()
            .all(|b| *b == barriers[0] && !b.starts_with("0,")),
        "{backend}: the survivors name different barriers: {barriers:?}"
    );
    eprintln!("{backend}: job of {world} in {:.2?}", started.elapsed());
}

#[test]
fn a_rank_killed_while_a_kernel_waits_for_it_is_named_by_the_survivors() {
    for backend in backends() {
        // a member dies; then the rank that hosts the rendezvous
        check_survivors(backend, 2, 1);
        check_survivors(backend, 3, 0);
    }
}
