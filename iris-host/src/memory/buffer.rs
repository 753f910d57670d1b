//! `Buffer`: a device allocation owned by one context.

use std::fmt;
use std::marker::PhantomData;

use super::{AsDevicePtr, DevicePtr};
use crate::pod::{as_bytes, as_bytes_mut, byte_len, zeroed_vec, Pod};
use crate::rank::RankCore;
use iris_driver::{Error, Result};

/// `len` elements of `T` in the device memory of one context, freed on drop once the
/// work queued on the context's stream so far has finished (a stream-ordered free: drop
/// waits for nothing). An empty buffer allocates nothing and has the
/// null address.
pub struct Buffer<'ctx, T: Pod> {
    core: &'ctx RankCore,
    addr: u64,
    len: usize,
    _elem: PhantomData<T>,
}

impl<'ctx, T: Pod> Buffer<'ctx, T> {
    /// `len` zeroed elements.
    pub fn zeros(core: &'ctx RankCore, len: usize) -> Result<Self> {
        let buffer = Self::allocate(core, len)?;
        core.fill_bytes(buffer.addr, 0, buffer.bytes())?;
        Ok(buffer)
    }

    /// A copy of `data` (written without waiting for any kernel: the memory is new).
    pub fn from_slice(core: &'ctx RankCore, data: &[T]) -> Result<Self> {
        let buffer = Self::allocate(core, data.len())?;
        if buffer.addr != 0 {
            core.upload_fresh(buffer.addr, as_bytes(data))?;
        }
        Ok(buffer)
    }

    /// `len` copies of `value`.
    pub fn full(core: &'ctx RankCore, len: usize, value: T) -> Result<Self> {
        Self::from_slice(core, &vec![value; len])
    }

    fn allocate(core: &'ctx RankCore, len: usize) -> Result<Self> {
        let bytes = byte_len::<T>(len)?;
        let addr = if bytes == 0 {
            0
        } else {
            core.device_alloc(bytes)?
        };
        Ok(Self {
            core,
            addr,
            len,
            _elem: PhantomData,
        })
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Size in bytes.
    pub fn bytes(&self) -> usize {
        self.len * std::mem::size_of::<T>()
    }

    /// Its device address.
    pub fn addr(&self) -> u64 {
        self.addr
    }

    /// A device pointer to its first element, tied to its context.
    pub fn device_ptr(&self) -> DevicePtr<T> {
        DevicePtr::owned(self.addr, self.core.id())
    }

    /// The id of the context that owns it.
    pub fn context_id(&self) -> u64 {
        self.core.id()
    }

    /// Overwrites it with `data` (after the context's queued work).
    pub fn copy_from_slice(&self, data: &[T]) -> Result<()> {
        self.check_len("Buffer::copy_from_slice", data.len())?;
        self.core.upload(self.addr, as_bytes(data))
    }

    /// Copies it into `out` (after the context's queued work).
    pub fn copy_to_slice(&self, out: &mut [T]) -> Result<()> {
        self.check_len("Buffer::copy_to_slice", out.len())?;
        self.core.download(self.addr, as_bytes_mut(out))
    }

    /// Its contents (after the context's queued work).
    pub fn to_vec(&self) -> Result<Vec<T>> {
        let mut out = zeroed_vec::<T>(self.len);
        self.copy_to_slice(&mut out)?;
        Ok(out)
    }

    /// Overwrites it with the contents of `src`, on the device (queued).
    pub fn copy_from_buffer(&self, src: &Buffer<'_, T>) -> Result<()> {
        self.check_len("Buffer::copy_from_buffer", src.len)?;
        self.core.check_owner("buffer", src.core.id())?;
        self.core.copy_on_device(self.addr, src.addr, self.bytes())
    }

    fn check_len(&self, what: &'static str, got: usize) -> Result<()> {
        if got == self.len {
            Ok(())
        } else {
            Err(Error::LengthMismatch {
                what,
                expected: self.len,
                got,
            })
        }
    }
}

impl<T: Pod> AsDevicePtr<T> for Buffer<'_, T> {
    fn device_addr(&self, core: &RankCore) -> Result<u64> {
        core.check_owner("buffer", self.core.id())?;
        Ok(self.addr)
    }
}

impl<T: Pod> Drop for Buffer<'_, T> {
    fn drop(&mut self) {
        if self.addr != 0 {
            self.core.release(self.addr);
        }
    }
}

impl<T: Pod> fmt::Debug for Buffer<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Buffer")
            .field("elem", &std::any::type_name::<T>())
            .field("len", &self.len)
            .field("addr", &format_args!("{:#x}", self.addr))
            .field("context", &self.core.id())
            .finish()
    }
}
