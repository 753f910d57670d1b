//! The logic of the `iris-run` launcher: start N processes of one program as the ranks of
//! a fresh job (or as this node's ranks of a job on several nodes, torchrun's way: one
//! `iris-run` a node, each with `--nnodes`, `--node-rank`, `--master-addr`,
//! `--master-port`), forward their output line by line with a `[rank K] ` prefix, and
//! stop this node's ranks when one fails.
//!
//! Each rank gets `IRIS_RANK`, `IRIS_WORLD_SIZE`, `IRIS_LOCAL_RANK`,
//! `IRIS_LOCAL_WORLD_SIZE` and `IRIS_JOB_ID` (see `iris_host::transport::env`), the same
//! values under torchrun's names (`RANK`, `WORLD_SIZE`, `LOCAL_RANK`,
//! `LOCAL_WORLD_SIZE`), `MASTER_ADDR` and `MASTER_PORT`, its
//! own process group (so that stopping it also stops what it started), standard input
//! from `/dev/null`, and is killed if the launcher dies. When a rank exits with a non-zero
//! code or is killed by a signal, the launcher sends the other ranks `SIGTERM` (then
//! `SIGKILL` after a grace period), and exits non-zero, naming the rank that failed first
//! and how. `SIGINT`, `SIGTERM` and `SIGHUP` sent to the launcher are forwarded to every
//! rank.

use std::ffi::OsString;
use std::fmt;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use iris_host::{Error, Result};

/// How long ranks get between `SIGTERM` and `SIGKILL` once the job is being stopped.
pub const KILL_GRACE: Duration = Duration::from_secs(3);

/// What the command line asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Invocation {
    /// Run a job.
    Run(Options),
    /// Print the usage.
    Help,
    /// Print the version.
    Version,
}

/// A job to run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// How many ranks (processes) on this node.
    pub ranks: usize,
    /// How many nodes the job spans (one `iris-run` each).
    pub nnodes: usize,
    /// This node's index, from 0: its ranks are `node_rank * ranks ..`.
    pub node_rank: usize,
    /// Rank 0's node.
    pub master_addr: String,
    /// The job's port on rank 0's node (its hub listens on the next one).
    pub master_port: u16,
    /// The program every rank runs.
    pub program: OsString,
    /// Its arguments.
    pub args: Vec<OsString>,
}

/// torchrun's default `--master-addr`.
pub const DEFAULT_MASTER_ADDR: &str = "127.0.0.1";
/// torchrun's default `--master-port`.
pub const DEFAULT_MASTER_PORT: u16 = 29500;

/// The usage text.
pub const USAGE: &str = "\
usage: iris-run -n N [--nnodes M --node-rank K --master-addr HOST --master-port P]
                [--] PROGRAM [ARGS...]

