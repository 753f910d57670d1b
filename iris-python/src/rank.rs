//! The rank's own thread. An [`Iris`] context exists only inside [`World::run`], and its
//! buffers borrow it; a Python object, though, lives as long as Python keeps it. So each
//! Python context starts one thread that runs `World::run`, keeps the context, its
//! communicator and its buffers there, and executes jobs sent from Python one at a time,
//! in the order they were sent (which is what collective calls need).

use std::collections::HashMap;
use std::sync::mpsc::{self, Receiver, RecvError, Sender, TryRecvError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use iris::ccl::Ccl;
use iris::{BackendKind, Error, Iris, World};

use crate::dtype::{AnyBuffer, Element};

/// What a rank knows about itself, reported once its context exists.
#[derive(Clone, Debug)]
pub struct RankInfo {
    /// This rank.
    pub rank: usize,
    /// Ranks in the world.
    pub world_size: usize,
    /// The backend it runs on.
    pub backend: BackendKind,
    /// The device's ordinal within the backend.
    pub device: usize,
    /// The device's name.
    pub device_name: String,
    /// The device's code-object target.
    pub target: String,
    /// Whether the ranks are processes.
    pub processes: bool,
    /// Bytes of the rank's symmetric heap.
    pub heap_bytes: usize,
}

/// One buffer the rank holds.
pub struct Slot<'a> {
    /// The buffer.
    pub buffer: AnyBuffer<'a>,
}

/// The state of the rank's thread: its context, its communicator (created by the first
/// collective) and its buffers by id.
pub struct Rank<'a> {
    /// The context.
    pub iris: &'a Iris,
    ccl: Option<Ccl<'a>>,
    buffers: HashMap<u64, Slot<'a>>,
    /// Mixture-of-experts exchanges (`ctx.moe`), by id.
    pub moes: HashMap<u64, iris::ccl::Moe<'a>>,
    next_id: u64,
}

impl<'a> Rank<'a> {
    fn new(iris: &'a Iris) -> Self {
        Self {
            iris,
            ccl: None,
            buffers: HashMap::new(),
            moes: HashMap::new(),
            next_id: 1,
        }
    }

    /// A new id (of a buffer or an exchange).
    pub fn next_id(&mut self) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    /// Keeps `buffer` and returns its id.
    pub fn insert(&mut self, buffer: AnyBuffer<'a>) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.buffers.insert(id, Slot { buffer });
        id
    }

    /// The buffer `id`, typed.
    pub fn typed<T: Element>(&self, id: u64) -> iris::Result<&iris::SymmetricBuffer<'a, T>> {
        let slot = self.buffers.get(&id).ok_or_else(|| {
            Error::InvalidConfig(format!("symmetric buffer #{id} was freed or never existed"))
        })?;
        T::get(&slot.buffer).ok_or_else(|| {
            Error::InvalidConfig(format!(
                "symmetric buffer #{id} does not hold {} elements",
                T::DTYPE
            ))
        })
    }

    /// Frees buffer `id`.
    pub fn free(&mut self, id: u64) -> iris::Result<()> {
        match self.buffers.remove(&id) {
            Some(slot) => slot.buffer.free(),
            None => Err(Error::InvalidConfig(format!(
                "symmetric buffer #{id} was already freed"
            ))),
        }
    }

    /// The communicator, created on first use (collective: every rank's first collective
    /// creates it at the same point of its sequence of collective calls).
    pub fn ccl(&mut self) -> iris::Result<&Ccl<'a>> {
        if self.ccl.is_none() {
            self.ccl = Some(Ccl::new(self.iris)?);
        }
        self.ccl
            .as_ref()
            .ok_or_else(|| Error::InvalidConfig("the communicator could not be created".into()))
    }

    /// The communicator (made on first use) with two of this rank's buffers, for a
    /// collective from `input` to `output`.
    pub fn collective<T: Element>(
        &mut self,
        input: u64,
        output: u64,
    ) -> iris::Result<(
        &Ccl<'a>,
        &iris::SymmetricBuffer<'a, T>,
        &iris::SymmetricBuffer<'a, T>,
    )> {
        self.ccl()?;
        let ccl = self
            .ccl
            .as_ref()
            .ok_or_else(|| Error::InvalidConfig("the communicator could not be created".into()))?;
        Ok((ccl, self.typed::<T>(input)?, self.typed::<T>(output)?))
    }

    /// The communicator, if a collective made it.
    pub fn ccl_if_made(&self) -> Option<&Ccl<'a>> {
        self.ccl.as_ref()
    }

    /// Frees every buffer (in id order, the order they were made) and the communicator.
    fn close(&mut self) -> iris::Result<()> {
        let mut ids: Vec<u64> = self.buffers.keys().copied().collect();
        ids.sort_unstable();
        let mut first_error = None;
        for id in ids {
            if let Some(slot) = self.buffers.remove(&id) {
                if let Err(err) = slot.buffer.free() {
                    first_error.get_or_insert(err);
                }
            }
        }
        self.moes.clear();
        self.ccl = None;
        first_error.map_or(Ok(()), Err)
    }
}

/// A unit of work run on the rank's thread.
pub type Job = Box<dyn for<'a> FnOnce(&mut Rank<'a>) + Send>;

/// The Python side's handle on a rank's thread.
pub struct RankThread {
    jobs: Mutex<Option<Sender<Job>>>,
    thread: Mutex<Option<JoinHandle<iris::Result<()>>>>,
    /// What the rank reported when it started.
    pub info: RankInfo,
}

/// The result a started rank reports, or its error.
type Ready = Result<RankInfo, Error>;

