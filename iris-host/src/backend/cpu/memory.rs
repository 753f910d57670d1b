//! Host memory standing in for device memory: 256-byte-aligned, zeroed allocations,
//! registered so that copies can check their ranges.

use std::alloc::Layout;
use std::collections::BTreeMap;
use std::sync::Mutex;

use crate::error::{Error, Result};
use crate::sync::lock;

/// Alignment of every allocation.
pub(crate) const ALIGN: usize = 256;

/// Allocations at least this large are anonymous mappings (zero pages cost nothing until
/// touched); smaller ones come from the global allocator.
const MMAP_THRESHOLD: usize = 64 * 1024;

#[derive(Clone, Copy, Debug)]
enum Origin {
    Heap(Layout),
    Mapped(usize),
}

#[derive(Clone, Copy, Debug)]
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
        let allocation = lock(&self.live)
            .remove(&addr)
            .ok_or_else(|| Error::InvalidAddress {
                addr,
                bytes: 0,
                reason: "free of an address that is not the start of a live allocation".into(),
            })?;
        match allocation.origin {
            // SAFETY: allocated with this layout by `alloc`.
            Origin::Heap(layout) => unsafe { std::alloc::dealloc(addr as *mut u8, layout) },
            Origin::Mapped(len) => {
                // SAFETY: mapped with this length by `alloc`.
                if unsafe { libc::munmap(addr as *mut libc::c_void, len) } != 0 {
                    return Err(Error::Io {
                        what: format!("munmap of {len} bytes at {addr:#x}"),
                        source: std::io::Error::last_os_error(),
                    });
                }
            }
        }
        Ok(())
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

fn oom(bytes: usize, reason: impl std::fmt::Display) -> Error {
    Error::OutOfMemory {
        backend: crate::backend::BackendKind::Cpu,
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
            assert!(unsafe { mem.free(addr) }.is_err());
        }
    }
}
