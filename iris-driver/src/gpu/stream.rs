//! Streams and events of a GPU device, for any [`GpuApi`].

use std::any::Any;
use std::time::Duration;

use super::api::GpuApi;
use super::wait::poll;
use crate::error::Result;
use crate::{downcast, Event, Graph, Stream};

/// A non-blocking stream of one device, made by iris or borrowed from another library.
pub struct GpuStream<A: GpuApi> {
    ctx: A::Context,
    raw: A::Stream,
    /// Whether iris created it (and destroys it when dropped).
    owned: bool,
}

// SAFETY: stream handles of CUDA and HIP may be used from any thread that makes their
// device current, which every method does first; the context is `Send + Sync`.
unsafe impl<A: GpuApi> Send for GpuStream<A> {}
// SAFETY: as above; the runtimes synchronise work submitted to one stream.
unsafe impl<A: GpuApi> Sync for GpuStream<A> {}

impl<A: GpuApi> GpuStream<A> {
    /// A new stream of the context's device; `urgent`: of the device's greatest priority.
    pub(crate) fn new(ctx: A::Context, urgent: bool) -> Result<Self> {
        A::make_current(&ctx)?;
        // SAFETY: the device is current.
        let raw = unsafe {
            if urgent {
                A::stream_create_urgent()
            } else {
                A::stream_create()
            }
        }?;
        Ok(Self {
            ctx,
            raw,
            owned: true,
        })
    }

    /// Another library's stream `raw` of the context's device, borrowed.
    ///
    /// # Safety
    /// `raw` is a live stream of the context's device and outlives the result.
    pub(crate) unsafe fn borrowed(ctx: A::Context, raw: *mut std::ffi::c_void) -> Self {
        Self {
            ctx,
            raw: A::stream_from_raw(raw),
            owned: false,
        }
    }

    /// The runtime's handle, for interoperating with other libraries. It stays valid while
    /// this stream lives.
    pub fn raw(&self) -> A::Stream {
        self.raw
    }

    /// The context the stream belongs to.
    pub(crate) fn context(&self) -> &A::Context {
        &self.ctx
    }

    /// Waits for the stream's queued work, polling, for at most `timeout`.
    pub(crate) fn wait(&self, timeout: Duration) -> Result<()> {
        A::make_current(&self.ctx)?;
        let raw = self.raw;
        poll(
            || {
                format!(
                    "{} stream synchronize (device {})",
                    A::KIND,
                    A::ordinal(&self.ctx)
                )
            },
            timeout,
            // SAFETY: `raw` is a live stream of the current device.
            || unsafe { A::stream_query(raw) },
        )
    }
}

impl<A: GpuApi> Drop for GpuStream<A> {
    fn drop(&mut self) {
        if !self.owned {
            return;
        }
        let r = A::make_current(&self.ctx).and_then(|()| {
            // SAFETY: the stream is not used after this; pending work still completes.
            unsafe { A::stream_destroy(self.raw) }
        });
        if let Err(err) = r {
            tracing::warn!(%err, "destroying a stream failed");
        }
    }
}

impl<A: GpuApi> Stream for GpuStream<A> {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn synchronize(&self, timeout: Duration) -> Result<()> {
        self.wait(timeout)
    }

    fn record(&self, event: &dyn Event) -> Result<()> {
        let event: &GpuEvent<A> = downcast(event.as_any(), A::KIND, "event")?;
        A::make_current(&self.ctx)?;
        // SAFETY: both handles are live; an event may be recorded on a stream of another
        // context of the same process.
        unsafe { A::event_record(event.raw, self.raw) }
    }

    fn wait_event(&self, event: &dyn Event) -> Result<()> {
        let event: &GpuEvent<A> = downcast(event.as_any(), A::KIND, "event")?;
        A::make_current(&self.ctx)?;
        // SAFETY: both handles are live; the wait is queued with the event's state now.
        unsafe { A::stream_wait_event(self.raw, event.raw) }
    }

    fn is_capturing(&self) -> Result<bool> {
        A::make_current(&self.ctx)?;
        // SAFETY: a live stream of the current device.
        unsafe { A::stream_is_capturing(self.raw) }
    }

