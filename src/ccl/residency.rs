//! How many blocks every rank may launch so that kernels waiting for each other across
//! ranks always run at once.
//!
//! A device-side barrier spins until every rank's block for its slot arrives, so it is only
//! correct when all those blocks are running at the same time. Two things on a GPU decide
//! that, and [`Ccl`](super::Ccl) fixes both when it is created instead of assuming them:
//!
//! 1. **Hardware queues.** A context runs its streams through a fixed number of hardware
//!    queues (CUDA: `CUDA_DEVICE_MAX_CONNECTIONS`, default 8). Streams beyond that share a
//!    queue in order, so one rank's next kernel can sit behind another rank's kernel that
//!    spins waiting for it: a deadlock the wait's limit ends with a false "rank did not
//!    arrive". This was the 8-ranks-on-one-H200 fault (`docs/residency.md` has the
//!    measurements). The runtime sets the variable to 32 when it is unset before the
//!    driver starts ([`DeviceInfo::work_queues`](crate::DeviceInfo::work_queues)), and
//!    `Ccl::new` refuses more ranks of one process on a device than it has queues for.
//! 2. **Resident blocks.** The blocks of every rank on a device must fit on it together.
//!    If every kernel that can be running has an occupancy of at least `m` blocks per
//!    multiprocessor (the driver's occupancy calculator, for the exact code object and
//!    block size), each block uses at most `1/m` of every resource of a multiprocessor, so
//!    any `m` blocks fit on one; with at most `m * multiprocessors` blocks on the device
//!    there is always a multiprocessor with room for the next block. So each of the `r`
//!    ranks on a device launches at most `m * multiprocessors / r` blocks, `m` the smallest
//!    occupancy of every kernel loaded through the communicator (collectives, the barrier,
//!    and user kernels through [`Ccl::launch_config_for`](super::Ccl::launch_config_for)).
//!
//! Work outside iris on the same device (another library's kernels, another process
//! under MPS) is not counted: it can still delay a rank, and then the wait's time limit
//! ends the collective with an error naming the rank, never a hang.

use crate::{BackendKind, Error, Iris, Result};

/// What ranks share this rank's device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Sharing {
    /// Ranks of the world on this rank's device (whatever their process).
    pub(crate) device: usize,
    /// Ranks of this process on this rank's device (one stream each).
    pub(crate) process: usize,
    /// Whether any device of the world has two or more of its ranks: the same on every
    /// rank (what every rank must decide alike, such as queuing a barrier, asks this).
    pub(crate) any_device_shared: bool,
}

/// A rank's device and process: the backend, the device's UUID (ordinals differ between
/// processes that see different devices), the process id.
type Place = [u64; 4];

impl Sharing {
    /// Collective: every rank's device and process, compared with this rank's.
    pub(crate) fn of(iris: &Iris) -> Result<Self> {
        let info = iris.device_info();
        let (high, low) = info.uuid.split_at(8);
        let word = |b: &[u8]| u64::from_le_bytes(b.try_into().expect("8 bytes"));
        let mine: Place = [
            info.backend as u64,
            word(high),
            word(low),
            u64::from(std::process::id()),
        ];
        let all = iris.all_gather(mine)?;
        Ok(Self::among(&mine, &all))
    }

    /// What `mine` shares among every rank's place `all`.
    fn among(mine: &Place, all: &[Place]) -> Self {
        let device = all.iter().filter(|k| k[..3] == mine[..3]).count().max(1);
        let process = all.iter().filter(|k| *k == mine).count().max(1);
        let any_device_shared = all
            .iter()
            .any(|p| all.iter().filter(|k| k[..3] == p[..3]).count() > 1);
        Self {
            device,
            process,
            any_device_shared,
        }
    }
}

/// The most ranks of one process that can share a device with `work_queues` hardware
/// queues: one queue each, and one for the context's own work. Measured on an H200 with
/// `benches/residency_probe.rs` (200 back-to-back barriers, 5 rounds each): 8 ranks failed
/// in 5 of 5 rounds with 1, 4 or 7 queues and in 1 of 5 with 8; none with 9 or 32; 7 ranks
/// with 8 queues, and 16 with 32, never (`docs/residency.md`).
pub(crate) fn ranks_per_queues(work_queues: u32) -> usize {
    (work_queues as usize).saturating_sub(1).max(1)
}

