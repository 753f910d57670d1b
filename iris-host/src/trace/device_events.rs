//! The events kernels record with `trace_event(id, value)`: the rank's trace buffer in
//! device memory (its layout: `iris_device::abi::trace`), read back when the trace ends,
//! each event matched to the launch that made it and put on the host's timeline.
//!
//! The device clock (`global_timer_ns`) is not the host's: its offset is found from the
//! launches themselves. A launch ran between its start and end events, which are on the
//! host's timeline, so its events' device times `t` satisfy
//! `start <= t + offset <= end`; every launch with events bounds the offset from both
//! sides, and the offset taken is the middle of the bounds all launches agree on (its
//! error, half their width, goes into the rank's file). Where the launches disagree (a
//! clock that drifted), the median of each launch's own middle is taken.

use iris_device::abi::trace::{buffer_bytes, record_word, HEADER_WORDS};
use iris_device::abi::KERNEL_UNITS;
use iris_driver::{Error, Result};

use crate::rank::RankCore;

/// Block rings of a rank's buffer: blocks `b` and `b + RINGS` share one.
pub(super) const RINGS: u64 = 1024;

/// Events a block ring keeps when `IRIS_TRACE_EVENTS` is unset.
pub(super) const DEFAULT_EVENTS: u64 = 256;

/// The most events a ring may keep.
const MAX_EVENTS: u64 = 1 << 16;

/// Events a block ring keeps: `IRIS_TRACE_EVENTS` rounded up to a power of two (0: no
/// device events are recorded).
pub(super) fn events_per_block() -> Result<u64> {
    parse_events(std::env::var("IRIS_TRACE_EVENTS").ok().as_deref())
}

/// [`events_per_block`] from the variable's value.
fn parse_events(value: Option<&str>) -> Result<u64> {
    match value {
        None => Ok(DEFAULT_EVENTS),
        Some(v) if v.trim().is_empty() => Ok(DEFAULT_EVENTS),
        Some(v) => match v.trim().parse::<u64>() {
            Ok(0) => Ok(0),
            Ok(n) if n <= MAX_EVENTS => Ok(n.next_power_of_two()),
            _ => Err(Error::InvalidConfig(format!(
                "IRIS_TRACE_EVENTS={v:?} is invalid: use the events each block keeps, 0 to {MAX_EVENTS}"
            ))),
        },
    }
}

/// Whether any kernel of the program records trace events.
fn program_traces() -> bool {
    KERNEL_UNITS
        .iter()
        .any(|u| u.kernels.iter().any(|k| k.trace_events))
}

/// A rank's trace buffer on its device.
pub(super) struct EventBuffer {
    addr: u64,
    events: u64,
}

impl EventBuffer {
    /// A zeroed buffer of [`RINGS`] rings of `IRIS_TRACE_EVENTS` events on `core`'s
    /// device, or `None` when no kernel of the program traces or the setting is 0.
    pub(super) fn new(core: &RankCore) -> Result<Option<Self>> {
        let events = events_per_block()?;
        if events == 0 || !program_traces() {
            return Ok(None);
        }
        let bytes = buffer_bytes(RINGS, events) as usize;
        let addr = core.device_alloc(bytes)?;
        // The masks and the rings' zero counts; the records are read only below a count.
        let mut head = vec![0u64; (HEADER_WORDS + RINGS) as usize];
        head[0] = RINGS - 1;
        head[1] = events - 1;
        let head: Vec<u8> = head.iter().flat_map(|w| w.to_ne_bytes()).collect();
        let written = core
            .upload_fresh(addr, &head)
            .and_then(|()| core.fill_fresh(addr + head.len() as u64, 0, bytes - head.len()));
        if let Err(e) = written {
            core.release(addr);
            return Err(e);
        }
        Ok(Some(Self { addr, events }))
    }

    /// Its device address (a tracing kernel's first hidden argument).
    pub(super) fn addr(&self) -> u64 {
        self.addr
    }

    /// Reads the events back (after the rank's work) and frees the buffer.
    pub(super) fn read(self, core: &RankCore) -> Result<Recorded> {
        let words = (buffer_bytes(RINGS, self.events) / 8) as usize;
        let mut bytes = vec![0u8; words * 8];
        let read = core.download(self.addr, &mut bytes);
        core.release(self.addr);
        read?;
        let word = |i: u64| {
            let at = i as usize * 8;
            let mut w = [0u8; 8];
            w.copy_from_slice(&bytes[at..at + 8]);
            u64::from_ne_bytes(w)
        };
        let mut recorded = Recorded::default();
        for ring in 0..RINGS {
            let count = word(HEADER_WORDS + ring);
            let kept = count.min(self.events);
            recorded.overwritten += count - kept;
            for index in 0..kept {
                let w = record_word(RINGS, self.events, ring, index);
                let (tag, place) = (word(w + 2), word(w + 3));
                recorded.events.push(DeviceEvent {
                    device_ns: word(w),
                    value: word(w + 1),
                    id: tag as u32,
                    launch: (tag >> 32) as u32,
                    block: place as u32,
                    thread: (place >> 32) as u32,
                });
            }
        }
        recorded.events.sort_by_key(|e| (e.launch, e.device_ns));
        Ok(recorded)
    }
}

