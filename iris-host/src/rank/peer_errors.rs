//! A context's error word: where kernels built with peer checks record the first peer
//! index outside the world (see [`iris_device::abi::peer_table`]). Every peer table the
//! context makes names it; a launch of a checked kernel marks it pending, and the next
//! synchronization reads it, resets it and reports [`Error::PeerOutOfRange`]. Without a
//! checked launch nothing is read.

use std::sync::atomic::{AtomicBool, Ordering};

use iris_device::abi::peer_table::decode_error;

use iris_driver::{Device, MemoryKind, Stream};
use iris_driver::{Error, Result};

/// One context's error word on its device.
#[derive(Debug)]
pub(crate) struct PeerErrors {
    addr: u64,
    pending: AtomicBool,
}

impl PeerErrors {
    /// Allocates the word on `device` and zeroes it (a copy ordered on `stream`).
    pub fn new(device: &dyn Device, stream: &dyn Stream) -> Result<Self> {
        let addr = device.alloc(8, MemoryKind::Device)?;
        // SAFETY: `addr` was just allocated with 8 bytes.
        if let Err(err) = unsafe { device.memcpy_htod(stream, addr, &0u64.to_ne_bytes()) } {
            // SAFETY: nothing has seen `addr`.
            let _ = unsafe { device.free(addr) };
            return Err(err);
        }
        Ok(Self {
            addr,
            pending: AtomicBool::new(false),
        })
    }

    /// The word's device address, for the peer tables' headers.
    pub fn addr(&self) -> u64 {
        self.addr
    }

    /// Notes the launch of a kernel built with peer checks.
    pub fn mark_pending(&self) {
        self.pending.store(true, Ordering::Release);
    }

    /// After `stream`'s work finished: if a checked kernel was launched since the last
    /// call, reads the word and resets it to 0; an error recorded there is returned as
    /// [`Error::PeerOutOfRange`] of rank `rank`.
    pub fn take(&self, device: &dyn Device, stream: &dyn Stream, rank: usize) -> Result<()> {
        if !self.pending.swap(false, Ordering::AcqRel) {
            return Ok(());
        }
        let mut bytes = [0u8; 8];
        // SAFETY: the word is a live 8-byte allocation of this device.
        let read = unsafe { device.memcpy_dtoh(stream, &mut bytes, self.addr) };
        if let Err(err) = read {
            // Read again at the next synchronization.
            self.mark_pending();
            return Err(err);
        }
        let word = u64::from_ne_bytes(bytes);
        if word == 0 {
            return Ok(());
        }
        // SAFETY: as above.
        if let Err(err) = unsafe { device.memcpy_htod(stream, self.addr, &0u64.to_ne_bytes()) } {
            self.mark_pending();
            return Err(err);
        }
        let (peer, world_size) = decode_error(word).unwrap_or((word as u32, 0));
        Err(Error::PeerOutOfRange {
            rank,
            peer,
            world_size: world_size as usize,
        })
    }

    /// Releases the word.
    ///
    /// # Safety
    /// No queued or running kernel of the context uses it (nor any table naming it).
    pub unsafe fn free(&self, device: &dyn Device) -> Result<()> {
        // SAFETY: the caller's promise.
        unsafe { device.free(self.addr) }
    }
}
