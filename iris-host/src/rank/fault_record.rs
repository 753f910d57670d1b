//! A context's fault record: where kernels record the first fault they met (see
//! [`iris_device::abi::peer_table`]): a peer index outside the world (kernels built with
//! peer checks), or a signal wait that gave up (its wait limit passed, or the world
//! aborted), with what it waited for. Every peer table the context makes names it; a
//! launch of a kernel that may record marks it pending, and the next synchronization
//! reads it, resets it and reports [`Error::PeerOutOfRange`] or [`Error::SignalWait`].
//! Without such a launch nothing is read.

use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};
use std::time::Duration;

use iris_device::abi::peer_table::{
    decode_error, decode_wait_fault, WaitCmp, WaitFault, FAULT_CMP, FAULT_EXPECTED,
    FAULT_RECORD_WORDS, FAULT_SEEN, FAULT_SIGNAL, FAULT_THREAD, FAULT_WAITED,
};
use iris_device::abi::KernelSpec;

use super::WorldAbort;
use iris_driver::error::SignalWaitInfo;
use iris_driver::{Device, MemoryKind, Stream};
use iris_driver::{Error, Result};

/// Bytes of the record.
const RECORD_BYTES: usize = FAULT_RECORD_WORDS * 8;

/// One context's fault record on its device.
#[derive(Debug)]
pub(crate) struct FaultRecord {
    addr: u64,
    pending: AtomicBool,
    /// The last kernel launched that waits on signals (named when a wait gave up).
    waiting: AtomicPtr<KernelSpec>,
}

impl FaultRecord {
    /// Allocates the record on `device` and zeroes it (waiting for no kernel).
    pub fn new(device: &dyn Device) -> Result<Self> {
        let addr = device.alloc(RECORD_BYTES, MemoryKind::Device)?;
        // SAFETY: `addr` was just allocated with `RECORD_BYTES` bytes; nothing uses it.
        if let Err(err) = unsafe { device.write_fresh(addr, &[0u8; RECORD_BYTES]) } {
            // SAFETY: nothing has seen `addr`.
            let _ = unsafe { device.free(addr) };
            return Err(err);
        }
        Ok(Self {
            addr,
            pending: AtomicBool::new(false),
            waiting: AtomicPtr::new(std::ptr::null_mut()),
        })
    }

    /// The record's device address, for the peer tables' headers.
    pub fn addr(&self) -> u64 {
        self.addr
    }

    /// Notes the launch of `spec`, a kernel built with peer checks or one that waits on
    /// signals.
    pub fn mark_pending(&self, spec: &'static KernelSpec) {
        if spec.signal_waits {
            self.waiting.store(
                spec as *const KernelSpec as *mut KernelSpec,
                Ordering::Relaxed,
            );
        }
        self.pending.store(true, Ordering::Release);
    }

    /// After `stream`'s work finished: if a kernel that may record was launched since the
    /// last call, reads the record and resets its error word; a fault recorded there is
    /// returned as an error of rank `rank` (a wait that gave up because the world aborted
    /// says why it did).
    pub fn take(
        &self,
        device: &dyn Device,
        stream: &dyn Stream,
        rank: usize,
        abort: &WorldAbort,
    ) -> Result<()> {
        if !self.pending.swap(false, Ordering::AcqRel) {
            return Ok(());
        }
        let mut bytes = [0u8; RECORD_BYTES];
        // SAFETY: the record is a live allocation of this device of `RECORD_BYTES`.
        let read = unsafe { device.memcpy_dtoh(stream, &mut bytes, self.addr) };
        if let Err(err) = read {
            // Read again at the next synchronization.
            self.pending.store(true, Ordering::Release);
            return Err(err);
        }
        let word = |i: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&bytes[i * 8..i * 8 + 8]);
            u64::from_ne_bytes(w)
        };
        let error = word(0);
        if error == 0 {
            return Ok(());
        }
        // SAFETY: as above.
        if let Err(err) = unsafe { device.memcpy_htod(stream, self.addr, &0u64.to_ne_bytes()) } {
            self.pending.store(true, Ordering::Release);
            return Err(err);
        }
        if let Some(why) = decode_wait_fault(error) {
            let waiting = self.waiting.load(Ordering::Relaxed);
            // SAFETY: a pointer to a `'static` kernel spec, or null.
            let kernel = unsafe { waiting.as_ref() }.map_or("?", |k| k.name);
            let thread = word(FAULT_THREAD);
            return Err(Error::SignalWait {
                rank,
                kernel: kernel.to_string(),
                aborted: why == WaitFault::Aborted,
                wait: Box::new(SignalWaitInfo {
                    signal: word(FAULT_SIGNAL),
                    cmp: WaitCmp::from_code(word(FAULT_CMP)).map_or("?", WaitCmp::symbol),
                    expected: word(FAULT_EXPECTED),
                    seen: word(FAULT_SEEN),
                    waited: Duration::from_nanos(word(FAULT_WAITED)),
                    block: thread as u32,
                    thread: (thread >> 32) as u32,
                    reason: match why {
                        WaitFault::TimedOut => "its wait limit passed (90% of IRIS_TIMEOUT): the rank that should signal never did".into(),
                        WaitFault::Aborted => match abort.reason() {
                            Some(why) => format!("the world aborted: {why}"),
                            None => "the world aborted (another rank failed first)".into(),
                        },
                    },
                }),
            });
        }
        let (peer, world_size) = decode_error(error).unwrap_or((error as u32, 0));
        Err(Error::PeerOutOfRange {
            rank,
            peer,
            world_size: world_size as usize,
        })
    }

    /// Releases the record.
    ///
    /// # Safety
    /// No queued or running kernel of the context uses it (nor any table naming it).
    pub unsafe fn free(&self, device: &dyn Device) -> Result<()> {
        // SAFETY: the caller's promise.
        unsafe { device.free(self.addr) }
    }
}
