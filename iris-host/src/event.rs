//! `Event`: a marker in a rank's stream, for timing device work.

use std::fmt;

use crate::context::Iris;
use iris_driver as backend;
use iris_driver::Result;

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
    iris: &'ctx Iris,
    inner: Box<dyn backend::Event>,
}

impl<'ctx> Event<'ctx> {
    pub(crate) fn new(iris: &'ctx Iris, inner: Box<dyn backend::Event>) -> Self {
        Self { iris, inner }
    }

    pub(crate) fn inner(&self) -> &dyn backend::Event {
        &*self.inner
    }

    /// Waits until the work queued before the event has finished.
    pub fn synchronize(&self) -> Result<()> {
        self.inner
            .synchronize(self.iris.timeout())
            .map_err(|e| e.on_rank(self.iris.rank()))
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
            .field("context", &self.iris.id())
            .finish_non_exhaustive()
    }
}