impl RankThread {
    /// Starts the rank of `world` on its own thread and waits until its context exists
    /// (for a world of processes, until every rank has met at the rendezvous).
    pub fn start(world: World) -> iris::Result<RankThread> {
        let (job_tx, job_rx) = mpsc::channel::<Job>();
        let (ready_tx, ready_rx) = mpsc::channel::<Ready>();
        let receiver = Arc::new(Mutex::new(Some(job_rx)));
        let ready = Mutex::new(Some(ready_tx.clone()));
        let spawned = std::thread::Builder::new()
            .name("iris-python-rank".into())
            .spawn(move || {
                let result = world.run(|iris| serve(iris, &receiver, &ready));
                if let Err(err) = &result {
                    // Before the context existed (else `ready` is taken and this is ignored).
                    let _ = ready_tx.send(Err(Error::InvalidConfig(err.to_string())));
                }
                result.map(drop)
            })
            .map_err(|source| Error::Io {
                what: "starting the rank's thread".into(),
                source,
            })?;
        match ready_rx.recv() {
            Ok(Ok(info)) => Ok(RankThread {
                jobs: Mutex::new(Some(job_tx)),
                thread: Mutex::new(Some(spawned)),
                info,
            }),
            Ok(Err(err)) => {
                let _ = spawned.join();
                Err(err)
            }
            Err(_) => match spawned.join() {
                Ok(Err(err)) => Err(err),
                _ => Err(Error::InvalidConfig(
                    "the rank's thread ended before its context existed".into(),
                )),
            },
        }
    }

    /// Sends `job` to the rank's thread.
    pub fn send(&self, job: Job) -> iris::Result<()> {
        let jobs = self
            .jobs
            .lock()
            .map_err(|_| Error::InvalidConfig("the context's job queue is poisoned".into()))?;
        match jobs.as_ref() {
            Some(tx) => tx.send(job).map_err(|_| closed()),
            None => Err(closed()),
        }
    }

    /// Runs `f` on the rank's thread and waits for its result.
    pub fn call<R, F>(&self, f: F) -> iris::Result<R>
    where
        R: Send + 'static,
        F: for<'a> FnOnce(&mut Rank<'a>) -> iris::Result<R> + Send + 'static,
    {
        let (tx, rx) = mpsc::channel();
        self.send(Box::new(move |rank: &mut Rank<'_>| {
            let _ = tx.send(f(rank));
        }))?;
        recv_spinning(&rx, RESULT_SPIN).map_err(|_| closed())?
    }

    /// Whether the context was closed.
    pub fn is_closed(&self) -> bool {
        self.jobs.lock().map(|j| j.is_none()).unwrap_or(true)
    }

    /// Ends the rank: frees its buffers and communicator, leaves the world, and joins the
    /// thread. Idempotent.
    pub fn close(&self) -> iris::Result<()> {
        if let Ok(mut jobs) = self.jobs.lock() {
            jobs.take();
        }
        let handle = self.thread.lock().ok().and_then(|mut t| t.take());
        match handle.map(JoinHandle::join) {
            None => Ok(()),
            Some(Ok(result)) => result,
            Some(Err(_)) => Err(Error::InvalidConfig("the rank's thread panicked".into())),
        }
    }
}

impl Drop for RankThread {
    fn drop(&mut self) {
        let _ = self.close();
    }
}

/// How long the caller spins for a job's result before it sleeps: a launch takes a few
/// microseconds, and waking a sleeping thread costs as much again.
const RESULT_SPIN: Duration = Duration::from_micros(200);

/// How long the rank's thread spins for the next job after one before it sleeps, so that
/// calls in quick succession (a model step's) do not each pay for waking it.
const NEXT_JOB_SPIN: Duration = Duration::from_micros(100);

/// `rx.recv()`, polling for up to `spin` first.
fn recv_spinning<T>(rx: &Receiver<T>, spin: Duration) -> Result<T, RecvError> {
    let start = Instant::now();
    loop {
        for _ in 0..64 {
            match rx.try_recv() {
                Ok(value) => return Ok(value),
                Err(TryRecvError::Disconnected) => return Err(RecvError),
                Err(TryRecvError::Empty) => std::hint::spin_loop(),
            }
        }
        if start.elapsed() >= spin {
            return rx.recv();
        }
    }
}

fn closed() -> Error {
    Error::InvalidConfig("the context is closed (or its rank failed): make a new Context".into())
}

/// The rank's loop: report the context, then run jobs until the Python side lets go.
fn serve(
    iris: &Iris,
    receiver: &Mutex<Option<Receiver<Job>>>,
    ready: &Mutex<Option<Sender<Ready>>>,
) -> iris::Result<()> {
    let jobs = receiver
        .lock()
        .ok()
        .and_then(|mut r| r.take())
        .ok_or_else(|| Error::InvalidConfig("a context serves one rank".into()))?;
    let info = iris.device_info();
    let report = RankInfo {
        rank: iris.rank(),
        world_size: iris.world_size(),
        backend: iris.backend_kind(),
        device: info.ordinal,
        device_name: info.name.clone(),
        target: info.target.clone(),
        processes: iris.is_process_world(),
        heap_bytes: iris.heap_bytes(),
    };
    if let Some(tx) = ready.lock().ok().and_then(|mut r| r.take()) {
        let _ = tx.send(Ok(report));
    }
    let mut rank = Rank::new(iris);
    while let Ok(job) = recv_spinning(&jobs, NEXT_JOB_SPIN) {
        job(&mut rank);
    }
    rank.close()
}
