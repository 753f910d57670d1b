//! The one error type of the runtime.

use std::time::Duration;

use iris_device::abi::TargetKind;

use crate::kind::BackendKind;

/// The result of every fallible runtime call.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in the runtime, with the context needed to act on it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A backend was asked for but cannot be used on this machine.
    #[error("the {kind} backend is unavailable: {reason}")]
    BackendUnavailable {
        /// The backend asked for.
        kind: BackendKind,
        /// Why it cannot be used (for example `libcuda.so not found`).
        reason: String,
    },

    /// No backend could be opened.
    #[error("no backend is available: {}", reasons.join("; "))]
    NoBackend {
        /// Why each backend could not be opened, in the order tried.
        reasons: Vec<String>,
    },

    /// `IRIS_BACKEND` (or a builder option) names no backend.
    #[error("unknown backend `{name}`; known: cuda, hip, cpu")]
    UnknownBackend {
        /// The name given.
        name: String,
    },

    /// An environment variable holds a value that cannot be used.
    #[error("{var}={value:?} is invalid: {reason}")]
    InvalidEnv {
        /// The variable.
        var: &'static str,
        /// Its value.
        value: String,
        /// What is wrong with it.
        reason: String,
    },

    /// A configuration value passed through the API cannot be used.
    #[error("invalid configuration: {0}")]
    InvalidConfig(String),

    /// More ranks share a device than can run kernels that wait for each other on it at
    /// once.
    #[error(
        "rank {rank}: {ranks} ranks share {device}, but at most {fit} can run kernels that wait for each other there: {why}"
    )]
    DeviceOversubscribed {
        /// The rank that found it.
        rank: usize,
        /// The device (`cuda device 0 (NVIDIA H200)`).
        device: String,
        /// Ranks on the device (of this process, where the limit is per process).
        ranks: usize,
        /// How many fit.
        fit: usize,
        /// What limits them, and what to change.
        why: String,
    },

    /// A call into a GPU runtime (driver or HIP) failed.
    #[error("{backend} call {call} failed: {message}")]
    Driver {
        /// The backend whose runtime failed.
        backend: BackendKind,
        /// The runtime function that failed (`cuMemAlloc_v2`, `hipModuleLaunchKernel`, ...).
        call: &'static str,
        /// The runtime's description of the failure.
        message: String,
    },

    /// A device ordinal beyond the devices the backend found.
    #[error("{backend} device {ordinal} does not exist ({count} device(s) found)")]
    NoSuchDevice {
        /// The backend.
        backend: BackendKind,
        /// The ordinal asked for.
        ordinal: usize,
        /// How many devices there are.
        count: usize,
    },

    /// A kernel unit carries no code object the device can load.
    #[error(
        "kernel unit `{unit}` has no code object for {kind:?} target `{device_target}`; it was compiled for: {}{}",
        if available.is_empty() { "no target".to_string() } else { available.join(", ") },
        left_out.map(|why| format!(" ({device_target} was left out: {why})")).unwrap_or_default()
    )]
    NoCodeObject {
        /// The unit's id.
        unit: &'static str,
        /// The device family.
        kind: TargetKind,
        /// The device's target (`gfx942`, `sm_90`, the host triple).
        device_target: String,
        /// The targets the unit was compiled for.
        available: Vec<&'static str>,
        /// Why the compiler left the device's target out, when it did.
        left_out: Option<&'static str>,
    },

    /// A code object was found but could not be loaded.
    #[error("loading kernel unit `{unit}` (target `{target}`) failed: {reason}")]
    ModuleLoad {
        /// The unit's id.
        unit: &'static str,
        /// The code object's target.
        target: &'static str,
        /// Why it failed.
        reason: String,
    },

    /// A launch names a kernel index the unit does not have.
    #[error("kernel unit `{unit}` has {count} kernel(s); index {index} does not exist")]
    NoSuchKernel {
        /// The unit's id.
        unit: &'static str,
        /// The index asked for.
        index: usize,
        /// How many kernels the unit has.
        count: usize,
    },

    /// The arguments of a launch do not match the kernel's parameters.
    #[error("kernel `{kernel}`: {reason}")]
    InvalidArguments {
        /// The kernel's name.
        kernel: String,
        /// What does not match.
        reason: String,
    },

    /// A grid or block that the kernel or the device cannot run.
    #[error("kernel `{kernel}`: invalid launch configuration: {reason}")]
    InvalidLaunchConfig {
        /// The kernel's name.
        kernel: String,
        /// What is wrong.
        reason: String,
    },

    /// A buffer or pointer of one context used with another.
    #[error(
        "launching with a buffer from another context: the {what} belongs to context {owner}, the launch is on context {launcher} (rank {rank})"
    )]
    ForeignBuffer {
        /// What was passed (`buffer`, `symmetric buffer`, `device pointer`).
        what: &'static str,
        /// The context that owns it.
        owner: u64,
        /// The context it was used with.
        launcher: u64,
        /// The rank of the context it was used with.
        rank: usize,
    },

    /// A symmetric allocation with a peer the launching rank cannot reach.
    #[error("rank {rank} cannot reach rank {peer}'s copy of a symmetric allocation (no peer access between their devices)")]
    UnreachablePeer {
        /// The launching rank.
        rank: usize,
        /// The peer it cannot reach.
        peer: usize,
    },

    /// A kernel built with peer checks (`#[iris::kernel(peer_checks)]`,
    /// `IRIS_PEER_CHECKS=1`) used a peer index outside the world in a remote operation.
    /// The access went to a scratch slot of the peer table, so no rank's memory was
    /// touched by it (a load returned an unspecified value). Reported by the rank's next
    /// `Iris::synchronize` (or a copy that waits for its
    /// work), for the first bad peer since the last report.
    #[error("rank {rank}: a kernel built with peer checks used peer index {peer}, but the world has {world_size} ranks (valid peers 0..{world_size}); the access went to a scratch slot, not to any peer")]
    PeerOutOfRange {
        /// The rank whose kernel used the peer.
        rank: usize,
        /// The peer index it used (a negative `i32` cast to the `u32` peer shows as a
        /// large number).
        peer: u32,
        /// The world size.
        world_size: usize,
    },

    /// A device-side signal wait (`signal_wait_until`) gave up: its wait limit passed, or
    /// the world aborted while it waited. Reported by the rank's next `synchronize` (or a
    /// copy that waits for its work), for the first wait that gave up since the last
    /// report; later waits of the rank gave up at once.
    #[error(
        "rank {rank}: kernel `{kernel}` gave up waiting for signal {:#x} {} {} after {:?} (block {}, thread {}): it saw {}; {}",
        wait.signal, wait.cmp, wait.expected, wait.waited, wait.block, wait.thread, wait.seen, wait.reason
    )]
    SignalWait {
        /// The rank whose kernel waited.
        rank: usize,
        /// The kernel (the last one launched with signal waits since the last report).
        kernel: String,
        /// Whether it gave up because the world aborted (another rank failed first).
        aborted: bool,
        /// What it waited for.
        wait: Box<SignalWaitInfo>,
    },

    /// A symmetric address map whose invariants do not hold.
    #[error("invalid symmetric address map: {0}")]
    InvalidAddressMap(String),

    /// The symmetric heap has no free range large enough.
    #[error(
        "symmetric heap of rank {rank} is exhausted: {requested} bytes requested, {free} of {heap} bytes free, largest free range {largest} bytes"
    )]
    HeapExhausted {
        /// The rank whose heap is exhausted.
        rank: usize,
        /// Bytes asked for (rounded to the heap's granule).
        requested: usize,
        /// Free bytes in the heap.
        free: usize,
        /// The largest free range.
        largest: usize,
        /// The heap's size.
        heap: usize,
    },

    /// A heap range freed that is not allocated (a double free, or an offset never handed out).
    #[error("invalid free of symmetric heap offset {offset} on rank {rank}: {reason}")]
    InvalidFree {
        /// The rank.
        rank: usize,
        /// The offset freed.
        offset: usize,
        /// Why it is invalid.
        reason: String,
    },

    /// Ranks entered a collective operation with different arguments.
    #[error("ranks disagree in collective `{op}`: {details}")]
    SymmetryMismatch {
        /// The collective operation.
        op: String,
        /// What each rank asked for.
        details: String,
    },

    /// A device allocation failed.
    #[error("allocating {bytes} bytes on {backend} device {ordinal} failed: {reason}")]
    OutOfMemory {
        /// The backend.
        backend: BackendKind,
        /// The device.
        ordinal: usize,
        /// Bytes asked for.
        bytes: usize,
        /// Why it failed.
        reason: String,
    },

    /// A device address range that no allocation covers.
    #[error("device address range {addr:#x}..+{bytes} is not inside one allocation: {reason}")]
    InvalidAddress {
        /// Start of the range.
        addr: u64,
        /// Its length.
        bytes: usize,
        /// Why it is invalid.
        reason: String,
    },

    /// Host and device lengths that differ.
    #[error("length mismatch in {what}: expected {expected} elements, got {got}")]
    LengthMismatch {
        /// The operation.
        what: &'static str,
        /// Elements expected.
        expected: usize,
        /// Elements given.
        got: usize,
    },

    /// An element count whose byte size overflows.
    #[error("{count} elements of {elem_bytes} bytes overflow the address space")]
    SizeOverflow {
        /// Elements asked for.
        count: usize,
        /// Bytes per element.
        elem_bytes: usize,
    },

    /// A wait that did not finish in time.
    #[error(
        "{}timed out after {waited:?} in {what}{}",
        who(rank),
        missing_ranks(missing)
    )]
    Timeout {
        /// The rank that waited (`None` below the rank layer: a backend's own wait).
        rank: Option<usize>,
        /// What it waited for.
        what: String,
        /// How long it waited.
        waited: Duration,
        /// The ranks that did not arrive (empty for device waits).
        missing: Vec<usize>,
    },

    /// Another rank failed or left while this rank waited for it.
    #[error("rank {rank} stopped waiting in {what}: rank {peer} {reason}")]
    PeerFailed {
        /// The rank that waited.
        rank: usize,
        /// What it waited for.
        what: String,
        /// The rank that failed or left.
        peer: usize,
        /// What happened to it.
        reason: String,
    },

    /// A rank of a world returned an error.
    #[error("rank {rank} failed: {source}")]
    RankFailed {
        /// The rank.
        rank: usize,
        /// Its error.
        #[source]
        source: Box<Error>,
    },

    /// A rank of a world panicked.
    #[error("rank {rank} panicked: {message}")]
    RankPanicked {
        /// The rank.
        rank: usize,
        /// The panic message.
        message: String,
    },

    /// A backend asked for something it does not implement (for example exportable
    /// memory on a backend without inter-process memory support).
    #[error("the {backend} backend does not support {what}")]
    Unsupported {
        /// The backend.
        backend: BackendKind,
        /// What it was asked for.
        what: &'static str,
    },

    /// Two processes of one job claim the same rank.
    #[error("two processes claim rank {rank}: {details}")]
    RankConflict {
        /// The rank claimed twice.
        rank: usize,
        /// Who claims it.
        details: String,
    },

    /// A rendezvous message that cannot be decoded, or that breaks the protocol.
    #[error("malformed rendezvous message ({what}): {reason}")]
    Protocol {
        /// Which message.
        what: String,
        /// What is wrong with it.
        reason: String,
    },

    /// A provider asked about memory it did not allocate.
    #[error(
        "the {provider} provider did not allocate device address {addr:#x}: a symmetric map exists only for memory its provider allocated (deriving one on demand would be a collective call the other ranks never make)"
    )]
    NotSymmetric {
        /// The provider asked.
        provider: &'static str,
        /// The address asked about.
        addr: u64,
    },

    /// A SHMEM engine (NVSHMEM, rocSHMEM) cannot serve symmetric memory here.
    #[error("{engine} is unavailable: {reason}")]
    ShmemUnavailable {
        /// The engine (`NVSHMEM`, `rocSHMEM`, or `SHMEM` when the backend has none).
        engine: &'static str,
        /// Why: the library was not found (with every place searched), it failed to
        /// start, or this world cannot use it.
        reason: String,
    },

    /// An operating-system call failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