/// Blocks per rank that keep every rank's blocks resident at once: `m * multiprocessors
/// / ranks` for a smallest occupancy `m`, 0 when even one block each does not fit.
pub(crate) fn resident_blocks(min_occupancy: u32, multiprocessors: u32, ranks: usize) -> u64 {
    if min_occupancy == u32::MAX {
        return u64::MAX;
    }
    u64::from(min_occupancy) * u64::from(multiprocessors) / ranks.max(1) as u64
}

/// `Ok` when the ranks of `sharing` can all wait for each other on this rank's device
/// with the occupancy `min_occupancy`; else [`Error::DeviceOversubscribed`] saying how
/// many fit and why.
pub(crate) fn check_fit(iris: &Iris, sharing: Sharing, min_occupancy: u32) -> Result<()> {
    let info = iris.device_info();
    if info.backend == BackendKind::Cpu {
        return Ok(());
    }
    let device = format!("{} device {} ({})", info.backend, info.ordinal, info.name);
    // A rank with a sync stream (`World::sync_stream`) takes a second queue.
    let streams = 1 + usize::from(iris.has_sync_stream());
    let queues = ranks_per_queues(info.work_queues) / streams;
    if sharing.process > queues {
        let var = match info.backend {
            BackendKind::Hip => "GPU_MAX_HW_QUEUES",
            _ => "CUDA_DEVICE_MAX_CONNECTIONS",
        };
        return Err(Error::DeviceOversubscribed {
            rank: iris.rank(),
            device,
            ranks: sharing.process,
            fit: queues,
            why: format!(
                "this process's streams run on {} hardware queues ({var}), and ranks whose kernels wait for each other need a queue for each of their streams ({streams} a rank); run fewer ranks per device (or more processes), or raise {var} (32 at most on CUDA) before the first GPU call",
                info.work_queues
            ),
        });
    }
    let fit = resident_blocks(min_occupancy, info.multiprocessors, 1);
    if resident_blocks(min_occupancy, info.multiprocessors, sharing.device) == 0 {
        return Err(Error::DeviceOversubscribed {
            rank: iris.rank(),
            device,
            ranks: sharing.device,
            fit: usize::try_from(fit).unwrap_or(usize::MAX),
            why: format!(
                "the kernels fit {min_occupancy} block(s) per multiprocessor on its {} multiprocessors, and every rank needs one resident block at least",
                info.multiprocessors
            ),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_share_a_device_by_its_uuid_not_its_ordinal() {
        // [backend, uuid, uuid, process]
        let (cuda, a, b) = (1, [7, 8], [9, 10]);
        // Four processes, each seeing only its own GPU (CUDA_VISIBLE_DEVICES=local rank):
        // every ordinal is 0, every device different.
        let apart: Vec<Place> = (0..4)
            .map(|p| {
                let d = [a, b, [11, 12], [13, 14]][p];
                [cuda, d[0], d[1], 100 + p as u64]
            })
            .collect();
        let one = Sharing::among(&apart[2], &apart);
        assert_eq!((one.device, one.process), (1, 1));
        assert!(!one.any_device_shared);
        // Two processes of two threads on one GPU, another process on a second GPU.
        let shared: Vec<Place> = vec![
            [cuda, a[0], a[1], 1],
            [cuda, a[0], a[1], 1],
            [cuda, a[0], a[1], 2],
            [cuda, a[0], a[1], 2],
            [cuda, b[0], b[1], 3],
        ];
        let on_a = Sharing::among(&shared[0], &shared);
        assert_eq!((on_a.device, on_a.process), (4, 2));
        let on_b = Sharing::among(&shared[4], &shared);
        assert_eq!((on_b.device, on_b.process), (1, 1));
        // Alone on its GPU, yet it decides as the ranks sharing theirs do.
        assert!(on_a.any_device_shared && on_b.any_device_shared);
        // The same UUID under another backend is another device.
        let mixed: Vec<Place> = vec![[cuda, 0, 0, 1], [0, 0, 0, 1]];
        assert_eq!(Sharing::among(&mixed[0], &mixed).device, 1);
    }

    #[test]
    fn blocks_are_shared_by_the_ranks_on_a_device() {
        // An H200: 132 multiprocessors, 8 blocks of 256 threads each.
        assert_eq!(resident_blocks(8, 132, 1), 1056);
        assert_eq!(resident_blocks(8, 132, 8), 132);
        assert_eq!(resident_blocks(8, 132, 16), 66);
        assert_eq!(resident_blocks(1, 4, 8), 0);
        assert_eq!(resident_blocks(u32::MAX, 1, 8), u64::MAX);
    }
}
