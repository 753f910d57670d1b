//! Why a device barrier gives up on a healthy rank: ranks as threads meet at a device-side
//! barrier many times back to back, and every rank's kernel writes when it started and when
//! its wait ended (`global_timer_ns`), next to the host's clock when its launch returned.
//! A barrier that gave up is then explained: which rank was late, how late its kernel
//! started on the device, and whether its host launch was late too (a launch that returned
//! on time but started late waited on the device: behind another stream's kernel).
//!
//! It meets the barrier through its own signal buffer, not through `Ccl` (which refuses more
//! ranks on a device than it has hardware queues), so it can show the fault that check
//! prevents: run it with `CUDA_DEVICE_MAX_CONNECTIONS` below, at and above the ranks.
//!
//! ```text
//! cargo bench --bench residency_probe -- --ranks 8 --epochs 200 --rounds 5 --limit-ms 500
//! CUDA_DEVICE_MAX_CONNECTIONS=8 target/release/deps/residency_probe-* --ranks 8
//! ```
//! The last line is a summary: `probe ranks=8 queues=8 rounds=5 failed=3 ...`.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use iris::{Iris, World};

iris::ccl::kernels_with_barrier! {
    mod probe {
        use iris::prelude::*;

        /// One thread meets barrier slot 0 for its next epoch and records, at
        /// `stamps[3 * (epoch - 1)]`, when it started, when its wait ended, and the wait's
        /// status (0, or 1 + the rank it gave up on).
        #[kernel]
        pub fn stamped_barrier(signals: Symmetric<u64>, stamps: *mut u64, me: u32, world: u32, timeout_ns: u64) {
            if thread_idx_x() == 0 && block_idx_x() == 0 {
                let epoch = ccl_epoch(signals, 0, me) + 1;
                let start = global_timer_ns();
                let status = ccl_barrier(signals, 0, epoch, me, world, timeout_ns);
                ccl_epoch_done(signals, 0, me, epoch);
                let end = global_timer_ns();
                let at = (3 * (epoch - 1)) as usize;
                unsafe {
                    *stamps.add(at) = start;
                    *stamps.add(at + 1) = end;
                    *stamps.add(at + 2) = status as u64;
                }
            }
        }
    }
}

/// Words of the signal buffer before the flags (as `iris::ccl`'s barrier lays it out).
const HEADER_WORDS: usize = 260;

struct Args {
    ranks: usize,
    epochs: u64,
    rounds: usize,
    limit: Duration,
}

fn args() -> Args {
    let mut a = Args {
        ranks: 8,
        epochs: 200,
        rounds: 5,
        limit: Duration::from_millis(500),
    };
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let mut it = argv.iter();
    while let Some(flag) = it.next() {
        let mut value = || -> u64 {
            it.next()
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("{flag} needs a number"))
        };
        match flag.as_str() {
            "--ranks" => a.ranks = value() as usize,
            "--epochs" => a.epochs = value(),
            "--rounds" => a.rounds = value() as usize,
            "--limit-ms" => a.limit = Duration::from_millis(value()),
            "--bench" => {}
            other => panic!("unknown argument {other}"),
        }
    }
    a
}

fn host_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// One rank's record of a round: per epoch (device start, device end, status, host time
/// the launch returned).
type Record = Vec<[u64; 4]>;

fn rank_round(iris: &Iris, a: &Args) -> iris::Result<Record> {
    let world = iris.world_size();
    let signals = iris.symmetric_zeros::<u64>(HEADER_WORDS + world)?;
    let stamps = iris.zeros::<u64>(3 * a.epochs as usize)?;
    iris.load(&probe::stamped_barrier::UNIT)?;
    iris.barrier()?;
    let (me, w) = (iris.rank() as u32, world as u32);
    let timeout_ns = a.limit.as_nanos() as u64;
    let mut launched = Vec::with_capacity(a.epochs as usize);
    for _ in 1..=a.epochs {
        probe::stamped_barrier::launch(iris, (1, 1), &signals, &stamps, me, w, timeout_ns)?;
        launched.push(host_ns());
    }
    iris.synchronize()?;
    let device = stamps.to_vec()?;
    iris.barrier()?;
    Ok((0..a.epochs as usize)
        .map(|e| {
            [
                device[3 * e],
                device[3 * e + 1],
                device[3 * e + 2],
                launched[e],
            ]
        })
        .collect())
}

