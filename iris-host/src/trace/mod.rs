//! Tracing a world's work to one timeline: `IRIS_TRACE=<dir>` (or [`World::trace`]) makes
//! every rank record each kernel launch (when the host queued it, and when the device ran
//! it, between two events on the rank's stream) and each collective call
//! ([`Iris::trace_span`]: its name, bytes and host time; on the device, from its first
//! kernel's start to its last's end). When a rank's context ends it writes
//! `<dir>/rank-<r>.json`; the rank that finds every rank's file of its world there merges
//! them into `<dir>/trace.json`, a Chrome trace (ranks as processes, the host and the
//! stream as threads) that <https://ui.perfetto.dev> and `chrome://tracing` open, and
//! `iris-trace summary <dir>/trace.json` sums up.
//!
//! Kernels built with the `trace-events` feature add their own events
//! (`trace_event(id, value)`, in a buffer on the rank's device: `device_events.rs`), each
//! on a row of its block inside the launch that made it.
//!
//! Times are the host's monotonic clock in microseconds. Each rank's device times are its
//! stream's event times, anchored at an event recorded on its idle stream when tracing
//! started (just after every rank's context existed); ranks of one machine share the host
//! clock, so their timelines line up to within the anchor's error (microseconds). Ranks
//! of other nodes than rank 0's measure their clock's offset to rank 0's when tracing
//! starts (`host_clock.rs`) and write their times on rank 0's clock.
//! Tracing off costs one branch per launch.
//!
//! [`World::trace`]: crate::World::trace
//! [`Iris::trace_span`]: crate::Iris::trace_span

mod chrome;
mod device_events;
mod host_clock;
mod summary;

pub use chrome::merge;
pub use summary::{op_totals, summary, OpTotal};

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;

use iris_device::abi::trace::HIDDEN_SLOTS;

use iris_driver::{self as driver, Error, Result};

use crate::launch::LaunchConfig;
use crate::rank::RankCore;

/// The folder a world of this process traces into when asked for `dir`: `dir` for the
/// first world, `dir/world-<n>` for the n-th (a program that runs several worlds keeps
/// each one's trace; every process of a world of processes runs the same worlds in the
/// same order, so they agree).
pub(crate) fn world_folder(dir: &Path) -> PathBuf {
    static WORLDS: Mutex<Vec<(PathBuf, usize)>> = Mutex::new(Vec::new());
    let mut worlds = WORLDS.lock().unwrap_or_else(|p| p.into_inner());
    let n = match worlds.iter_mut().find(|(d, _)| d == dir) {
        Some((_, count)) => {
            *count += 1;
            *count
        }
        None => {
            worlds.push((dir.to_path_buf(), 1));
            1
        }
    };
    if n == 1 {
        dir.to_path_buf()
    } else {
        dir.join(format!("world-{n}"))
    }
}

/// Now on the host's monotonic clock, in nanoseconds (the same clock in every process of
/// a machine).
pub(crate) fn now_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::Monotonic);
    t.tv_sec as u64 * 1_000_000_000 + t.tv_nsec as u64
}

/// `count` new events of `core`'s device.
fn make_events(core: &RankCore, count: usize) -> Result<Vec<Box<dyn driver::Event>>> {
    (0..count).map(|_| core.device().create_event()).collect()
}

/// One launch: its kernel, shape, host time, and the events around it on the stream.
struct Launch {
    /// Its serial in the trace (1 for the first), what its kernel's events carry.
    serial: u32,
    name: String,
    unit: &'static str,
    config: LaunchConfig,
    host_ns: u64,
    host_end_ns: u64,
    start: Box<dyn driver::Event>,
    end: Box<dyn driver::Event>,
}

/// One traced call: its name, bytes, host time and the launches it made.
struct Span {
    name: String,
    bytes: u64,
    host_ns: u64,
    host_end_ns: u64,
    launches: std::ops::Range<usize>,
}

/// What a rank recorded.
#[derive(Default)]
struct Records {
    launches: Vec<Launch>,
    spans: Vec<Span>,
}

