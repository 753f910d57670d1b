//! Host memory standing in for device memory: 256-byte-aligned, zeroed allocations,
//! registered so that copies can check their ranges. Exportable memory is a memfd mapped
//! `MAP_SHARED`; importing maps a peer's memfd the same way.

use std::alloc::Layout;
use std::collections::BTreeMap;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::Mutex;

use rustix::fs::MemfdFlags;

use crate::error::{Error, Result};
use crate::sync::lock;

/// Alignment of every allocation.
pub(crate) const ALIGN: usize = 256;

/// Allocations at least this large are anonymous mappings (zero pages cost nothing until
/// touched); smaller ones come from the global allocator.
const MMAP_THRESHOLD: usize = 64 * 1024;

#[derive(Debug)]
enum Origin {
    Heap(Layout),
    Mapped(usize),
    /// A memfd mapped `MAP_SHARED` by [`HostAllocations::alloc_exportable`]; the memfd is
    /// kept to hand out descriptors.
    Exported {
        len: usize,
        fd: OwnedFd,
    },
    /// A peer's memfd mapped by [`HostAllocations::import`].
    Imported(usize),
}

impl Origin {
    fn is_shared(&self) -> bool {
        matches!(self, Origin::Exported { .. } | Origin::Imported(_))
    }
}

#[derive(Debug)]
struct Allocation {
    bytes: usize,
    origin: Origin,
}

/// The live allocations of the CPU device, by start address.
#[derive(Debug, Default)]
pub(crate) struct HostAllocations {
    live: Mutex<BTreeMap<u64, Allocation>>,
}

impl HostAllocations {
    /// Allocates `bytes` zeroed bytes, 256-byte aligned.
    pub(crate) fn alloc(&self, bytes: usize) -> Result<u64> {
        let size = bytes.max(1);
        let (addr, origin) = if size >= MMAP_THRESHOLD {
            map_anonymous(size)?
        } else {
            let layout = Layout::from_size_align(size, ALIGN).map_err(|e| oom(bytes, e))?;
            // SAFETY: the layout has a non-zero size.
            let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
            if ptr.is_null() {
                return Err(oom(bytes, "the allocator returned null"));
            }
            (ptr as u64, Origin::Heap(layout))
        };
        lock(&self.live).insert(
            addr,
            Allocation {
                bytes: size,
                origin,
            },
        );
        Ok(addr)
    }

    /// Frees an allocation made by [`alloc`](Self::alloc).
    ///
    /// # Safety
    /// Nothing uses the allocation afterwards.
    pub(crate) unsafe fn free(&self, addr: u64) -> Result<()> {
        let allocation = self.take(addr, false)?;
        match allocation.origin {
            // SAFETY: allocated with this layout by `alloc`.
            Origin::Heap(layout) => unsafe { std::alloc::dealloc(addr as *mut u8, layout) },
            // SAFETY: mapped with this length by `alloc`.
            Origin::Mapped(len) => unsafe { unmap(addr, len) }?,
            Origin::Exported { .. } | Origin::Imported(_) => {}
        }
        Ok(())
    }

    /// Allocates `bytes` zeroed bytes that other processes can map: a memfd of the size
    /// rounded up to the page size, mapped `MAP_SHARED`.
    pub(crate) fn alloc_exportable(&self, bytes: usize) -> Result<u64> {
        let len = page_round(bytes.max(1)).ok_or_else(|| oom(bytes, "size overflow"))?;
        let fd = rustix::fs::memfd_create("iris:symmetric", MemfdFlags::CLOEXEC)
            .map_err(|e| oom(bytes, format!("memfd_create: {e}")))?;
        rustix::fs::ftruncate(&fd, len as u64)
            .map_err(|e| oom(bytes, format!("sizing the memfd to {len} bytes: {e}")))?;
        let addr = map_shared(fd.as_fd(), len).map_err(|e| oom(bytes, e))?;
        self.register(addr, len, Origin::Exported { len, fd });
        Ok(addr)
    }

