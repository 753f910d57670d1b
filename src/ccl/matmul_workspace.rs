//! The copy-ahead all-gather GEMM's workspace (`AllGatherMatmulAlgo::CopyAhead`), kept by
//! the communicator between calls: the task counter and the rows' flags, the gathered A.

use crate::{DevicePtr, Iris, Result, SymmetricBuffer};

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
