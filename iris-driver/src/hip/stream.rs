//! HIP streams and events.

use std::any::Any;
use std::time::Duration;

use cubecl_hip_sys::{self as hip, hipEvent_t, hipStream_t};

use super::runtime::{check, set_device};
use super::wait::poll;
use crate::error::Result;
use crate::{downcast, BackendKind, Event, Stream};

/// A non-blocking HIP stream of one device.
pub struct HipStream {
    ordinal: i32,
    raw: hipStream_t,
}

// SAFETY: HIP stream handles may be used from any thread; every method selects the
// stream's device first.
unsafe impl Send for HipStream {}
// SAFETY: as above; the runtime synchronises work submitted to one stream.
unsafe impl Sync for HipStream {}

impl HipStream {
    pub(super) fn new(ordinal: i32) -> Result<HipStream> {
        set_device(ordinal)?;
        let mut raw = std::ptr::null_mut();
        // SAFETY: a valid out-pointer, with the device selected.
        check("hipStreamCreateWithFlags", unsafe {
            hip::hipStreamCreateWithFlags(&mut raw, hip::hipStreamNonBlocking)
        })?;
        Ok(HipStream { ordinal, raw })
    }

    /// The runtime's handle, for interoperating with other HIP libraries. It stays valid
    /// while this stream lives.
    pub fn raw(&self) -> hipStream_t {
        self.raw
    }

    /// The device the stream belongs to.
    pub(super) fn ordinal(&self) -> i32 {
        self.ordinal
    }

    /// Waits for the stream's queued work, polling, for at most `timeout`.
    pub(super) fn wait(&self, timeout: Duration) -> Result<()> {
        set_device(self.ordinal)?;
        let raw = self.raw;
        poll(
            "hipStreamQuery",
            || format!("HIP stream synchronize (device {})", self.ordinal),
            timeout,
            // SAFETY: `raw` is a live stream.
            || unsafe { hip::hipStreamQuery(raw) },
        )
    }
}

impl Drop for HipStream {
    fn drop(&mut self) {
        let r = set_device(self.ordinal).and_then(|()| {
            // SAFETY: the stream is not used after this; pending work still completes.
            check("hipStreamDestroy", unsafe {
                hip::hipStreamDestroy(self.raw)
            })
        });
        if let Err(err) = r {
            tracing::warn!(%err, "destroying a HIP stream failed");
        }
    }
}

impl Stream for HipStream {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn synchronize(&self, timeout: Duration) -> Result<()> {
        self.wait(timeout)
    }

    fn record(&self, event: &dyn Event) -> Result<()> {
        let event: &HipEvent = downcast(event.as_any(), BackendKind::Hip, "event")?;
        set_device(self.ordinal)?;
        // SAFETY: both handles are live.
        check("hipEventRecord", unsafe {
            hip::hipEventRecord(event.raw, self.raw)
        })
    }
}

/// A HIP event with timing enabled.
pub struct HipEvent {
    ordinal: i32,
    raw: hipEvent_t,
}

// SAFETY: HIP event handles may be used from any thread; every method selects the event's
// device first.
unsafe impl Send for HipEvent {}
// SAFETY: as above.
unsafe impl Sync for HipEvent {}

impl HipEvent {
    pub(super) fn new(ordinal: i32) -> Result<HipEvent> {
        set_device(ordinal)?;
        let mut raw = std::ptr::null_mut();
        // SAFETY: a valid out-pointer, with the device selected.
        check("hipEventCreateWithFlags", unsafe {
            hip::hipEventCreateWithFlags(&mut raw, hip::hipEventDefault)
        })?;
        Ok(HipEvent { ordinal, raw })
    }

    /// The runtime's handle, for interoperating with other HIP libraries.
    pub fn raw(&self) -> hipEvent_t {
        self.raw
    }
}

impl Drop for HipEvent {
    fn drop(&mut self) {
        let r = set_device(self.ordinal).and_then(|()| {
            // SAFETY: the event is not used after this.
            check("hipEventDestroy", unsafe { hip::hipEventDestroy(self.raw) })
        });
        if let Err(err) = r {
            tracing::warn!(%err, "destroying a HIP event failed");
        }
    }
}

impl Event for HipEvent {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn synchronize(&self, timeout: Duration) -> Result<()> {
        set_device(self.ordinal)?;
        let raw = self.raw;
        poll(
            "hipEventQuery",
            || format!("HIP event synchronize (device {})", self.ordinal),
            timeout,
            // SAFETY: `raw` is a live event.
            || unsafe { hip::hipEventQuery(raw) },
        )
    }

    fn elapsed_ms(&self, end: &dyn Event) -> Result<f32> {
        let end: &HipEvent = downcast(end.as_any(), BackendKind::Hip, "event")?;
        set_device(self.ordinal)?;
        let mut ms = 0.0f32;
        // SAFETY: both events are live; the runtime checks that they were recorded.
        check("hipEventElapsedTime", unsafe {
            hip::hipEventElapsedTime(&mut ms, self.raw, end.raw)
        })?;
        Ok(ms)
    }
}