    /// A new descriptor of the exportable allocation that starts at `addr`.
    pub(crate) fn export(&self, addr: u64) -> Result<OwnedFd> {
        let live = lock(&self.live);
        match live.get(&addr).map(|a| &a.origin) {
            Some(Origin::Exported { fd, .. }) => fd.try_clone().map_err(|source| Error::Io {
                what: format!("duplicating the memfd of the allocation at {addr:#x}"),
                source,
            }),
            _ => Err(Error::InvalidAddress {
                addr,
                bytes: 0,
                reason: "not the start of an exportable allocation of the CPU device".into(),
            }),
        }
    }

    /// Maps the memfd `fd` (at least `bytes` long, rounded up to the page size) shared.
    pub(crate) fn import(&self, fd: BorrowedFd<'_>, bytes: usize) -> Result<u64> {
        let len = page_round(bytes.max(1)).ok_or_else(|| oom(bytes, "size overflow"))?;
        let stat = rustix::fs::fstat(fd).map_err(|e| Error::Io {
            what: "fstat of an imported descriptor".into(),
            source: e.into(),
        })?;
        let size = u64::try_from(stat.st_size).unwrap_or(0);
        if size < len as u64 {
            return Err(Error::InvalidAddress {
                addr: 0,
                bytes,
                reason: format!(
                    "the imported descriptor holds {size} bytes, {len} were to be mapped"
                ),
            });
        }
        let addr = map_shared(fd, len).map_err(|source| Error::Io {
            what: format!("mapping {len} bytes of an imported descriptor"),
            source,
        })?;
        self.register(addr, len, Origin::Imported(len));
        Ok(addr)
    }

    /// Unmaps memory from [`alloc_exportable`](Self::alloc_exportable) or
    /// [`import`](Self::import).
    ///
    /// # Safety
    /// Nothing uses the mapping afterwards.
    pub(crate) unsafe fn free_shared(&self, addr: u64) -> Result<()> {
        let allocation = self.take(addr, true)?;
        let len = match allocation.origin {
            Origin::Exported { len, .. } | Origin::Imported(len) => len,
            Origin::Heap(_) | Origin::Mapped(_) => return Ok(()),
        };
        // SAFETY: mapped with this length; the caller guarantees nothing uses it.
        unsafe { unmap(addr, len) }
    }

    fn register(&self, addr: u64, bytes: usize, origin: Origin) {
        lock(&self.live).insert(addr, Allocation { bytes, origin });
    }

    /// Removes the allocation at `addr` if it is `shared` (or not), as its release asks.
    fn take(&self, addr: u64, shared: bool) -> Result<Allocation> {
        let mut live = lock(&self.live);
        let Some(found) = live.get(&addr) else {
            return Err(Error::InvalidAddress {
                addr,
                bytes: 0,
                reason: "release of an address that is not the start of a live allocation".into(),
            });
        };
        if found.origin.is_shared() != shared {
            let reason = if shared {
                "free_shared of memory from alloc: release it with free"
            } else {
                "free of shared memory (alloc_exportable or import_fd): release it with free_shared"
            };
            return Err(Error::InvalidAddress {
                addr,
                bytes: found.bytes,
                reason: reason.into(),
            });
        }
        live.remove(&addr).ok_or_else(|| Error::InvalidAddress {
            addr,
            bytes: 0,
            reason: "the allocation vanished".into(),
        })
    }

    /// Checks that `addr..addr + bytes` lies inside one live allocation.
    pub(crate) fn check(&self, addr: u64, bytes: usize) -> Result<()> {
        if bytes == 0 {
            return Ok(());
        }
        let live = lock(&self.live);
        let inside = live.range(..=addr).next_back().is_some_and(|(&start, a)| {
            let end = start + a.bytes as u64;
            (bytes as u64) <= end - start && addr <= end - bytes as u64
        });
        if inside {
            Ok(())
        } else {
            Err(Error::InvalidAddress {
                addr,
                bytes,
                reason: "no live allocation of the CPU device covers it".into(),
            })
        }
    }
}

impl Drop for HostAllocations {
    fn drop(&mut self) {
        // Whatever is still allocated may be in use by work that never finished: it is
        // left allocated rather than freed under that work.
        let live = lock(&self.live).len();
        if live > 0 {
            tracing::debug!(
                live,
                "CPU device dropped with live allocations; leaving them"
            );
        }
    }
}

fn map_anonymous(size: usize) -> Result<(u64, Origin)> {
    // SAFETY: an anonymous private mapping; no existing memory is affected.
    let ptr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            size,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if ptr == libc::MAP_FAILED {
        return Err(oom(size, std::io::Error::last_os_error()));
    }
    Ok((ptr as u64, Origin::Mapped(size)))
}

