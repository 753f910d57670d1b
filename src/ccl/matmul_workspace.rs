//! The all-gather GEMM's workspaces, kept by the communicator between calls: the
//! copy-ahead form's task counter, rows' flags and gathered A
//! (`AllGatherMatmulAlgo::CopyAhead`), and the snapshot form's two copies of this rank's
//! A (`AllGatherMatmulAlgo::Snapshot`).

use std::cell::{Cell, RefCell};

use crate::prelude::{bf16, f16};
use crate::{DevicePtr, Iris, Pod, Result, SymmetricBuffer};

/// The copy-ahead all-gather GEMM's workspace in a communicator: the task counter and the
/// rows' flags (`work`, symmetric since signal waits are), the gathered A, and the
/// serial of the last launch (a flag set to it says its rows landed in that launch).
struct AheadWork<'ctx> {
    work: SymmetricBuffer<'ctx, u64>,
    gathered: crate::Buffer<'ctx, u8>,
    epoch: u64,
}

/// What [`AheadSlot::with_work`] calls: the flags, the gathered A, the launch's serial.
pub(crate) type WithWork<'f> =
    dyn FnMut(&SymmetricBuffer<'_, u64>, DevicePtr<u8>, u64) -> Result<()> + 'f;

/// Where a communicator keeps its [`AheadWork`], made by the first copy-ahead call.
///
/// A trait object so that `Ccl<'ctx>` stays covariant in `'ctx` (a `RefCell` holding
/// `'ctx` buffers directly would make it invariant, and `&'a Ccl<'a>` stop compiling).
pub(crate) trait AheadSlot {
    /// Calls `f` with the workspace (at least `words` flag words and `bytes` of gathered
    /// A, made or grown first: collective, every rank is in the same call) and the next
    /// launch's serial.
    fn with_work(&self, words: usize, bytes: usize, f: &mut WithWork<'_>) -> Result<()>;
}

/// The communicator's [`AheadSlot`].
pub(crate) struct AheadCell<'ctx> {
    iris: &'ctx Iris,
    work: std::cell::RefCell<Option<AheadWork<'ctx>>>,
}

impl<'ctx> AheadCell<'ctx> {
    /// An empty slot of `iris`'s rank.
    pub(crate) fn new(iris: &'ctx Iris) -> Self {
        Self {
            iris,
            work: std::cell::RefCell::new(None),
        }
    }
}

impl AheadSlot for AheadCell<'_> {
    fn with_work(&self, words: usize, bytes: usize, f: &mut WithWork<'_>) -> Result<()> {
        let mut slot = self.work.borrow_mut();
        if slot
            .as_ref()
            .is_none_or(|w| w.work.len() < words || w.gathered.len() < bytes)
        {
            // Later flags start at 0, below every serial to come.
            let epoch = slot.as_ref().map_or(0, |w| w.epoch);
            *slot = None;
            *slot = Some(AheadWork {
                work: self.iris.symmetric_zeros::<u64>(words)?,
                gathered: self.iris.zeros::<u8>(bytes)?,
                epoch,
            });
        }
        let work = slot.as_mut().expect("made above");
        work.epoch += 1;
        f(&work.work, work.gathered.device_ptr(), work.epoch)
    }
}

/// What [`SnapshotSlot`]'s calls hand to their closure: the half of the workspace this
/// call's snapshot of A goes into, which the peers read.
pub(crate) type WithHalf<'f, T> = dyn FnMut(&SymmetricBuffer<'_, T>) -> Result<()> + 'f;

/// Where a communicator keeps the snapshot all-gather GEMM's workspace: two symmetric
/// copies of A a type, used by turns (call `e` writes half `e % 2`), so that a rank
/// writes a half only after every peer finished reading it two calls before (each read
/// ends before the peer arrives at the next call's barrier, which this rank waited for
/// before its next call). A trait object so that `Ccl<'ctx>` stays covariant in `'ctx`.
#[doc(hidden)]
pub trait SnapshotSlot {
    /// Calls `f` with this call's half for `bf16` (at least `len` elements, made or grown
    /// first: collective; `before_freeing` runs before a smaller workspace is freed,
    /// which peers may still read).
    fn with_bf16(
        &self,
        len: usize,
        before_freeing: &dyn Fn() -> Result<()>,
        f: &mut WithHalf<'_, bf16>,
    ) -> Result<()>;
    /// [`with_bf16`](Self::with_bf16) for `f16`.
    fn with_f16(
        &self,
        len: usize,
        before_freeing: &dyn Fn() -> Result<()>,
        f: &mut WithHalf<'_, f16>,
    ) -> Result<()>;
    /// Whether a peer may still read a half: a snapshot call ran and no barrier of the
    /// communicator came after it.
    fn pending(&self) -> bool;
    /// Says whether a peer may still read a half (set by a snapshot call, cleared by a
    /// barrier).
    fn set_pending(&self, pending: bool);
    /// Never frees the workspace (a peer may still read it and no barrier could tell).
    fn leak(&self);
}

