//! `KernelArgs`: the argument slots of one launch, built by the typed launcher the
//! kernel macro generates.

use core::ffi::c_void;

use iris_device::abi::KernelUnit;

use crate::context::Iris;
use crate::error::{Error, Result};
use crate::memory::{AsDevicePtr, Pod};
use crate::symmetric::SymmetricBuffer;

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

#[derive(Clone, Copy, Debug)]
pub(crate) struct Slot {
    pub offset: usize,
    pub size: usize,
    pub align: usize,
    pub kind: SlotKind,
}

/// The arguments of one launch of kernel `kernel` of a unit: one slot per pointer or
/// value, three per symmetric buffer, in parameter order.
///
/// ```ignore
/// let mut args = KernelArgs::new(&UNIT, 0);
/// args.pointer(iris, &input)?;
/// args.symmetric(iris, &out)?;
/// args.value(n);
/// iris.launch(&UNIT, 0, config, args)?;
/// ```
#[derive(Debug)]
pub struct KernelArgs {
    unit: &'static KernelUnit,
    kernel: usize,
    context: Option<u64>,
    /// 16-byte-aligned slot storage.
    data: Vec<u128>,
    slots: Vec<Slot>,
    /// The first problem found while binding a value, reported at launch.
    deferred: Option<String>,
}

impl KernelArgs {
    /// Empty arguments for kernel `kernel` of `unit`.
    pub fn new(unit: &'static KernelUnit, kernel: usize) -> Self {
        Self {
            unit,
            kernel,
            context: None,
            data: Vec::new(),
            slots: Vec::new(),
            deferred: None,
        }
    }

    /// Binds a pointer parameter: the device address of `ptr`, after checking that it
    /// belongs to `iris`.
    pub fn pointer<T>(&mut self, iris: &Iris, ptr: &(impl AsDevicePtr<T> + ?Sized)) -> Result<()> {
        self.bind(iris)?;
        let addr = ptr.device_addr(iris)?;
        self.push(&addr.to_ne_bytes(), 8, SlotKind::Pointer);
        Ok(())
    }

    /// Binds a `Symmetric<T>` parameter: three slots (local pointer, local base, device
    /// address of the peer table), after checking that `buffer` belongs to `iris` and that
    /// every peer's copy is reachable. Nothing is copied to the device.
    pub fn symmetric<T: Pod>(
        &mut self,
        iris: &Iris,
        buffer: &SymmetricBuffer<'_, T>,
    ) -> Result<()> {
        self.bind(iris)?;
        buffer.check_launchable(iris)?;
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
    /// spec at launch).
    pub fn value<V: Pod>(&mut self, value: V) {
        let align = std::mem::align_of::<V>();
        if align > 16 {
            self.deferred.get_or_insert_with(|| {
                format!(
                    "value {} (slot {}) is {align}-byte aligned; slots are at most 16-byte aligned",
                    std::any::type_name::<V>(),
                    self.slots.len()
                )
            });
        }
        let bytes = crate::memory::as_bytes(std::slice::from_ref(&value));
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
        self.slots.len()
    }

    pub(crate) fn slots(&self) -> &[Slot] {
        &self.slots
    }

    pub(crate) fn context(&self) -> Option<u64> {
        self.context
    }

    pub(crate) fn deferred_error(&self) -> Option<&str> {
        self.deferred.as_deref()
    }

    /// One pointer per slot, into this argument list's storage (valid while `self` is
    /// neither moved nor changed).
    pub(crate) fn slot_pointers(&mut self) -> Vec<*mut c_void> {
        let base = self.data.as_mut_ptr().cast::<u8>();
        self.slots
            .iter()
            // SAFETY: every slot lies inside `data`.
            .map(|s| unsafe { base.add(s.offset) }.cast::<c_void>())
            .collect()
    }

    fn bind(&mut self, iris: &Iris) -> Result<()> {
        match self.context {
            Some(id) if id != iris.id() => Err(Error::InvalidArguments {
                kernel: self.kernel_name(),
                reason: format!(
                    "arguments are bound with context {id} and with context {}",
                    iris.id()
                ),
            }),
            _ => {
                self.context = Some(iris.id());
                Ok(())
            }
        }
    }

    pub(crate) fn kernel_name(&self) -> String {
        match self.unit.kernels.get(self.kernel) {
            Some(spec) => spec.name.to_string(),
            None => format!("{}#{}", self.unit.id, self.kernel),
        }
    }

    fn push(&mut self, bytes: &[u8], align: usize, kind: SlotKind) {
        let offset = self.data.len() * 16;
        let chunks = bytes.len().div_ceil(16).max(1);
        self.data.resize(self.data.len() + chunks, 0);
        let base = self.data.as_mut_ptr().cast::<u8>();
        // SAFETY: `data` has `chunks * 16 >= bytes.len()` bytes at `offset`.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), base.add(offset), bytes.len()) };
        self.slots.push(Slot {
            offset,
            size: bytes.len(),
            align,
            kind,
        });
    }
}
