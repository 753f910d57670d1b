//! `KernelArgs`: the argument slots of one launch, built by the typed launcher the
//! kernel macro generates.
//!
//! Launching is on the hot path, so the slots live inline (no allocation for kernels of up
//! to [`INLINE_SLOTS`] slots) and each slot is checked against the kernel's parameter as it
//! is bound: the launch then only compares the slot count and reports the first mismatch
//! found, if any.

use core::ffi::c_void;

use iris_device::abi::{KernelSpec, KernelUnit, ParamKind};
use smallvec::SmallVec;

use crate::memory::AsDevicePtr;
use crate::pod::Pod;
use crate::rank::RankCore;
use crate::symmetric::SymmetricBuffer;
use iris_driver::Result;

/// Slots (and 16-byte chunks of slot storage) held without allocating.
pub(crate) const INLINE_SLOTS: usize = 32;

/// One pointer per slot, as `cuLaunchKernel` and the other backends take them.
pub(crate) type SlotPointers = SmallVec<[*mut c_void; INLINE_SLOTS]>;

/// What produced a slot, for validation against the kernel's parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SlotKind {
    /// A value of this type.
    Value(&'static str),
    /// A device pointer.
    Pointer,
    /// Part `0..3` of a symmetric buffer (pointer, base, table).
    Symmetric(u8),
}

/// The first slot bound where the kernel's parameter takes something else.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Mismatch {
    /// The parameter's index in the kernel's spec.
    pub param: usize,
    /// What was bound.
    pub got: SlotKind,
    /// Bytes of what was bound.
    pub size: usize,
    /// Alignment of what was bound.
    pub align: usize,
}

/// The arguments of one launch of kernel `kernel` of a unit: one slot per pointer or
/// value, three per symmetric buffer, in parameter order.
///
/// The arguments are bound to one rank's context when they are made: every buffer bound
/// is checked against it then, and the launch checks that it is the launching context.
/// What `#[iris::kernel]` generates inside `kernel::launch`:
///
/// ```text
/// let mut args = iris.args(&UNIT, 0);
/// args.pointer(&input)?;
/// args.symmetric(&out)?;
/// args.value(n);
/// iris.launch(config, args)?;
/// ```
#[derive(Debug)]
pub struct KernelArgs<'ctx> {
    core: &'ctx RankCore,
    unit: &'static KernelUnit,
    kernel: usize,
    /// The kernel's spec, when `kernel` is an index of the unit.
    spec: Option<&'static KernelSpec>,
    /// 16-byte-aligned slot storage.
    data: SmallVec<[u128; INLINE_SLOTS]>,
    /// Byte offset of each slot in `data`.
    offsets: SmallVec<[u32; INLINE_SLOTS]>,
    /// The parameter the next slot binds, and which of its slots it is.
    next_param: usize,
    next_part: usize,
    /// The first slot that does not fit its parameter.
    mismatch: Option<Mismatch>,
    /// The first problem found while binding a value, reported at launch.
    deferred: Option<String>,
}

impl<'ctx> KernelArgs<'ctx> {
    /// Empty arguments for kernel `kernel` of `unit`, launched by the rank of `core`
    /// (usually made with [`Iris::args`](crate::Iris::args)).
    pub fn new(core: &'ctx RankCore, unit: &'static KernelUnit, kernel: usize) -> Self {
        Self {
            core,
            unit,
            kernel,
            spec: unit.kernels.get(kernel),
            data: SmallVec::new(),
            offsets: SmallVec::new(),
            next_param: 0,
            next_part: 0,
            mismatch: None,
            deferred: None,
        }
    }

    /// Binds a pointer parameter: the device address of `ptr`, after checking that it
    /// belongs to the arguments' context.
    pub fn pointer<T>(&mut self, ptr: &(impl AsDevicePtr<T> + ?Sized)) -> Result<()> {
        let addr = ptr.device_addr(self.core)?;
        self.push(&addr.to_ne_bytes(), 8, SlotKind::Pointer);
        Ok(())
    }

    /// Binds a `Symmetric<T>` parameter: three slots (local pointer, local base, device
    /// address of the peer table), after checking that `buffer` belongs to the arguments'
    /// context and that every peer's copy is reachable. Nothing is copied to the device.
    pub fn symmetric<T: Pod>(&mut self, buffer: &SymmetricBuffer<'_, T>) -> Result<()> {
        buffer.check_launchable(self.core)?;
        let map = buffer.map();
        for (part, word) in [map.base(), map.base(), map.table()]
            .into_iter()
            .enumerate()
        {
            self.push(&word.to_ne_bytes(), 8, SlotKind::Symmetric(part as u8));
        }
        Ok(())
    }