Runs N processes of PROGRAM as the ranks of one job on this node; with --nnodes M, as
node K's N ranks of a job of M*N ranks on M nodes (run one iris-run on each node, with
the same M, N, HOST and P). Each rank gets IRIS_RANK, IRIS_WORLD_SIZE, IRIS_LOCAL_RANK,
IRIS_LOCAL_WORLD_SIZE, IRIS_JOB_ID, the same values as RANK, WORLD_SIZE, LOCAL_RANK,
LOCAL_WORLD_SIZE, and MASTER_ADDR, MASTER_PORT; its output is forwarded with a
`[rank K] ` prefix. When a rank fails, this node's other ranks are stopped and iris-run
exits non-zero, naming the rank (the other nodes' ranks learn it from the rendezvous).

options:
  -n, --ranks, --nproc-per-node N   ranks (processes) on this node, at least 1
  --nnodes M                        nodes of the job (default 1)
  --node-rank K                     this node's index, below M (default 0)
  --master-addr HOST                rank 0's node (default 127.0.0.1)
  --master-port P                   the job's port there (default 29500); rank 0's
                                    rendezvous listens on P + 1
  -h, --help                        print this help
  -V, --version                     print the version";

/// Parses the arguments after the program name.
pub fn parse_args(args: impl IntoIterator<Item = OsString>) -> Result<Invocation, String> {
    let mut args = args.into_iter();
    let mut ranks: Option<usize> = None;
    let (mut nnodes, mut node_rank) = (1usize, 0usize);
    let mut master_addr = DEFAULT_MASTER_ADDR.to_string();
    let mut master_port = DEFAULT_MASTER_PORT;
    let parse_ranks = |v: &str| -> Result<usize, String> {
        match v.parse::<usize>() {
            Ok(n) if n >= 1 => Ok(n),
            _ => Err(format!(
                "-n expects a number of ranks of at least 1, got {v:?}"
            )),
        }
    };
    let program = loop {
        let Some(arg) = args.next() else {
            return Err("no program to run".into());
        };
        let Some(text) = arg.to_str() else {
            break arg;
        };
        // `--option=value` and `--option value`
        let (name, inline) = match text.split_once('=') {
            Some((name, value)) if name.starts_with("--") => (name, Some(value.to_string())),
            _ => (text, None),
        };
        let mut value = |what: &str| -> Result<String, String> {
            match &inline {
                Some(v) => Ok(v.clone()),
                None => args
                    .next()
                    .map(|v| v.to_string_lossy().into_owned())
                    .ok_or_else(|| format!("{name} expects {what}")),
            }
        };
        match name {
            "--" => match args.next() {
                Some(program) => break program,
                None => return Err("no program after `--`".into()),
            },
            "-h" | "--help" => return Ok(Invocation::Help),
            "-V" | "--version" => return Ok(Invocation::Version),
            "-n" | "--ranks" | "-np" | "--nproc-per-node" | "--nproc_per_node" => {
                ranks = Some(parse_ranks(&value("a number of ranks")?)?);
            }
            "--nnodes" => {
                let v = value("a number of nodes")?;
                nnodes = v.parse().ok().filter(|&n| n >= 1).ok_or_else(|| {
                    format!("--nnodes expects a number of nodes of at least 1, got {v:?}")
                })?;
            }
            "--node-rank" | "--node_rank" => {
                let v = value("a node index")?;
                node_rank = v
                    .parse()
                    .map_err(|_| format!("--node-rank expects a node index, got {v:?}"))?;
            }
            "--master-addr" | "--master_addr" => {
                master_addr = value("a host")?;
                if master_addr.trim().is_empty() {
                    return Err("--master-addr expects a host".into());
                }
            }
            "--master-port" | "--master_port" => {
                let v = value("a port")?;
                master_port = v
                    .parse::<u16>()
                    .ok()
                    .filter(|&p| p < u16::MAX)
                    .ok_or_else(|| {
                        format!("--master-port expects a port below 65535, got {v:?}")
                    })?;
            }
            _ if text.starts_with("-n") && text.len() > 2 && !text.starts_with("--") => {
                ranks = Some(parse_ranks(&text[2..])?);
            }
            _ if text.starts_with('-') => return Err(format!("unknown option {text}")),
            _ => break arg,
        }
    };
    let ranks = ranks.ok_or("the number of ranks is missing: -n N")?;
    if node_rank >= nnodes {
        return Err(format!(
            "--node-rank {node_rank} is not below --nnodes {nnodes}"
        ));
    }
    Ok(Invocation::Run(Options {
        ranks,
        nnodes,
        node_rank,
        master_addr,
        master_port,
        program,
        args: args.collect(),
    }))
}

/// A job id no other job on this node uses now: the launcher's pid and the time.
pub fn new_job_id() -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("iris-run-{}-{nanos:x}", std::process::id())
}

impl Options {
    /// How many ranks the job has, on every node.
    pub fn world_size(&self) -> usize {
        self.ranks * self.nnodes
    }

    /// The rank of this node's `local`-th process.
    pub fn global_rank(&self, local: usize) -> usize {
        self.node_rank * self.ranks + local
    }

    /// The job's id: fresh for a job on this node; for a job on several nodes, the same
    /// on every node (from rank 0's address).
    pub fn job_id(&self) -> String {
        if self.nnodes > 1 {
            format!("iris-run:{}:{}", self.master_addr, self.master_port)
        } else {
            new_job_id()
        }
    }