/// A rank's tracer: where it writes, its clock anchor, and what it recorded.
pub(crate) struct Tracer {
    dir: PathBuf,
    rank: usize,
    world: usize,
    /// Rank 0's start time: the files of one world carry it, so a merge never mixes runs.
    run: u64,
    device: String,
    anchor: Box<dyn driver::Event>,
    anchor_ns: u64,
    /// This rank's host clock minus rank 0's, and its error (ns): 0 on rank 0's node.
    host_offset: (i64, u64),
    records: Mutex<Records>,
    /// Events made ahead, so that a traced launch does not wait for the runtime to make
    /// two (made [`SPARE_EVENTS`] at a time).
    spare: Mutex<Vec<Box<dyn driver::Event>>>,
    /// The buffer kernels write their `trace_event`s into, when some kernel traces.
    events: Option<device_events::EventBuffer>,
    /// The serial of the next launch.
    next_serial: AtomicU32,
}

/// What [`Tracer::before_launch`] hands to [`Tracer::after_launch`].
pub(crate) struct BeforeLaunch {
    start: Box<dyn driver::Event>,
    host_ns: u64,
    serial: u32,
}

impl BeforeLaunch {
    /// The launch's serial.
    pub(crate) fn serial(&self) -> u32 {
        self.serial
    }
}

/// Events a tracer makes at a time, at start and whenever it runs out.
const SPARE_EVENTS: usize = 512;

impl Tracer {
    /// Starts tracing `core`'s rank into `dir` (collective: every rank of the world starts
    /// together, in context creation).
    pub(crate) fn start(core: &RankCore, dir: &Path) -> Result<Self> {
        std::fs::create_dir_all(dir).map_err(|source| Error::Io {
            what: format!("creating the trace folder {}", dir.display()),
            source,
        })?;
        let mine = now_ns();
        let starts =
            crate::transport::all_gather(&**core.collective(), core.rank(), "trace start", &mine)?;
        let host_offset = host_clock::offset_to_rank0(&**core.collective(), core.rank())?;
        core.wait_stream()?;
        let anchor = core.device().create_event()?;
        core.stream().record(&*anchor)?;
        let anchor_ns = now_ns();
        anchor.synchronize(core.timeout())?;
        Ok(Tracer {
            dir: dir.to_path_buf(),
            rank: core.rank(),
            world: starts.len(),
            run: starts.first().copied().unwrap_or(mine),
            device: core.device_info().name.clone(),
            anchor,
            anchor_ns,
            host_offset,
            records: Mutex::new(Records::default()),
            spare: Mutex::new(make_events(core, SPARE_EVENTS)?),
            events: device_events::EventBuffer::new(core)?,
            next_serial: AtomicU32::new(1),
        })
    }

    /// A spare event (more are made when none is left).
    fn event(&self, core: &RankCore) -> Result<Box<dyn driver::Event>> {
        let mut spare = self.spare.lock().unwrap_or_else(|p| p.into_inner());
        if spare.is_empty() {
            *spare = make_events(core, SPARE_EVENTS)?;
        }
        match spare.pop() {
            Some(e) => Ok(e),
            None => core.device().create_event(),
        }
    }

    /// Before a launch: an event on the stream, the host time, and the launch's serial.
    pub(crate) fn before_launch(&self, core: &RankCore) -> Result<BeforeLaunch> {
        let start = self.event(core)?;
        let host_ns = now_ns();
        core.stream().record(&*start)?;
        let serial = self.next_serial.fetch_add(1, Ordering::Relaxed);
        Ok(BeforeLaunch {
            start,
            host_ns,
            serial,
        })
    }

    /// The hidden arguments of a tracing kernel's launch with serial `serial`: the
    /// rank's event buffer (0 when none) and the serial.
    pub(crate) fn hidden_args(&self, serial: u32) -> [u64; HIDDEN_SLOTS] {
        let buffer = self
            .events
            .as_ref()
            .map_or(0, device_events::EventBuffer::addr);
        [buffer, u64::from(serial)]
    }

    /// After a launch made with `before`: the closing event, kept with the launch.
    pub(crate) fn after_launch(
        &self,
        core: &RankCore,
        before: BeforeLaunch,
        unit: &'static str,
        name: &str,
        config: LaunchConfig,
    ) -> Result<()> {
        let end = self.event(core)?;
        core.stream().record(&*end)?;
        let host_end_ns = now_ns();
        let BeforeLaunch {
            start,
            host_ns,
            serial,
        } = before;
        self.lock().launches.push(Launch {
            serial,
            name: name.to_string(),
            unit,
            config,
            host_ns,
            host_end_ns,
            start,
            end,
        });
        Ok(())
    }

    /// The number of launches so far (where a span starts).
    pub(crate) fn launches(&self) -> usize {
        self.lock().launches.len()
    }

