//! `Event`: a marker in a rank's stream, for timing device work.

use std::fmt;

use iris_driver::{self as driver, Result};

use crate::rank::RankCore;

/// A marker recorded in a rank's stream. The time between two events is the device time
/// of the work queued between them.
///
/// ```
/// # use iris_host::World;
/// # fn main() -> iris_host::Result<()> {
/// World::threads(1).heap_bytes(1 << 20).run(|iris| {
///     let a = iris.full::<f32>(1 << 16, 1.0)?;
///     let b = iris.zeros::<f32>(1 << 16)?;
///     let start = iris.record_event()?;
///     b.copy_from_buffer(&a)?; // or a kernel launch
///     let end = iris.record_event()?;
///     end.synchronize()?;
///     assert!(start.elapsed_ms(&end)? >= 0.0);
///     Ok(())
/// })?;
/// # Ok(())
/// # }
/// ```
pub struct Event<'ctx> {
    core: &'ctx RankCore,
    inner: Box<dyn driver::Event>,
}

impl<'ctx> Event<'ctx> {
    /// A new event of `core`'s device, not yet recorded.
    pub(crate) fn new(core: &'ctx RankCore) -> Result<Self> {
        Ok(Self {
            core,
            inner: core.device().create_event()?,
        })
    }

    /// Records the event at the current end of its rank's stream.
    pub(crate) fn record(&self) -> Result<()> {
        self.core.stream().record(&*self.inner)
    }

    /// Waits until the work queued before the event has finished.
    pub fn synchronize(&self) -> Result<()> {
        self.inner
            .synchronize(self.core.timeout())
            .map_err(|e| e.on_rank(self.core.rank()))
    }

    /// Milliseconds of device time from this event to `end` (waits for `end`).
    pub fn elapsed_ms(&self, end: &Event<'_>) -> Result<f32> {
        end.synchronize()?;
        self.synchronize()?;
        self.inner.elapsed_ms(&*end.inner)
    }
}

impl fmt::Debug for Event<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Event")
            .field("context", &self.core.id())
            .finish_non_exhaustive()
    }
}