    /// The variables this node's `local`-th process gets, in job `job_id`.
    pub fn rank_vars(&self, local: usize, job_id: &str) -> Vec<(&'static str, String)> {
        let (rank, world) = (self.global_rank(local), self.world_size());
        vec![
            ("IRIS_RANK", rank.to_string()),
            ("IRIS_WORLD_SIZE", world.to_string()),
            ("IRIS_LOCAL_RANK", local.to_string()),
            ("IRIS_LOCAL_WORLD_SIZE", self.ranks.to_string()),
            ("IRIS_JOB_ID", job_id.to_string()),
            ("RANK", rank.to_string()),
            ("WORLD_SIZE", world.to_string()),
            ("LOCAL_RANK", local.to_string()),
            ("LOCAL_WORLD_SIZE", self.ranks.to_string()),
            ("MASTER_ADDR", self.master_addr.clone()),
            ("MASTER_PORT", self.master_port.to_string()),
        ]
    }
}

/// How a rank ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// It exited with this code.
    Code(i32),
    /// A signal killed it.
    Signal(i32),
}

impl Exit {
    /// Whether it succeeded.
    pub fn success(self) -> bool {
        self == Exit::Code(0)
    }

    /// The launcher's exit code for a job that ended this way: the code, or 128 plus the
    /// signal (as shells report it).
    pub fn code(self) -> i32 {
        match self {
            Exit::Code(c) => c,
            Exit::Signal(s) => 128 + s,
        }
    }
}

impl fmt::Display for Exit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Exit::Code(c) => write!(f, "exited with code {c}"),
            Exit::Signal(s) => write!(f, "was killed by signal {} ({s})", signal_name(s)),
        }
    }
}

/// The name of signal `sig` (`SIGSEGV`), or `signal N`.
pub fn signal_name(sig: i32) -> String {
    let name = match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        _ => return format!("signal {sig}"),
    };
    name.to_string()
}

/// How a job ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// How each rank ended, by rank.
    pub exits: Vec<Exit>,
    /// The rank that failed first, and how (`None` when every rank succeeded).
    pub first_failure: Option<(usize, Exit)>,
    /// The signal the launcher received and forwarded, if any.
    pub interrupted: Option<i32>,
}

impl Outcome {
    /// The launcher's exit code: 0 when every rank succeeded, else that of the first
    /// failure (never 0), or 128 plus the signal that interrupted the launcher.
    pub fn exit_code(&self) -> i32 {
        if let Some(sig) = self.interrupted {
            return 128 + sig;
        }
        match self.first_failure {
            None => 0,
            Some((_, exit)) => match exit.code() {
                c if (1..=255).contains(&c) => c,
                _ => 1,
            },
        }
    }
}

/// The last signal the launcher received (0: none).
static RECEIVED: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    RECEIVED.store(sig, Ordering::SeqCst);
}

fn install_signal_handlers() {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: the handler only stores to an atomic, which is async-signal-safe; the
        // sigaction struct is fully initialised.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
            libc::sigemptyset(&mut action.sa_mask);
            action.sa_flags = libc::SA_RESTART;
            libc::sigaction(sig, &action, std::ptr::null_mut());
        }
    }
}

/// Sends `sig` to rank process group `pid` (the rank and what it started).
fn signal_group(pid: u32, sig: i32) {
    // SAFETY: kill has no memory-safety preconditions; the group exists while its leader
    // is not reaped, and the launcher reaps only after it stops signalling.
    unsafe {
        libc::kill(-(pid as libc::pid_t), sig);
    }
}