    /// Records a finished span that began at `host_ns` with `first` launches made before.
    pub(crate) fn span(&self, name: &str, bytes: u64, host_ns: u64, first: usize) {
        let host_end_ns = now_ns();
        let mut records = self.lock();
        let end = records.launches.len();
        records.spans.push(Span {
            name: name.to_string(),
            bytes,
            host_ns,
            host_end_ns,
            launches: first..end,
        });
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Records> {
        self.records.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Waits for the rank's work, turns its events into times, writes
    /// `<dir>/rank-<r>.json`, and merges the world's files into `<dir>/trace.json` when
    /// every rank's is there.
    pub(crate) fn finish(self, core: &RankCore) -> Result<()> {
        let waited = core.wait_stream();
        // Read (and freed) whether or not the wait failed: the buffer is not leaked.
        let recorded = self.events.map(|buffer| buffer.read(core));
        waited?;
        let recorded = recorded.transpose()?;
        let records = self.records.into_inner().unwrap_or_else(|p| p.into_inner());
        // Host-clock times on rank 0's clock.
        let world_ns = |t: u64| (t as i64).saturating_sub(self.host_offset.0).max(0) as u64;
        let device_ns = |e: &dyn driver::Event| -> Result<u64> {
            let ms = self.anchor.elapsed_ms(e)?;
            Ok(world_ns(
                self.anchor_ns + (f64::from(ms) * 1e6).max(0.0) as u64,
            ))
        };
        let mut launches = Vec::with_capacity(records.launches.len());
        for l in &records.launches {
            let start = device_ns(&*l.start)?;
            let end = device_ns(&*l.end)?.max(start);
            launches.push(chrome::LaunchTimes {
                name: &l.name,
                unit: l.unit,
                grid: l.config.grid,
                block: l.config.block,
                host: (world_ns(l.host_ns), world_ns(l.host_end_ns)),
                device: (start, end),
            });
        }
        let user = user_events(recorded, &records.launches, &launches);
        let spans: Vec<chrome::SpanTimes<'_>> = records
            .spans
            .iter()
            .map(|s| {
                let inside = &launches[s.launches.clone()];
                chrome::SpanTimes {
                    name: &s.name,
                    bytes: s.bytes,
                    host: (world_ns(s.host_ns), world_ns(s.host_end_ns)),
                    device: inside
                        .first()
                        .zip(inside.last())
                        .map(|(a, b)| (a.device.0, b.device.1.max(a.device.0))),
                }
            })
            .collect();
        let rank = chrome::RankTrace {
            run: self.run,
            rank: self.rank,
            world: self.world,
            device: &self.device,
            launches: &launches,
            spans: &spans,
            user: &user,
            host_offset: self.host_offset,
        };
        chrome::write_rank(&self.dir, &rank)?;
        chrome::merge_if_complete(&self.dir, self.run, self.world)
    }
}

/// The kernels' own events on the host's timeline: each matched to the launch of its
/// serial (`launches[i]` and its times `times[i]`), the device clock's offset found from
/// the launches (see [`device_events`]).
fn user_events<'a>(
    recorded: Option<device_events::Recorded>,
    launches: &'a [Launch],
    times: &[chrome::LaunchTimes<'_>],
) -> chrome::UserEvents<'a> {
    let Some(recorded) = recorded else {
        return chrome::UserEvents::default();
    };
    let serials = launches.iter().map(|l| l.serial).max().unwrap_or(0) as usize;
    let mut windows = vec![(0, 0); serials];
    let mut names = vec![""; serials];
    for (l, t) in launches.iter().zip(times) {
        if let Some(i) = (l.serial as usize).checked_sub(1) {
            windows[i] = t.device;
            names[i] = l.name.as_str();
        }
    }
    let clock = device_events::clock_offset(&recorded.events, &windows);
    let offset = clock.map_or(0, |(o, _)| o);
    let events = recorded
        .events
        .iter()
        .filter_map(|e| {
            let name = *names.get((e.launch as usize).checked_sub(1)?)?;
            Some(chrome::UserEvent {
                kernel: name,
                id: e.id,
                value: e.value,
                block: e.block,
                thread: e.thread,
                launch: e.launch,
                host_ns: (e.device_ns as i64).saturating_add(offset).max(0) as u64,
            })
        })
        .collect();
    chrome::UserEvents {
        events,
        clock,
        overwritten: recorded.overwritten,
    }
}