/// What a device-side signal wait that gave up waited for ([`Error::SignalWait`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignalWaitInfo {
    /// The device address of the rank's copy of the signal.
    pub signal: u64,
    /// The comparison (`>=`).
    pub cmp: &'static str,
    /// The value it waited for.
    pub expected: u64,
    /// The value it saw last.
    pub seen: u64,
    /// How long it waited.
    pub waited: Duration,
    /// The waiting thread's block (x).
    pub block: u32,
    /// The waiting thread (x).
    pub thread: u32,
    /// Why it gave up.
    pub reason: String,
}

fn who(rank: &Option<usize>) -> String {
    match rank {
        Some(r) => format!("rank {r} "),
        None => String::new(),
    }
}

fn missing_ranks(missing: &[usize]) -> String {
    if missing.is_empty() {
        String::new()
    } else {
        let list: Vec<String> = missing.iter().map(ToString::to_string).collect();
        format!("; rank(s) {} did not arrive", list.join(", "))
    }
}

impl Error {
    /// This error with the rank filled in where a lower layer could not know it.
    pub fn on_rank(self, rank: usize) -> Error {
        match self {
            Error::Timeout {
                rank: None,
                what,
                waited,
                missing,
            } => Error::Timeout {
                rank: Some(rank),
                what,
                waited,
                missing,
            },
            other => other,
        }
    }

    /// Whether this error only reports that another rank failed first (as opposed to a
    /// failure of its own).
    pub fn is_secondary(&self) -> bool {
        match self {
            Error::PeerFailed { .. } => true,
            Error::SignalWait { aborted, .. } => *aborted,
            Error::RankFailed { source, .. } => source.is_secondary(),
            _ => false,
        }
    }
}

/// The message of a caught panic.
pub fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic without a message".into()
    }
}