fn page_round(bytes: usize) -> Option<usize> {
    let page = rustix::param::page_size();
    bytes.checked_next_multiple_of(page)
}

fn map_shared(fd: BorrowedFd<'_>, len: usize) -> std::io::Result<u64> {
    // SAFETY: a new shared mapping of a descriptor we borrow; no existing memory is
    // affected.
    let ptr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            std::os::fd::AsRawFd::as_raw_fd(&fd),
            0,
        )
    };
    if ptr == libc::MAP_FAILED {
        return Err(std::io::Error::last_os_error());
    }
    Ok(ptr as u64)
}

/// # Safety
/// `addr..addr + len` is a mapping nothing uses afterwards.
unsafe fn unmap(addr: u64, len: usize) -> Result<()> {
    // SAFETY: forwarded from the caller.
    if unsafe { libc::munmap(addr as *mut libc::c_void, len) } != 0 {
        return Err(Error::Io {
            what: format!("munmap of {len} bytes at {addr:#x}"),
            source: std::io::Error::last_os_error(),
        });
    }
    Ok(())
}

fn oom(bytes: usize, reason: impl std::fmt::Display) -> Error {
    Error::OutOfMemory {
        backend: crate::BackendKind::Cpu,
        ordinal: 0,
        bytes,
        reason: reason.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocations_are_aligned_zeroed_and_checked() {
        let mem = HostAllocations::default();
        for bytes in [1, 100, 4096, MMAP_THRESHOLD, 1 << 20] {
            let addr = mem.alloc(bytes).unwrap();
            assert_eq!(addr % ALIGN as u64, 0);
            // SAFETY: just allocated with `bytes` bytes.
            let slice = unsafe { std::slice::from_raw_parts(addr as *const u8, bytes) };
            assert!(slice.iter().all(|&b| b == 0));
            mem.check(addr, bytes).unwrap();
            mem.check(addr + 1, bytes - 1).unwrap();
            assert!(mem.check(addr, bytes + 1).is_err());
            assert!(mem.check(addr.wrapping_sub(1), 1).is_err());
            // SAFETY: not used afterwards.
            unsafe { mem.free(addr).unwrap() };
            // SAFETY: the test's own allocation, not used afterwards (a second free is refused).
            assert!(unsafe { mem.free(addr) }.is_err());
        }
    }

    #[test]
    fn exported_memory_is_shared_with_its_imports() {
        let mem = HostAllocations::default();
        let addr = mem.alloc_exportable(1000).unwrap();
        mem.check(addr, 1000).unwrap();
        let fd = mem.export(addr).unwrap();
        let peer = mem.import(fd.as_fd(), 1000).unwrap();
        drop(fd);
        assert_ne!(peer, addr);
        mem.check(peer, 1000).unwrap();
        // SAFETY: both are live mappings of at least 1000 bytes of the same memfd.
        unsafe {
            *(addr as *mut u32).add(10) = 0xfeed;
            assert_eq!(*(peer as *const u32).add(10), 0xfeed);
        }
        assert!(mem.export(peer).is_err(), "an import is not exportable");
        // SAFETY: the test's own allocation, not used afterwards (a second free is refused).
        assert!(unsafe { mem.free(addr) }.is_err(), "free of shared memory");
        let plain = mem.alloc(64).unwrap();
        // SAFETY: the test's own allocation, not used afterwards (a second free is refused).
        assert!(unsafe { mem.free_shared(plain) }.is_err());
        // SAFETY: nothing uses these afterwards.
        unsafe {
            mem.free(plain).unwrap();
            mem.free_shared(addr).unwrap();
            // the import keeps the memory alive after the exporter let go
            assert_eq!(*(peer as *const u32).add(10), 0xfeed);
            mem.free_shared(peer).unwrap();
        }
        let small = mem.alloc_exportable(64).unwrap();
        let fd = mem.export(small).unwrap();
        let err = mem.import(fd.as_fd(), 1 << 20).unwrap_err();
        assert!(err.to_string().contains("holds"), "{err}");
        // SAFETY: not used afterwards.
        unsafe { mem.free_shared(small).unwrap() };
    }
}
