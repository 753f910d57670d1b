//! A failed world ends. A rank that panics while its peers' kernels wait in
//! `signal_wait_until` raises the world's abort: the waits give up within milliseconds,
//! each peer's `synchronize` says why, and `World::run` returns the panic, long before the
//! wait limit. A kernel that spins forever (a hand-written loop that never checks
//! anything) is named by the host after `IRIS_TIMEOUT`, nothing hangs on the way out, and
//! the process exits after printing the error (checked in a child process). On the CPU
//! backend and on every GPU backend present.

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::backends;
use iris::{BackendKind, Error, World};

#[iris::kernels]
mod waits {
    use iris::prelude::*;

    /// Waits for a signal nobody raises; writes what it saw and whether the world aborted.
    #[kernel]
    pub fn wait_forever(flag: Symmetric<u64>, out: *mut u64) {
        if thread_idx_x() == 0 {
            let seen = signal_wait_until(flag, Cmp::Eq, 1);
            unsafe {
                *out = seen;
                *out.add(1) = world_aborted(flag) as u64;
            }
        }
    }

    /// Spins until this rank's `p[0]` is 12345, which nothing writes: a user's loop
    /// without a bound.
    #[kernel]
    pub fn spin_forever(p: Symmetric<u64>, me: u32) {
        if thread_idx_x() == 0 {
            loop {
                if atomic_load(p, me, Ordering::Relaxed, Scope::System) == 12345 {
                    break;
                }
                nanosleep(1000);
            }
        }
    }
}

#[test]
fn a_rank_that_panics_ends_its_peers_signal_waits() {
    for backend in backends() {
        for ranks in [2usize, 4] {
            let panicked_at = std::sync::Mutex::new(None::<Instant>);
            let start = Instant::now();
            let result = World::threads(ranks)
                .backend(backend)
                .heap_bytes(1 << 20)
                .timeout(Duration::from_secs(120))
                .run(|iris| {
                    let flag = iris.symmetric_zeros::<u64>(1)?;
                    let out = iris.full::<u64>(2, 7)?;
                    if iris.rank() != 0 {
                        waits::wait_forever::launch(iris, (1, 1), &flag, &out)?;
                    }
                    iris.host_barrier()?;
                    if iris.rank() == 0 {
                        std::thread::sleep(Duration::from_millis(200));
                        *panicked_at.lock().unwrap() = Some(Instant::now());
                        panic!("a planted panic");
                    }
                    let err = iris.synchronize().expect_err("the wait cannot succeed");
                    let ended = Instant::now();
                    assert!(
                        matches!(&err, Error::SignalWait { aborted: true, kernel, .. } if kernel == "wait_forever"),
                        "{backend}: rank {}: {err}",
                        iris.rank()
                    );
                    assert!(err.to_string().contains("rank 0 panicked: a planted panic"), "{err}");
                    assert_eq!(out.to_vec()?, vec![0, 1], "the wait returned the value it saw; world_aborted");
                    Ok(ended)
                });
            let returned = start.elapsed();
            let err = result.expect_err("rank 0 panicked");
            assert!(
                matches!(err, Error::RankPanicked { rank: 0, .. }),
                "{backend}: World::run returns the panic, not a peer's wait: {err}"
            );
            let panicked = panicked_at
                .lock()
                .unwrap()
                .expect("rank 0 reached its panic");
            let to_return = panicked.elapsed();
            eprintln!(
                "{backend}, {ranks} ranks: panic to World::run's return {:.1} ms (run took {returned:.2?}; the wait limit is 108 s)",
                (returned.as_secs_f64() - (panicked - start).as_secs_f64()) * 1e3
            );
            assert!(
                to_return < Duration::from_secs(10),
                "{backend}: the peers waited {to_return:?}"
            );
        }
    }
}

/// The child of `a_kernel_that_spins_forever_is_named_and_the_process_exits`.
#[test]
#[ignore = "run by its parent test in a child process"]
fn spinning_child() {
    let Ok(backend) = std::env::var("IRIS_SPIN_BACKEND") else {
        return;
    };
    let backend = BackendKind::from_name(&backend).unwrap();
    let start = Instant::now();
    let err = World::threads(2)
        .backend(backend)
        .heap_bytes(1 << 20)
        .timeout(Duration::from_secs(3))
        .run(|iris| {
            let p = iris.symmetric_zeros::<u64>(1)?;
            if iris.rank() == 1 {
                waits::spin_forever::launch(iris, (1, 1), &p, 1)?;
                // After the modules loaded (on a GPU whose driver compiles the PTX for the
                // first time, that alone can take 15 s): the parent's bound counts from here.
                println!("SPIN-CHILD-LAUNCHED {:.3}", start.elapsed().as_secs_f64());
            }
            iris.synchronize()
        })
        .expect_err("rank 1's kernel never ends");
    println!("SPIN-CHILD-ERROR: {err}");
    println!("SPIN-CHILD-RETURNED");
}

#[test]
fn a_kernel_that_spins_forever_is_named_and_the_process_exits() {
    let exe = std::env::current_exe().unwrap();
    for backend in backends() {
        let start = Instant::now();
        let mut child = Command::new(&exe)
            .args([
                "--exact",
                "spinning_child",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("IRIS_SPIN_BACKEND", backend.to_string())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // The child's own bound: IRIS_TIMEOUT (3 s) and a few seconds; kill it past 60 s.
        let status = loop {
            if let Some(status) = child.try_wait().unwrap() {
                break Some(status);
            }
            if start.elapsed() > Duration::from_secs(60) {
                let _ = child.kill();
                break None;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let took = start.elapsed();
        let output = child.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        let status = status.unwrap_or_else(|| {
            panic!("{backend}: the child did not exit in 60 s:\n{stdout}\n{stderr}")
        });
        // Seconds from the child's start to its spinning kernel's launch (it prints them).
        let launched = stdout
            .lines()
            .find_map(|l| l.split("SPIN-CHILD-LAUNCHED ").nth(1))
            .and_then(|t| t.trim().parse::<f64>().ok());
        eprintln!("{backend}: a forever-spinning kernel: the process exited {took:.2?} after it started, the kernel launched at {launched:?} s (IRIS_TIMEOUT 3 s)");
        assert!(status.success(), "{backend}: {status}\n{stdout}\n{stderr}");
        assert!(
            stdout.contains("SPIN-CHILD-RETURNED"),
            "{backend}:\n{stdout}\n{stderr}"
        );
        let line = stdout
            .lines()
            .find(|l| l.contains("SPIN-CHILD-ERROR"))
            .unwrap_or_default();
        assert!(
            line.contains("rank 1")
                && line.contains("spin_forever")
                && line.contains("still running"),
            "{backend}: the error names the rank and the kernel: {line}"
        );
        // From the spinning kernel's launch to the process's exit (the child's start and
        // its modules' first load, which a GPU driver may spend 15 s compiling, excluded).
        let launched = launched
            .unwrap_or_else(|| panic!("{backend}: the child never launched:\n{stdout}\n{stderr}"));
        let after_launch = took.saturating_sub(Duration::from_secs_f64(launched));
        assert!(
            after_launch < Duration::from_secs(20),
            "{backend}: exited {after_launch:?} after the launch ({took:?} in all)"
        );
    }
}
