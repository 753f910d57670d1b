//! A CPU event: the instant the stream's thread reached it.

use std::any::Any;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::sync::{deadline, lock, wait_until};
use crate::{downcast, BackendKind, Event};

#[derive(Debug, Default)]
struct State {
    /// Bumped by every record, so a stale completion does not complete a newer record.
    generation: u64,
    recorded: bool,
    reached: Option<Instant>,
    /// The latest recording reached (recordings of one stream are reached in order).
    reached_generation: u64,
}

#[derive(Debug, Default)]
struct Shared {
    state: Mutex<State>,
    cv: Condvar,
}

/// A marker in a CPU stream.
#[derive(Debug, Default)]
pub(crate) struct CpuEvent {
    shared: Arc<Shared>,
}

/// Completes one recording of an event, from the stream's thread.
pub(crate) struct Mark {
    shared: Arc<Shared>,
    generation: u64,
}

impl Mark {
    /// The stream has reached the event.
    pub(crate) fn complete(self) {
        let mut s = lock(&self.shared.state);
        if s.generation == self.generation {
            s.reached = Some(Instant::now());
        }
        s.reached_generation = s.reached_generation.max(self.generation);
        drop(s);
        self.shared.cv.notify_all();
    }
}

/// One recording of an event that another stream's work waits for.
pub(crate) struct Waiter {
    shared: Arc<Shared>,
    generation: Option<u64>,
}

impl Waiter {
    /// Blocks until the recording is reached, for at most `timeout`.
    pub(crate) fn wait(self, timeout: Duration) -> std::result::Result<(), String> {
        let Some(generation) = self.generation else {
            return Ok(());
        };
        let guard = lock(&self.shared.state);
        let (_guard, reached) = wait_until(&self.shared.cv, guard, deadline(timeout), |s| {
            s.reached_generation >= generation
        });
        if reached {
            Ok(())
        } else {
            Err(format!(
                "work ordered after another stream's event waited {timeout:?} for it"
            ))
        }
    }
}

impl CpuEvent {
    /// Starts a new recording; the returned mark completes it.
    pub(crate) fn arm(&self) -> Mark {
        let mut s = lock(&self.shared.state);
        s.generation = s.generation.wrapping_add(1);
        s.recorded = true;
        s.reached = None;
        Mark {
            shared: Arc::clone(&self.shared),
            generation: s.generation,
        }
    }

    /// The event's latest recording, for work of another stream to wait for
    /// ([`Stream::wait_event`](crate::Stream::wait_event)): nothing to wait for when the
    /// event was never recorded, as on the GPUs.
    pub(crate) fn waiter(&self) -> Waiter {
        let s = lock(&self.shared.state);
        Waiter {
            shared: Arc::clone(&self.shared),
            generation: s.recorded.then_some(s.generation),
        }
    }

    fn reached(&self) -> Result<Instant> {
        let s = lock(&self.shared.state);
        match (s.recorded, s.reached) {
            (_, Some(t)) => Ok(t),
            (false, None) => Err(event_error("the event was never recorded")),
            (true, None) => Err(event_error("the event has not completed yet")),
        }
    }
}

impl Event for CpuEvent {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn synchronize(&self, timeout: Duration) -> Result<()> {
        let guard = lock(&self.shared.state);
        let (_guard, done) = wait_until(&self.shared.cv, guard, deadline(timeout), |s| {
            !s.recorded || s.reached.is_some()
        });
        if done {
            Ok(())
        } else {
            Err(Error::Timeout {
                rank: None,
                what: "CPU event synchronize".into(),
                waited: timeout,
                missing: Vec::new(),
            })
        }
    }

    fn elapsed_ms(&self, end: &dyn Event) -> Result<f32> {
        let end = downcast::<CpuEvent>(end.as_any(), BackendKind::Cpu, "event")?;
        let (start, stop) = (self.reached()?, end.reached()?);
        let ms = if stop >= start {
            (stop - start).as_secs_f64() * 1e3
        } else {
            -((start - stop).as_secs_f64() * 1e3)
        };
        Ok(ms as f32)
    }
}

fn event_error(message: &str) -> Error {
    Error::Driver {
        backend: BackendKind::Cpu,
        call: "event",
        message: message.to_string(),
    }
}