/// The two halves of one element type's workspace and the calls made so far.
struct Halves<'ctx, T: Pod> {
    halves: [SymmetricBuffer<'ctx, T>; 2],
    calls: u64,
}

/// The communicator's [`SnapshotSlot`].
pub(crate) struct SnapshotCell<'ctx> {
    iris: &'ctx Iris,
    bf16: RefCell<Option<Halves<'ctx, bf16>>>,
    f16: RefCell<Option<Halves<'ctx, f16>>>,
    pending: Cell<bool>,
}

impl<'ctx> SnapshotCell<'ctx> {
    /// An empty slot of `iris`'s rank.
    pub(crate) fn new(iris: &'ctx Iris) -> Self {
        Self {
            iris,
            bf16: RefCell::new(None),
            f16: RefCell::new(None),
            pending: Cell::new(false),
        }
    }

    fn with<T: Pod>(
        &self,
        slot: &RefCell<Option<Halves<'ctx, T>>>,
        len: usize,
        before_freeing: &dyn Fn() -> Result<()>,
        f: &mut WithHalf<'_, T>,
    ) -> Result<()> {
        let mut slot = slot.borrow_mut();
        if slot.as_ref().is_none_or(|h| h.halves[0].len() < len) {
            let calls = slot.as_ref().map_or(0, |h| h.calls);
            if slot.is_some() {
                // The peers' last reads of the smaller halves end before this barrier.
                before_freeing()?;
                *slot = None;
            }
            *slot = Some(Halves {
                halves: [
                    self.iris.symmetric_zeros::<T>(len)?,
                    self.iris.symmetric_zeros::<T>(len)?,
                ],
                calls,
            });
        }
        let halves = slot.as_mut().expect("made above");
        let half = (halves.calls % 2) as usize;
        halves.calls += 1;
        f(&halves.halves[half])
    }
}

impl SnapshotSlot for SnapshotCell<'_> {
    fn with_bf16(
        &self,
        len: usize,
        before_freeing: &dyn Fn() -> Result<()>,
        f: &mut WithHalf<'_, bf16>,
    ) -> Result<()> {
        self.with(&self.bf16, len, before_freeing, f)
    }

    fn with_f16(
        &self,
        len: usize,
        before_freeing: &dyn Fn() -> Result<()>,
        f: &mut WithHalf<'_, f16>,
    ) -> Result<()> {
        self.with(&self.f16, len, before_freeing, f)
    }

    fn pending(&self) -> bool {
        self.pending.get()
    }

    fn set_pending(&self, pending: bool) {
        self.pending.set(pending);
    }

    fn leak(&self) {
        std::mem::forget(self.bf16.take());
        std::mem::forget(self.f16.take());
    }
}

/// Where a communicator keeps B in the other layout (the fused GEMMs transpose a B whose
/// layout is not their kernel's on this device): device memory of this rank, read only by
/// its own launches, grown as a call needs.
pub(crate) trait LayoutSlot {
    /// The workspace, at least `bytes` long (made or grown first; the old one is freed in
    /// stream order, after the work queued before reads it). Valid until a later call
    /// grows it.
    fn bytes(&self, bytes: usize) -> Result<DevicePtr<u8>>;
}

/// The communicator's [`LayoutSlot`].
pub(crate) struct LayoutCell<'ctx> {
    iris: &'ctx Iris,
    buffer: RefCell<Option<crate::Buffer<'ctx, u8>>>,
}

impl<'ctx> LayoutCell<'ctx> {
    /// An empty slot of `iris`'s rank.
    pub(crate) fn new(iris: &'ctx Iris) -> Self {
        Self {
            iris,
            buffer: RefCell::new(None),
        }
    }
}

impl LayoutSlot for LayoutCell<'_> {
    fn bytes(&self, bytes: usize) -> Result<DevicePtr<u8>> {
        let mut slot = self.buffer.borrow_mut();
        if slot.as_ref().is_none_or(|b| b.len() < bytes) {
            *slot = None;
            *slot = Some(self.iris.zeros::<u8>(bytes)?);
        }
        Ok(slot.as_ref().expect("made above").device_ptr())
    }
}