/// Waits, without reaping, until process `pid` ends; returns how it ended.
fn wait_without_reaping(pid: u32) -> Option<Exit> {
    loop {
        // SAFETY: `info` is a plain C struct the call fills; WNOWAIT leaves the child
        // to be reaped by its `Child`.
        let (rc, info) = unsafe {
            let mut info: libc::siginfo_t = std::mem::zeroed();
            let rc = libc::waitid(
                libc::P_PID,
                pid as libc::id_t,
                &mut info,
                libc::WEXITED | libc::WNOWAIT,
            );
            (rc, info)
        };
        if rc == 0 {
            // SAFETY: waitid succeeded for a child that ended: the status field is set.
            let status = unsafe { info.si_status() };
            return Some(match info.si_code {
                libc::CLD_EXITED => Exit::Code(status),
                _ => Exit::Signal(status),
            });
        }
        if std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return None;
        }
    }
}

/// Copies `from` line by line to `to` with `prefix`, holding `to`'s lock per line.
fn forward(from: impl Read, prefix: String, to: fn() -> Box<dyn Write>) {
    let mut reader = BufReader::new(from);
    let mut line = Vec::new();
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {
                if line.last() != Some(&b'\n') {
                    line.push(b'\n');
                }
                let mut out = to();
                let _ = out.write_all(prefix.as_bytes());
                let _ = out.write_all(&line);
                let _ = out.flush();
            }
        }
    }
}

fn stdout_writer() -> Box<dyn Write> {
    Box::new(std::io::stdout().lock())
}

fn stderr_writer() -> Box<dyn Write> {
    Box::new(std::io::stderr().lock())
}

fn note(message: &str) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "iris-run: {message}");
}

