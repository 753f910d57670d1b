//! Raw device addresses, and what a kernel pointer parameter accepts.

use std::fmt;
use std::marker::PhantomData;

use crate::rank::RankCore;
use iris_driver::Result;

/// A device address of elements of type `T`, optionally tied to the context whose memory
/// it points into.
pub struct DevicePtr<T> {
    addr: u64,
    owner: Option<u64>,
    _elem: PhantomData<fn() -> T>,
}

impl<T> DevicePtr<T> {
    /// A pointer to a raw device address, not tied to any context (launches do not check
    /// where it points).
    ///
    /// # Safety
    /// `addr` is a device address that every kernel given this pointer may access as
    /// its signature says, for as long as such kernels run.
    pub unsafe fn from_raw(addr: u64) -> Self {
        Self {
            addr,
            owner: None,
            _elem: PhantomData,
        }
    }

    /// A pointer into memory owned by context `owner` (from a buffer).
    pub(crate) fn owned(addr: u64, owner: u64) -> Self {
        Self {
            addr,
            owner: Some(owner),
            _elem: PhantomData,
        }
    }

    /// The device address.
    pub fn addr(self) -> u64 {
        self.addr
    }

    /// The id of the context whose memory it points into, if known.
    pub fn owner(self) -> Option<u64> {
        self.owner
    }

    /// The pointer `count` elements further on (wrapping, like `pointer::wrapping_add`).
    #[allow(clippy::should_implement_trait)] // named after `pointer::add`, as in kernels
    pub fn add(self, count: usize) -> Self {
        let step = (count as u64).wrapping_mul(std::mem::size_of::<T>() as u64);
        Self {
            addr: self.addr.wrapping_add(step),
            ..self
        }
    }

    /// The same address as a pointer to another element type.
    pub fn cast<U>(self) -> DevicePtr<U> {
        DevicePtr {
            addr: self.addr,
            owner: self.owner,
            _elem: PhantomData,
        }
    }
}

impl<T> Clone for DevicePtr<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for DevicePtr<T> {}

impl<T> PartialEq for DevicePtr<T> {
    fn eq(&self, other: &Self) -> bool {
        self.addr == other.addr && self.owner == other.owner
    }
}

impl<T> Eq for DevicePtr<T> {}

impl<T> fmt::Debug for DevicePtr<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "DevicePtr<{}>({:#x}",
            std::any::type_name::<T>(),
            self.addr
        )?;
        if let Some(owner) = self.owner {
            write!(f, ", context {owner}")?;
        }
        f.write_str(")")
    }
}

/// Anything a kernel's pointer parameter (`*const T`, `*mut T`) accepts: buffers and
/// device pointers. A symmetric buffer is passed as its local copy with
/// [`SymmetricBuffer::local_ptr`](crate::SymmetricBuffer::local_ptr), so that a
/// `Symmetric<T>` parameter is never given a plain pointer by mistake, nor the reverse.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a device pointer to `{T}` for a `*const {T}` / `*mut {T}` kernel parameter",
    label = "a pointer parameter takes a `Buffer<{T}>` or a `DevicePtr<{T}>`",
    note = "for a `SymmetricBuffer`, pass this rank's copy as `buffer.local_ptr()`, or declare the parameter `Symmetric<{T}>` to reach every rank's copy"
)]
pub trait AsDevicePtr<T> {
    /// The device address to pass, after checking that the memory belongs to `core`
    /// (the rank launching the kernel).
    fn device_addr(&self, core: &RankCore) -> Result<u64>;
}

impl<T> AsDevicePtr<T> for DevicePtr<T> {
    fn device_addr(&self, core: &RankCore) -> Result<u64> {
        if let Some(owner) = self.owner {
            core.check_owner("device pointer", owner)?;
        }
        Ok(self.addr)
    }
}

impl<T, P: AsDevicePtr<T> + ?Sized> AsDevicePtr<T> for &P {
    fn device_addr(&self, core: &RankCore) -> Result<u64> {
        (**self).device_addr(core)
    }
}
