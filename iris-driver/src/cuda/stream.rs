//! CUDA streams and events.

use std::any::Any;
use std::sync::Arc;
use std::time::Duration;

use cudarc::driver::sys::{self, CUevent, CUevent_flags, CUstream, CUstream_flags};

use super::context::PrimaryContext;
use super::driver::{check, error, load};
use super::wait::poll;
use crate::error::Result;
use crate::{downcast, BackendKind, Event, Stream};

/// A non-blocking CUDA stream of one device's primary context.
pub struct CudaStream {
    ctx: Arc<PrimaryContext>,
    raw: CUstream,
}

// SAFETY: a stream handle may be used from any thread that makes its context current, which
// every method does first.
unsafe impl Send for CudaStream {}
// SAFETY: as above; the driver synchronises work submitted to one stream.
unsafe impl Sync for CudaStream {}

impl CudaStream {
    pub(super) fn new(ctx: Arc<PrimaryContext>) -> Result<CudaStream> {
        ctx.make_current()?;
        let mut raw = std::ptr::null_mut();
        let flags = CUstream_flags::CU_STREAM_NON_BLOCKING as u32;
        // SAFETY: a valid out-pointer, with the context current.
        check("cuStreamCreate", unsafe {
            sys::cuStreamCreate(&mut raw, flags)
        })?;
        Ok(CudaStream { ctx, raw })
    }

    /// The driver's handle, for interoperating with other CUDA libraries. It stays valid
    /// while this stream lives.
    pub fn raw(&self) -> CUstream {
        self.raw
    }

    /// The context the stream belongs to.
    pub(super) fn context(&self) -> &PrimaryContext {
        &self.ctx
    }

    /// Waits for the stream's queued work, polling, for at most `timeout`.
    pub(super) fn wait(&self, timeout: Duration) -> Result<()> {
        self.ctx.make_current()?;
        let raw = self.raw;
        poll(
            "cuStreamQuery",
            || format!("CUDA stream synchronize (device {})", self.ctx.device),
            timeout,
            // SAFETY: `raw` is a live stream.
            || unsafe { sys::cuStreamQuery(raw) },
        )
    }
}

impl Drop for CudaStream {
    fn drop(&mut self) {
        let r = self.ctx.make_current().and_then(|()| {
            // SAFETY: the stream is not used after this; pending work still completes.
            check("cuStreamDestroy_v2", unsafe {
                sys::cuStreamDestroy_v2(self.raw)
            })
        });
        if let Err(err) = r {
            tracing::warn!(%err, "destroying a CUDA stream failed");
        }
    }
}

impl Stream for CudaStream {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn synchronize(&self, timeout: Duration) -> Result<()> {
        self.wait(timeout)
    }

    fn record(&self, event: &dyn Event) -> Result<()> {
        let event: &CudaEvent = downcast(event.as_any(), BackendKind::Cuda, "event")?;
        self.ctx.make_current()?;
        // SAFETY: both handles are live; an event may be recorded on a stream of another
        // context of the same process.
        check("cuEventRecord", unsafe {
            sys::cuEventRecord(event.raw, self.raw)
        })
    }
}

/// A CUDA event with timing enabled.
pub struct CudaEvent {
    ctx: Arc<PrimaryContext>,
    raw: CUevent,
}

// SAFETY: an event handle may be used from any thread that makes its context current, which
// every method does first.
unsafe impl Send for CudaEvent {}
// SAFETY: as above.
unsafe impl Sync for CudaEvent {}

impl CudaEvent {
    pub(super) fn new(ctx: Arc<PrimaryContext>) -> Result<CudaEvent> {
        ctx.make_current()?;
        let mut raw = std::ptr::null_mut();
        let flags = CUevent_flags::CU_EVENT_DEFAULT as u32;
        // SAFETY: a valid out-pointer, with the context current.
        check("cuEventCreate", unsafe {
            sys::cuEventCreate(&mut raw, flags)
        })?;
        Ok(CudaEvent { ctx, raw })
    }

    /// The driver's handle, for interoperating with other CUDA libraries. It stays valid
    /// while this event lives.
    pub fn raw(&self) -> CUevent {
        self.raw
    }
}

impl Drop for CudaEvent {
    fn drop(&mut self) {
        let r = self.ctx.make_current().and_then(|()| {
            // SAFETY: the event is not used after this.
            check("cuEventDestroy_v2", unsafe {
                sys::cuEventDestroy_v2(self.raw)
            })
        });
        if let Err(err) = r {
            tracing::warn!(%err, "destroying a CUDA event failed");
        }
    }
}

impl Event for CudaEvent {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn synchronize(&self, timeout: Duration) -> Result<()> {
        self.ctx.make_current()?;
        let raw = self.raw;
        poll(
            "cuEventQuery",
            || format!("CUDA event synchronize (device {})", self.ctx.device),
            timeout,
            // SAFETY: `raw` is a live event.
            || unsafe { sys::cuEventQuery(raw) },
        )
    }

    fn elapsed_ms(&self, end: &dyn Event) -> Result<f32> {
        let end: &CudaEvent = downcast(end.as_any(), BackendKind::Cuda, "event")?;
        let driver = load()?;
        self.ctx.make_current()?;
        let mut ms = 0.0f32;
        // SAFETY: both events are live; the driver checks that they were recorded.
        let r = unsafe { (driver.elapsed_time)(&mut ms, self.raw, end.raw) };
        if r == sys::CUresult::CUDA_SUCCESS {
            Ok(ms)
        } else {
            Err(error("cuEventElapsedTime", r))
        }
    }
}