fn spawn_rank(options: &Options, local: usize, job_id: &str) -> std::io::Result<Child> {
    let mut command = Command::new(&options.program);
    command
        .args(&options.args)
        .envs(options.rank_vars(local, job_id))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    // SAFETY: prctl is async-signal-safe and touches no memory of the parent.
    unsafe {
        command.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    command.spawn()
}

/// Runs the job `options` describes until every rank has ended; returns how it ended.
/// Errors only when a rank cannot be started (the ranks already started are stopped).
pub fn run(options: &Options) -> Result<Outcome> {
    install_signal_handlers();
    let job_id = options.job_id();
    let mut children: Vec<Child> = Vec::with_capacity(options.ranks);
    for rank in 0..options.ranks {
        match spawn_rank(options, rank, &job_id) {
            Ok(child) => children.push(child),
            Err(source) => {
                for child in &mut children {
                    signal_group(child.id(), libc::SIGKILL);
                    let _ = child.wait();
                }
                return Err(Error::Io {
                    what: format!(
                        "starting rank {} ({})",
                        options.global_rank(rank),
                        options.program.to_string_lossy()
                    ),
                    source,
                });
            }
        }
    }
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let mut forwarders = 0usize;
    for (local, child) in children.iter_mut().enumerate() {
        let prefix = format!("[rank {}] ", options.global_rank(local));
        if let Some(out) = child.stdout.take() {
            let (p, tx) = (prefix.clone(), done_tx.clone());
            if std::thread::Builder::new()
                .spawn(move || {
                    forward(out, p, stdout_writer);
                    let _ = tx.send(());
                })
                .is_ok()
            {
                forwarders += 1;
            }
        }
        if let Some(err) = child.stderr.take() {
            let tx = done_tx.clone();
            if std::thread::Builder::new()
                .spawn(move || {
                    forward(err, prefix, stderr_writer);
                    let _ = tx.send(());
                })
                .is_ok()
            {
                forwarders += 1;
            }
        }
    }
    drop(done_tx);
    let (exit_tx, exit_rx) = mpsc::channel::<(usize, Option<Exit>)>();
    for (rank, child) in children.iter().enumerate() {
        let (pid, tx) = (child.id(), exit_tx.clone());
        let spawned = std::thread::Builder::new().spawn(move || {
            let _ = tx.send((rank, wait_without_reaping(pid)));
        });
        if spawned.is_err() {
            let _ = exit_tx.send((rank, None));
        }
    }
    drop(exit_tx);

    let mut exits: Vec<Option<Exit>> = vec![None; options.ranks];
    let mut first_failure: Option<(usize, Exit)> = None;
    let mut interrupted: Option<i32> = None;
    let mut stopping_since: Option<Instant> = None;
    let mut killed = false;
    let pids: Vec<u32> = children.iter().map(Child::id).collect();
    let stop = |exits: &[Option<Exit>], sig: i32| {
        for (rank, &pid) in pids.iter().enumerate() {
            if exits[rank].is_none() {
                signal_group(pid, sig);
            }
        }
    };
    while exits.iter().any(Option::is_none) {
        let sig = RECEIVED.swap(0, Ordering::SeqCst);
        if sig != 0 {
            note(&format!(
                "received {}; forwarding it to the ranks",
                signal_name(sig)
            ));
            interrupted.get_or_insert(sig);
            stop(&exits, sig);
            stopping_since.get_or_insert_with(Instant::now);
        }
        if let Some(since) = stopping_since {
            if !killed && since.elapsed() > KILL_GRACE {
                stop(&exits, libc::SIGKILL);
                killed = true;
            }
        }
        match exit_rx.recv_timeout(Duration::from_millis(50)) {
            Ok((rank, exit)) => {
                // A rank whose status cannot be read is reaped below; count it failed.
                let exit = match exit {
                    Some(exit) => exit,
                    None => match children[rank].wait() {
                        Ok(status) => exit_of(status),
                        Err(_) => Exit::Code(1),
                    },
                };
                exits[rank] = Some(exit);
                if !exit.success() && first_failure.is_none() && stopping_since.is_none() {
                    first_failure = Some((rank, exit));
                    note(&format!(
                        "rank {} {exit}; stopping the other ranks",
                        options.global_rank(rank)
                    ));
                    stop(&exits, libc::SIGTERM);
                    stopping_since = Some(Instant::now());
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    for child in &mut children {
        let _ = child.wait();
    }
    // Output still in the pipes; bounded, in case a rank left something holding them.
    let until = Instant::now() + Duration::from_secs(2);
    for _ in 0..forwarders {
        let left = until.saturating_duration_since(Instant::now());
        if done_rx.recv_timeout(left).is_err() {
            break;
        }
    }
    let exits: Vec<Exit> = exits
        .into_iter()
        .map(|e| e.unwrap_or(Exit::Code(1)))
        .collect();
    let outcome = Outcome {
        exits,
        first_failure,
        interrupted,
    };
    if let Some((rank, exit)) = outcome.first_failure {
        note(&format!(
            "job failed: rank {} {exit} first; the other {} rank(s) of this node were stopped or ended",
            options.global_rank(rank),
            options.ranks - 1
        ));
    }
    Ok(outcome)
}

fn exit_of(status: std::process::ExitStatus) -> Exit {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => Exit::Code(code),
        (None, Some(sig)) => Exit::Signal(sig),
        (None, None) => Exit::Code(1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Invocation, String> {
        parse_args(args.iter().map(OsString::from))
    }

    fn run_options(ranks: usize, program: &str, args: &[&str]) -> Invocation {
        Invocation::Run(Options {
            ranks,
            nnodes: 1,
            node_rank: 0,
            master_addr: DEFAULT_MASTER_ADDR.into(),
            master_port: DEFAULT_MASTER_PORT,
            program: program.into(),
            args: args.iter().map(OsString::from).collect(),
        })
    }

    #[test]
    fn parses_the_command_line() {
        assert_eq!(
            parse(&["-n", "4", "prog", "-x", "--y"]).unwrap(),
            run_options(4, "prog", &["-x", "--y"])
        );
        assert_eq!(
            parse(&["-n2", "--", "prog", "-n", "3"]).unwrap(),
            run_options(2, "prog", &["-n", "3"])
        );
        assert_eq!(
            parse(&["--ranks=8", "prog"]).unwrap(),
            run_options(8, "prog", &[])
        );
        assert_eq!(
            parse(&["--ranks", "1", "--", "--prog"]).unwrap(),
            run_options(1, "--prog", &[])
        );
        assert_eq!(parse(&["--help"]).unwrap(), Invocation::Help);
        assert_eq!(parse(&["-V"]).unwrap(), Invocation::Version);
        for (bad, says) in [
            (&["prog"][..], "-n N"),
            (&["-n", "0", "prog"][..], "at least 1"),
            (&["-n", "x", "prog"][..], "at least 1"),
            (&["-n"][..], "expects a number"),
            (&["-n", "2"][..], "no program"),
            (&["-n", "2", "--"][..], "no program after"),
            (&["-q", "prog"][..], "unknown option -q"),
        ] {
            let err = parse(bad).unwrap_err();
            assert!(err.contains(says), "{bad:?}: {err}");
        }
    }

    #[test]
    fn exit_codes_and_names() {
        assert_eq!(
            Exit::Signal(libc::SIGSEGV).to_string(),
            "was killed by signal SIGSEGV (11)"
        );
        assert_eq!(Exit::Code(3).to_string(), "exited with code 3");
        let outcome = |first| Outcome {
            exits: vec![],
            first_failure: first,
            interrupted: None,
        };
        assert_eq!(outcome(None).exit_code(), 0);
        assert_eq!(outcome(Some((1, Exit::Code(7)))).exit_code(), 7);
        assert_eq!(outcome(Some((1, Exit::Code(256)))).exit_code(), 1);
        assert_eq!(
            outcome(Some((0, Exit::Signal(libc::SIGABRT)))).exit_code(),
            134
        );
        let Invocation::Run(options) = parse(&["-n", "4", "prog"]).unwrap() else {
            panic!("not a run");
        };
        let vars = options.rank_vars(2, "job");
        assert!(vars.contains(&("IRIS_RANK", "2".into())));
        assert!(vars.contains(&("IRIS_JOB_ID", "job".into())));
        assert!(vars.contains(&("MASTER_PORT", "29500".into())));
        assert_ne!(new_job_id(), new_job_id());
        assert_ne!(options.job_id(), options.job_id());
    }

    #[test]
    fn parses_torchrun_style_multi_node_options() {
        let Invocation::Run(o) = parse(&[
            "--nnodes=2",
            "--node-rank",
            "1",
            "--nproc-per-node",
            "3",
            "--master-addr",
            "10.1.0.1",
            "--master_port=7000",
            "prog",
        ])
        .unwrap() else {
            panic!("not a run");
        };
        assert_eq!((o.nnodes, o.node_rank, o.ranks), (2, 1, 3));
        assert_eq!((o.master_addr.as_str(), o.master_port), ("10.1.0.1", 7000));
        assert_eq!((o.world_size(), o.global_rank(2)), (6, 5));
        assert_eq!(o.job_id(), "iris-run:10.1.0.1:7000");
        let vars = o.rank_vars(2, &o.job_id());
        for expected in [
            ("IRIS_RANK", "5"),
            ("IRIS_WORLD_SIZE", "6"),
            ("IRIS_LOCAL_RANK", "2"),
            ("IRIS_LOCAL_WORLD_SIZE", "3"),
            ("RANK", "5"),
            ("WORLD_SIZE", "6"),
            ("LOCAL_RANK", "2"),
            ("LOCAL_WORLD_SIZE", "3"),
            ("MASTER_ADDR", "10.1.0.1"),
            ("MASTER_PORT", "7000"),
        ] {
            assert!(
                vars.contains(&(expected.0, expected.1.into())),
                "{expected:?}"
            );
        }
        for (bad, says) in [
            (
                &["--nnodes", "2", "--node-rank", "2", "-n", "1", "p"][..],
                "not below --nnodes 2",
            ),
            (&["--nnodes", "0", "-n", "1", "p"][..], "at least 1"),
            (
                &["--master-port", "65535", "-n", "1", "p"][..],
                "below 65535",
            ),
            (&["--master-addr", "", "-n", "1", "p"][..], "expects a host"),
            (
                &["-n", "1", "--node-rank"][..],
                "--node-rank expects a node index",
            ),
        ] {
            let err = parse(bad).unwrap_err();
            assert!(err.contains(says), "{bad:?}: {err}");
        }
    }
}