    fn begin_capture(&self) -> Result<()> {
        A::make_current(&self.ctx)?;
        // SAFETY: a live stream of the current device.
        unsafe { A::stream_begin_capture(self.raw) }
    }

    fn end_capture(&self) -> Result<Box<dyn Graph>> {
        A::make_current(&self.ctx)?;
        // SAFETY: a live stream of the current device.
        let graph = unsafe { A::stream_end_capture(self.raw) }?;
        // SAFETY: the graph just captured; it is destroyed below, once instantiated (the
        // instance does not need it).
        let exec = unsafe { A::graph_instantiate(graph) };
        // SAFETY: the graph is not used after this.
        if let Err(err) = unsafe { A::graph_destroy(graph) } {
            tracing::warn!(%err, "destroying a captured graph failed");
        }
        Ok(Box::new(GpuGraph::<A> {
            ctx: self.ctx.clone(),
            exec: exec?,
        }))
    }
}

/// An instantiated graph of one device.
pub struct GpuGraph<A: GpuApi> {
    ctx: A::Context,
    exec: A::GraphExec,
}

// SAFETY: graph handles may be used from any thread that makes their device current, which
// every method does first.
unsafe impl<A: GpuApi> Send for GpuGraph<A> {}
// SAFETY: as above; the runtime orders launches of one graph on streams.
unsafe impl<A: GpuApi> Sync for GpuGraph<A> {}

impl<A: GpuApi> Graph for GpuGraph<A> {
    fn launch(&self, stream: &dyn Stream) -> Result<()> {
        let stream: &GpuStream<A> = downcast(stream.as_any(), A::KIND, "stream")?;
        A::make_current(&self.ctx)?;
        // SAFETY: live handles of the current device.
        unsafe { A::graph_launch(self.exec, stream.raw) }
    }
}

impl<A: GpuApi> Drop for GpuGraph<A> {
    fn drop(&mut self) {
        let r = A::make_current(&self.ctx).and_then(|()| {
            // SAFETY: the graph is not used after this; launched work still completes.
            unsafe { A::graph_exec_destroy(self.exec) }
        });
        if let Err(err) = r {
            tracing::warn!(%err, "destroying a graph failed");
        }
    }
}

/// An event with timing enabled.
pub struct GpuEvent<A: GpuApi> {
    ctx: A::Context,
    raw: A::Event,
}

// SAFETY: event handles may be used from any thread that makes their device current, which
// every method does first.
unsafe impl<A: GpuApi> Send for GpuEvent<A> {}
// SAFETY: as above.
unsafe impl<A: GpuApi> Sync for GpuEvent<A> {}

impl<A: GpuApi> GpuEvent<A> {
    pub(crate) fn new(ctx: A::Context) -> Result<Self> {
        A::make_current(&ctx)?;
        // SAFETY: the device is current.
        let raw = unsafe { A::event_create() }?;
        Ok(Self { ctx, raw })
    }

    /// The runtime's handle, for interoperating with other libraries. It stays valid while
    /// this event lives.
    pub fn raw(&self) -> A::Event {
        self.raw
    }
}

impl<A: GpuApi> Drop for GpuEvent<A> {
    fn drop(&mut self) {
        let r = A::make_current(&self.ctx).and_then(|()| {
            // SAFETY: the event is not used after this.
            unsafe { A::event_destroy(self.raw) }
        });
        if let Err(err) = r {
            tracing::warn!(%err, "destroying an event failed");
        }
    }
}

impl<A: GpuApi> Event for GpuEvent<A> {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn synchronize(&self, timeout: Duration) -> Result<()> {
        A::make_current(&self.ctx)?;
        let raw = self.raw;
        poll(
            || {
                format!(
                    "{} event synchronize (device {})",
                    A::KIND,
                    A::ordinal(&self.ctx)
                )
            },
            timeout,
            // SAFETY: `raw` is a live event.
            || unsafe { A::event_query(raw) },
        )
    }

    fn elapsed_ms(&self, end: &dyn Event) -> Result<f32> {
        let end: &GpuEvent<A> = downcast(end.as_any(), A::KIND, "event")?;
        A::make_current(&self.ctx)?;
        // SAFETY: both events are live; the runtime checks that they were recorded.
        unsafe { A::event_elapsed_ms(self.raw, end.raw) }
    }
}