/// One event as a kernel wrote it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct DeviceEvent {
    /// The device clock when it was made.
    pub device_ns: u64,
    /// Its value.
    pub value: u64,
    /// Its id.
    pub id: u32,
    /// The serial of the launch that made it (1 for the trace's first launch).
    pub launch: u32,
    /// The block's linear index in the grid.
    pub block: u32,
    /// The thread's linear index in its block.
    pub thread: u32,
}

/// What a rank's kernels recorded.
#[derive(Debug, Default)]
pub(super) struct Recorded {
    /// The events kept, by launch and time.
    pub events: Vec<DeviceEvent>,
    /// Events written over by later ones of their block's ring.
    pub overwritten: u64,
}

/// The device clock's offset to the host's timeline and its error, in nanoseconds, from
/// the events of each launch and the launch's window on the host's timeline
/// (`windows[serial - 1]`, from its start to its end).
pub(super) fn clock_offset(events: &[DeviceEvent], windows: &[(u64, u64)]) -> Option<(i64, u64)> {
    let mut low = i64::MIN;
    let mut high = i64::MAX;
    let mut middles = Vec::new();
    for group in events.chunk_by(|a, b| a.launch == b.launch) {
        let serial = group[0].launch as usize;
        let Some(&(start, end)) = serial.checked_sub(1).and_then(|i| windows.get(i)) else {
            continue;
        };
        let first = group.iter().map(|e| e.device_ns).min().unwrap_or(0);
        let last = group.iter().map(|e| e.device_ns).max().unwrap_or(0);
        let lo = start as i64 - first as i64;
        let hi = end as i64 - last as i64;
        low = low.max(lo);
        high = high.min(hi);
        middles.push(lo / 2 + hi / 2);
    }
    if middles.is_empty() {
        return None;
    }
    if low <= high {
        return Some((low / 2 + high / 2, (high - low) as u64 / 2));
    }
    middles.sort_unstable();
    let median = middles[middles.len() / 2];
    Some((median, (low - high) as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(launch: u32, device_ns: u64) -> DeviceEvent {
        DeviceEvent {
            device_ns,
            value: 0,
            id: 0,
            launch,
            block: 0,
            thread: 0,
        }
    }

    #[test]
    fn the_offset_puts_every_launch_s_events_inside_it() {
        // Device clock = host - 1000, launches at [5000, 6000] and [9000, 9500].
        let events = [at(1, 4100), at(1, 4800), at(2, 8200), at(2, 8400)];
        let (offset, error) = clock_offset(&events, &[(5000, 6000), (9000, 9500)]).unwrap();
        // Bounds: launch 1: [900, 1200]; launch 2: [800, 1100] -> [900, 1100].
        assert_eq!((offset, error), (1000, 100));
        for e in events {
            let t = e.device_ns as i64 + offset;
            let (s, end) = [(5000, 6000), (9000, 9500)][e.launch as usize - 1];
            assert!(s <= t && t <= end);
        }
    }

    #[test]
    fn launches_that_disagree_take_the_median() {
        let events = [at(1, 100), at(2, 100), at(3, 100)];
        let windows = [(1000, 1000), (2000, 2000), (5000, 5000)];
        let (offset, _) = clock_offset(&events, &windows).unwrap();
        assert_eq!(offset, 1900);
    }

    #[test]
    fn the_events_a_block_keeps_come_from_the_setting() {
        assert_eq!(parse_events(None).unwrap(), DEFAULT_EVENTS);
        assert_eq!(parse_events(Some(" ")).unwrap(), DEFAULT_EVENTS);
        assert_eq!(parse_events(Some("0")).unwrap(), 0);
        assert_eq!(parse_events(Some("100")).unwrap(), 128);
        assert_eq!(parse_events(Some("65536")).unwrap(), 65536);
        for bad in ["65537", "-1", "many"] {
            let e = parse_events(Some(bad)).unwrap_err().to_string();
            assert!(e.contains("IRIS_TRACE_EVENTS"), "{e}");
        }
    }

    #[test]
    fn no_events_no_offset() {
        assert_eq!(clock_offset(&[], &[(0, 1)]), None);
        assert_eq!(clock_offset(&[at(7, 5)], &[(0, 1)]), None);
    }
}
