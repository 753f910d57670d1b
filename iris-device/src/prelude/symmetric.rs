//! `Symmetric<T>`: a pointer into a symmetric allocation plus that allocation's peer table.

use core::marker::PhantomData;

/// A pointer into this rank's copy of a symmetric allocation, carrying the allocation's
/// table of peer bases.
///
/// Every rank holds a copy of the same allocation at its own address. `iris::store(p, v,
/// peer)` translates `p` into `peer`'s copy (`table[peer] + (p - local_base)`) and stores
/// there. Because each `Symmetric<T>` carries the table of its own allocation,
/// [`copy`](crate::prelude::copy) between two different allocations is valid.
///
/// As a kernel parameter it is three machine words: the pointer, the local base, and the
/// device address of the table (one `u64` per rank). The host binds them from a
/// `SymmetricBuffer<T>`; nothing is copied to the device at launch.
#[repr(C)]
pub struct Symmetric<T> {
    ptr: *mut T,
    base: u64,
    table: *const u64,
    _elem: PhantomData<T>,
}

impl<T> Clone for Symmetric<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for Symmetric<T> {}

// `add`/`sub` mirror `pointer::add`/`pointer::sub`, which kernels already know.
#[allow(clippy::should_implement_trait)]
impl<T> Symmetric<T> {
    /// The pointer `count` elements further on (`pointer::add`).
    #[inline(always)]
    pub fn add(self, count: usize) -> Self {
        Self {
            ptr: self.ptr.wrapping_add(count),
            ..self
        }
    }

    /// The pointer `count` elements back (`pointer::sub`).
    #[inline(always)]
    pub fn sub(self, count: usize) -> Self {
        Self {
            ptr: self.ptr.wrapping_sub(count),
            ..self
        }
    }

    /// The pointer `count` elements away, either direction (`pointer::offset`).
    #[inline(always)]
    pub fn offset(self, count: isize) -> Self {
        Self {
            ptr: self.ptr.wrapping_offset(count),
            ..self
        }
    }

    /// This rank's own copy, as a plain pointer for local loads and stores.
    #[inline(always)]
    pub fn local(self) -> *mut T {
        self.ptr
    }

    /// `peer`'s copy of this element, as a plain pointer: the translation that
    /// [`load`](crate::prelude::load) and [`store`](crate::prelude::store) make, made once,
    /// for code that reads or writes a peer's copy many times or with operations that take
    /// pointers (`copy_async`, vector loads). The pointer is valid only in this kernel and
    /// only within the allocation; a unit built with peer checks checks `peer` here.
    #[inline(always)]
    pub fn peer_ptr(self, peer: u32) -> *mut T {
        let _ = peer;
        super::device_only("peer_ptr")
    }

    /// The same address viewed as another element type (for 16-byte vector access:
    /// `p.cast::<f32x4>()`).
    #[inline(always)]
    pub fn cast<U>(self) -> Symmetric<U> {
        Symmetric {
            ptr: self.ptr.cast(),
            base: self.base,
            table: self.table,
            _elem: PhantomData,
        }
    }
}