fn main() -> iris::Result<()> {
    let a = args();
    let info = World::threads(1).run(|iris| Ok(iris.device_info().clone()))?[0].clone();
    println!(
        "device: {} ({}), {} multiprocessors, {} hardware queues for this process's streams (CUDA_DEVICE_MAX_CONNECTIONS={})",
        info.name,
        info.backend,
        info.multiprocessors,
        info.work_queues,
        std::env::var("CUDA_DEVICE_MAX_CONNECTIONS").unwrap_or_else(|_| "unset".into())
    );
    println!(
        "{} ranks as threads, one stream each, {} back-to-back barriers per round, wait limit {:?}",
        a.ranks, a.epochs, a.limit
    );
    let mut failed_rounds = 0;
    let mut worst_skew = 0u64;
    for round in 0..a.rounds {
        let records = World::threads(a.ranks)
            .heap_bytes(1 << 20)
            .timeout(a.limit * 4 + Duration::from_secs(10))
            .run(|iris| rank_round(iris, &a))?;
        // Per epoch: the spread of the ranks' device start times and host launch times.
        let mut first_failure = None;
        for e in 0..a.epochs as usize {
            let starts: Vec<u64> = records.iter().map(|r| r[e][0]).collect();
            let min_start = *starts.iter().min().unwrap_or(&0);
            let (late, &late_start) = starts
                .iter()
                .enumerate()
                .max_by_key(|(_, &s)| s)
                .unwrap_or((0, &0));
            worst_skew = worst_skew.max(late_start - min_start);
            let gave_up = records.iter().position(|r| r[e][2] != 0);
            if let (Some(who), None) = (gave_up, first_failure) {
                first_failure = Some((e, who, late, late_start - min_start));
            }
        }
        match first_failure {
            None => println!("round {round}: all {} barriers passed", a.epochs),
            Some((e, who, late, skew)) => {
                failed_rounds += 1;
                let launches: Vec<u64> = records.iter().map(|r| r[e][3]).collect();
                let first_launch = *launches.iter().min().unwrap_or(&0);
                let missing = records[who][e][2] - 1;
                println!(
                    "round {round}: epoch {} FAILED: rank {who} gave up on rank {missing}; the last kernel to start was rank {late}'s, {:.3} ms after the first rank's, though its host launch returned {:.3} ms after the first launch",
                    e + 1,
                    skew as f64 / 1e6,
                    (launches[late] - first_launch) as f64 / 1e6
                );
                for (rank, r) in records.iter().enumerate() {
                    println!(
                        "    rank {rank}: launch returned +{:>9.3} ms, kernel started +{:>9.3} ms, wait ended +{:>9.3} ms, status {}",
                        (r[e][3] - first_launch) as f64 / 1e6,
                        r[e][0].saturating_sub(min_of(&records, e)) as f64 / 1e6,
                        r[e][1].saturating_sub(min_of(&records, e)) as f64 / 1e6,
                        r[e][2]
                    );
                }
            }
        }
    }
    println!(
        "probe ranks={} queues={} rounds={} failed={} worst_start_skew_ms={:.3}",
        a.ranks,
        info.work_queues,
        a.rounds,
        failed_rounds,
        worst_skew as f64 / 1e6
    );
    Ok(())
}

/// The earliest device start of epoch `e` over the ranks.
fn min_of(records: &[Record], e: usize) -> u64 {
    records.iter().map(|r| r[e][0]).min().unwrap_or(0)
}