    /// Binds a by-value parameter (its size and alignment are checked against the kernel's
    /// spec; a mismatch is reported at launch).
    pub fn value<V: Pod>(&mut self, value: V) {
        let align = std::mem::align_of::<V>();
        if align > 16 {
            self.deferred.get_or_insert_with(|| {
                format!(
                    "value {} (slot {}) is {align}-byte aligned; slots are at most 16-byte aligned",
                    std::any::type_name::<V>(),
                    self.offsets.len()
                )
            });
        }
        let bytes = crate::pod::as_bytes(std::slice::from_ref(&value));
        self.push(bytes, align, SlotKind::Value(std::any::type_name::<V>()));
    }

    /// The unit the arguments are for.
    pub fn unit(&self) -> &'static KernelUnit {
        self.unit
    }

    /// The kernel index the arguments are for.
    pub fn kernel(&self) -> usize {
        self.kernel
    }

    /// How many slots are bound.
    pub fn slot_count(&self) -> usize {
        self.offsets.len()
    }

    /// The id of the context the arguments are bound to.
    pub fn context_id(&self) -> u64 {
        self.core.id()
    }

    pub(crate) fn deferred_error(&self) -> Option<&str> {
        self.deferred.as_deref()
    }

    /// The first slot bound where the kernel's parameter takes something else.
    pub(crate) fn mismatch(&self) -> Option<Mismatch> {
        self.mismatch
    }

    /// One pointer per slot, into this argument list's storage (valid while `self` is
    /// neither moved nor changed).
    pub(crate) fn slot_pointers(&mut self) -> SlotPointers {
        let base = self.data.as_mut_ptr().cast::<u8>();
        self.offsets
            .iter()
            // SAFETY: every offset lies inside `data`.
            .map(|&offset| unsafe { base.add(offset as usize) }.cast::<c_void>())
            .collect()
    }

    #[inline]
    fn push(&mut self, bytes: &[u8], align: usize, kind: SlotKind) {
        self.check_next(kind, bytes.len(), align);
        let Ok(offset) = u32::try_from(self.data.len() * 16) else {
            self.deferred
                .get_or_insert_with(|| "the arguments take more than 4 GiB".into());
            return;
        };
        // Whole 16-byte chunks, the last one zero-padded (at least one, for a
        // zero-sized value).
        let mut pieces = bytes.chunks(16);
        let first = pieces.next().unwrap_or_default();
        for piece in std::iter::once(first).chain(pieces) {
            let mut chunk = [0u8; 16];
            chunk[..piece.len()].copy_from_slice(piece);
            self.data.push(u128::from_ne_bytes(chunk));
        }
        self.offsets.push(offset);
    }

    /// Checks the slot being bound against the parameter it binds, keeping the first
    /// mismatch. Slots past the last parameter are left to the launch's count check.
    #[inline]
    fn check_next(&mut self, got: SlotKind, size: usize, align: usize) {
        let Some(param) = self.spec.and_then(|s| s.params.get(self.next_param)) else {
            return;
        };
        let fits = match param.kind {
            ParamKind::Value {
                size: want_size,
                align: want_align,
            } => {
                matches!(got, SlotKind::Value(_))
                    && size == want_size as usize
                    && align == want_align as usize
            }
            ParamKind::Pointer => got == SlotKind::Pointer,
            ParamKind::Symmetric => got == SlotKind::Symmetric(self.next_part as u8),
        };
        if !fits && self.mismatch.is_none() {
            self.mismatch = Some(Mismatch {
                param: self.next_param,
                got,
                size,
                align,
            });
        }
        self.next_part += 1;
        if self.next_part >= param.kind.slots() {
            self.next_part = 0;
            self.next_param += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iris_device::abi::ParamSpec;

    const fn value(size: u32, align: u32) -> ParamSpec {
        ParamSpec {
            name: "v",
            ty: "T",
            kind: ParamKind::Value { size, align },
        }
    }

    const fn param(kind: ParamKind) -> ParamSpec {
        ParamSpec {
            name: "p",
            ty: "T",
            kind,
        }
    }

    fn unit(params: Vec<ParamSpec>) -> &'static KernelUnit {
        let kernels = vec![KernelSpec {
            name: "k",
            params: Box::leak(params.into_boxed_slice()),
            shared_bytes: 0,
            concurrent_threads: false,
            max_block_threads: 0,
            peer_checks: false,
            signal_waits: false,
            spins: false,
            trace_events: false,
        }];
        Box::leak(Box::new(KernelUnit {
            id: "args_tests",
            kernels: Box::leak(kernels.into_boxed_slice()),
            left_out: &[],
            code_objects: &[],
        }))
    }

    /// Runs `f` with the core of a one-rank world on the CPU.
    fn with_core(f: impl Fn(&RankCore) + Sync) {
        crate::World::threads(1)
            .backend(iris_driver::BackendKind::Cpu)
            .heap_bytes(1 << 12)
            .run(|iris| {
                f(iris.core());
                Ok(())
            })
            .unwrap();
    }

    /// The bytes slot `i` points at.
    fn read(pointers: &SlotPointers, i: usize, len: usize) -> Vec<u8> {
        // SAFETY: the test reads no more than the slot's value, while `args` lives.
        unsafe { std::slice::from_raw_parts(pointers[i].cast::<u8>(), len) }.to_vec()
    }

    #[test]
    fn values_of_every_size_are_laid_out_aligned_and_read_back() {
        with_core(|core| {
            let unit = unit(vec![value(1, 1), value(24, 8), value(16, 16), value(8, 8)]);
            let mut args = KernelArgs::new(core, unit, 0);
            args.value(7u8);
            args.value([1u64, 2, 3]);
            args.value(u128::MAX - 5);
            args.value(42u64);
            assert_eq!(args.slot_count(), 4);
            assert!(args.mismatch().is_none());
            let pointers = args.slot_pointers();
            assert!(pointers.iter().all(|p| p.align_offset(16) == 0));
            assert_eq!(read(&pointers, 0, 1), [7]);
            let three: Vec<u8> = [1u64, 2, 3].iter().flat_map(|w| w.to_ne_bytes()).collect();
            assert_eq!(read(&pointers, 1, 24), three);
            assert_eq!(read(&pointers, 2, 16), (u128::MAX - 5).to_ne_bytes());
            assert_eq!(read(&pointers, 3, 8), 42u64.to_ne_bytes());
        });
    }

    #[test]
    fn more_slots_than_fit_inline_spill_to_the_heap() {
        with_core(|core| {
            let count = INLINE_SLOTS + 9;
            let unit = unit(vec![value(4, 4); count]);
            let mut args = KernelArgs::new(core, unit, 0);
            for i in 0..count as u32 {
                args.value(i * 3);
            }
            assert_eq!(args.slot_count(), count);
            assert!(args.mismatch().is_none());
            let pointers = args.slot_pointers();
            for i in 0..count {
                assert_eq!(read(&pointers, i, 4), (i as u32 * 3).to_ne_bytes());
            }
        });
    }

    #[test]
    fn the_first_slot_that_does_not_fit_its_parameter_is_kept() {
        with_core(|core| {
            let unit = unit(vec![
                param(ParamKind::Symmetric),
                value(8, 8),
                param(ParamKind::Pointer),
            ]);
            // symmetric parts 0 and 1, then a value where part 2 goes
            let mut args = KernelArgs::new(core, unit, 0);
            args.push(&[0; 8], 8, SlotKind::Symmetric(0));
            args.push(&[0; 8], 8, SlotKind::Symmetric(1));
            args.value(1u64);
            args.value(2u32);
            let m = args.mismatch().map(|m| (m.param, m.got));
            assert_eq!(m, Some((0, SlotKind::Value("u64"))));
            // a well-formed list, then a value of the wrong size
            let mut args = KernelArgs::new(core, unit, 0);
            for part in 0..3 {
                args.push(&[0; 8], 8, SlotKind::Symmetric(part));
            }
            args.value(1u32);
            args.push(&[0; 8], 8, SlotKind::Pointer);
            let m = args.mismatch().map(|m| (m.param, m.size, m.align));
            assert_eq!(m, Some((1, 4, 4)));
            // extra slots are left to the count check
            let mut args = KernelArgs::new(core, unit, 0);
            for part in 0..3 {
                args.push(&[0; 8], 8, SlotKind::Symmetric(part));
            }
            args.value(1u64);
            args.push(&[0; 8], 8, SlotKind::Pointer);
            args.value(5u8);
            assert!(args.mismatch().is_none());
            assert_eq!(args.slot_count(), 6);
        });
    }

    #[test]
    fn arguments_for_a_kernel_the_unit_lacks_are_not_checked_when_bound() {
        with_core(|core| {
            let unit = unit(vec![value(8, 8)]);
            let mut args = KernelArgs::new(core, unit, 3);
            args.value(1u8);
            assert!(args.mismatch().is_none());
            assert_eq!(args.kernel(), 3);
        });
    }
}
