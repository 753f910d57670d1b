//! A CPU stream: a thread that runs queued work in order.

use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use super::event::CpuEvent;
use crate::error::{panic_message, Error, Result};
use crate::sync::{deadline, lock, wait_until};
use crate::{downcast, BackendKind, Event, Stream};

/// How long work queued after [`Stream::wait_event`] waits for the other stream to reach
/// the event (that stream's work is bounded itself: every wait of iris gives up).
const EVENT_WAIT_TIMEOUT: Duration = Duration::from_secs(600);

/// One unit of queued work; an `Err` is reported by the next `synchronize`.
pub(crate) type Job = Box<dyn FnOnce() -> Result<(), String> + Send>;

#[derive(Debug, Default)]
struct Progress {
    queued: u64,
    done: u64,
    error: Option<String>,
}

#[derive(Debug, Default)]
struct Shared {
    progress: Mutex<Progress>,
    cv: Condvar,
}

/// An ordered queue of work, run by its own thread.
#[derive(Debug)]
pub(crate) struct CpuStream {
    shared: Arc<Shared>,
    sender: Mutex<Option<Sender<Job>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl CpuStream {
    /// Starts the stream's thread.
    pub(crate) fn new() -> Result<Self> {
        let shared = Arc::new(Shared::default());
        let (sender, receiver) = channel::<Job>();
        let worker = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("iris-cpu-stream".into())
            .spawn(move || {
                for job in receiver {
                    let outcome = catch_unwind(AssertUnwindSafe(job)).unwrap_or_else(|panic| {
                        Err(format!("queued work panicked: {}", panic_message(&*panic)))
                    });
                    let mut p = lock(&worker.progress);
                    p.done += 1;
                    if let Err(message) = outcome {
                        p.error.get_or_insert(message);
                    }
                    drop(p);
                    worker.cv.notify_all();
                }
            })
            .map_err(|source| Error::Io {
                what: "starting a CPU stream thread".into(),
                source,
            })?;
        Ok(Self {
            shared,
            sender: Mutex::new(Some(sender)),
            thread: Mutex::new(Some(thread)),
        })
    }

    /// Queues `job` after all work queued so far.
    pub(crate) fn submit(&self, job: Job) -> Result<()> {
        let sender = lock(&self.sender);
        let Some(sender) = sender.as_ref() else {
            return Err(stream_error("the stream is shut down"));
        };
        lock(&self.shared.progress).queued += 1;
        if sender.send(job).is_err() {
            let mut p = lock(&self.shared.progress);
            p.queued -= 1;
            return Err(stream_error("the stream's thread has stopped"));
        }
        Ok(())
    }

    fn is_idle(&self) -> bool {
        let p = lock(&self.shared.progress);
        p.done == p.queued
    }
}

impl Stream for CpuStream {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn synchronize(&self, timeout: Duration) -> Result<()> {
        let guard = lock(&self.shared.progress);
        let (mut p, finished) = wait_until(&self.shared.cv, guard, deadline(timeout), |p| {
            p.done == p.queued
        });
        if !finished {
            return Err(Error::Timeout {
                rank: None,
                what: format!(
                    "CPU stream synchronize ({} queued launch(es) still running)",
                    p.queued - p.done
                ),
                waited: timeout,
                missing: Vec::new(),
            });
        }
        match p.error.take() {
            Some(message) => Err(stream_error(&message)),
            None => Ok(()),
        }
    }

    fn record(&self, event: &dyn Event) -> Result<()> {
        let event = downcast::<CpuEvent>(event.as_any(), BackendKind::Cpu, "event")?;
        let mark = event.arm();
        self.submit(Box::new(move || {
            mark.complete();
            Ok(())
        }))
    }

    /// Queues a step that blocks this stream's thread until the event's latest recording
    /// (on any stream) is reached.
    fn wait_event(&self, event: &dyn Event) -> Result<()> {
        let event = downcast::<CpuEvent>(event.as_any(), BackendKind::Cpu, "event")?;
        let waiter = event.waiter();
        self.submit(Box::new(move || waiter.wait(EVENT_WAIT_TIMEOUT)))
    }
}

impl Drop for CpuStream {
    fn drop(&mut self) {
        lock(&self.sender).take();
        let thread = lock(&self.thread).take();
        if let Some(thread) = thread {
            if self.is_idle() {
                let _ = thread.join();
            } else {
                // Work still runs (a kernel that never finished): leave its thread be
                // rather than hang the caller.
                tracing::warn!("dropping a CPU stream whose work has not finished");
            }
        }
    }
}

fn stream_error(message: &str) -> Error {
    Error::Driver {
        backend: BackendKind::Cpu,
        call: "stream",
        message: message.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

    #[test]
    fn work_after_a_wait_for_an_event_runs_once_the_other_stream_reaches_it() {
        let (first, second) = (CpuStream::new().unwrap(), CpuStream::new().unwrap());
        let done = Arc::new(AtomicBool::new(false));
        let seen = Arc::new(AtomicU8::new(0));
        let d = Arc::clone(&done);
        first
            .submit(Box::new(move || {
                std::thread::sleep(Duration::from_millis(100));
                d.store(true, Ordering::SeqCst);
                Ok(())
            }))
            .unwrap();
        let event = CpuEvent::default();
        first.record(&event).unwrap();
        second.wait_event(&event).unwrap();
        let (d, s) = (Arc::clone(&done), Arc::clone(&seen));
        second
            .submit(Box::new(move || {
                s.store(1 + u8::from(d.load(Ordering::SeqCst)), Ordering::SeqCst);
                Ok(())
            }))
            .unwrap();
        second.synchronize(Duration::from_secs(10)).unwrap();
        assert_eq!(
            seen.load(Ordering::SeqCst),
            2,
            "ran before the event was reached"
        );
    }

    #[test]
    fn a_wait_for_an_event_never_recorded_waits_for_nothing() {
        let stream = CpuStream::new().unwrap();
        stream.wait_event(&CpuEvent::default()).unwrap();
        stream.synchronize(Duration::from_secs(10)).unwrap();
    }

    #[test]
    fn a_wait_is_for_the_recording_made_before_it_not_a_later_one() {
        let (first, second) = (CpuStream::new().unwrap(), CpuStream::new().unwrap());
        let event = CpuEvent::default();
        first.record(&event).unwrap();
        first.synchronize(Duration::from_secs(10)).unwrap();
        second.wait_event(&event).unwrap();
        // Recorded again behind a long step: the wait above is for the first recording.
        first
            .submit(Box::new(|| {
                std::thread::sleep(Duration::from_secs(5));
                Ok(())
            }))
            .unwrap();
        first.record(&event).unwrap();
        let start = std::time::Instant::now();
        second.synchronize(Duration::from_secs(10)).unwrap();
        assert!(
            start.elapsed() < Duration::from_secs(4),
            "{:?}",
            start.elapsed()
        );
    }
}
