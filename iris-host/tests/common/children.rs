//! Rank processes of a test: waiting for all of them, bounded in time.

use std::io::Read;
use std::process::Child;
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// One process's end.
#[derive(Debug)]
pub struct Ended {
    /// Its exit code (none when a signal ended it).
    pub code: Option<i32>,
    /// What it printed.
    pub stdout: String,
    /// What it printed on stderr.
    pub stderr: String,
    /// How long it ran.
    pub elapsed: Duration,
}

/// Waits for every child, at most `limit` (then kills them all and fails: a hang).
pub fn wait_all(children: Vec<Child>, limit: Duration) -> Vec<Ended> {
    let start = Instant::now();
    let pids: Vec<u32> = children.iter().map(Child::id).collect();
    let (tx, rx) = mpsc::channel();
    for (i, mut child) in children.into_iter().enumerate() {
        let tx = tx.clone();
        std::thread::spawn(move || {
            let mut stdout = String::new();
            let mut stderr = String::new();
            let mut out = child.stdout.take().expect("piped stdout");
            let mut err = child.stderr.take().expect("piped stderr");
            let reader = std::thread::spawn(move || {
                let mut s = String::new();
                let _ = err.read_to_string(&mut s);
                s
            });
            let _ = out.read_to_string(&mut stdout);
            stderr.push_str(&reader.join().unwrap_or_default());
            let status = child.wait().expect("wait");
            let _ = tx.send((
                i,
                Ended {
                    code: status.code(),
                    stdout,
                    stderr,
                    elapsed: start.elapsed(),
                },
            ));
        });
    }
    drop(tx);
    let mut ended: Vec<Option<Ended>> = pids.iter().map(|_| None).collect();
    while ended.iter().any(Option::is_none) {
        let left = limit.saturating_sub(start.elapsed());
        match rx.recv_timeout(left) {
            Ok((i, e)) => ended[i] = Some(e),
            Err(_) => {
                for &pid in &pids {
                    // SAFETY: plain kill of our own children.
                    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
                }
                panic!("processes hung for {limit:?}: {ended:#?}");
            }
        }
    }
    ended.into_iter().flatten().collect()
}

/// No core file when a rank process aborts on purpose (a test of a rank that dies).
pub fn no_core_dump() {
    let zero = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: a plain struct passed by reference.
    unsafe { libc::setrlimit(libc::RLIMIT_CORE, &zero) };
}
