//! Device memory shared between processes of one node, through HIP's virtual-memory API:
//! `hipMemCreate` with POSIX file-descriptor handles requested (fine-grained, uncached
//! memory for [`MemoryKind::Symmetric`], so that peers' system-scope atomics stay
//! coherent), mapped with `hipMemAddressReserve` + `hipMemMap` + `hipMemSetAccess`,
//! exported with `hipMemExportToShareableHandle` and imported with
//! `hipMemImportFromShareableHandle`.

use std::collections::HashMap;
use std::ffi::c_void;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::sync::{Mutex, OnceLock};

use cubecl_hip_sys as hip;

use super::runtime::{check, describe, has_symbols, set_device};
use crate::error::{Error, Result};
use crate::sync::lock;
use crate::{BackendKind, MemoryKind};

/// Runtime calls of the virtual-memory path.
const VMM_SYMBOLS: &[&str] = &[
    "hipMemCreate",
    "hipMemRelease",
    "hipMemAddressReserve",
    "hipMemAddressFree",
    "hipMemMap",
    "hipMemUnmap",
    "hipMemSetAccess",
    "hipMemGetAllocationGranularity",
    "hipMemExportToShareableHandle",
    "hipMemImportFromShareableHandle",
];

/// `hipMemAllocationTypePinned`.
const TYPE_PINNED: u32 = 1;
/// `hipMemAllocationTypeUncached` (HIP 6.2 and newer headers): fine-grained memory.
const TYPE_UNCACHED: u32 = 0x4000_0000;
/// `hipMemHandleTypePosixFileDescriptor`.
const HANDLE_POSIX_FD: u32 = 1;
/// `hipMemLocationTypeDevice`.
const LOCATION_DEVICE: u32 = 1;
/// `hipMemAccessFlagsProtReadWrite`.
const ACCESS_READ_WRITE: u32 = 3;
/// `hipMemAllocationGranularityMinimum`.
const GRANULARITY_MINIMUM: u32 = 0;

/// `hipMemAllocationProp` as the C headers lay it out. The generated bindings name its
/// handle-type field differently from one HIP version to the next (a field, or a field of
/// an anonymous union), so the backend fills this mirror and passes it by pointer.
#[repr(C)]
struct AllocationProp {
    type_: u32,
    requested_handle_type: u32,
    location: Location,
    win32_handle_meta_data: *mut c_void,
    compression_type: u8,
    gpu_direct_rdma_capable: u8,
    usage: u16,
}

/// `hipMemLocation`.
#[repr(C)]
struct Location {
    type_: u32,
    id: i32,
}

/// `hipMemAccessDesc`.
#[repr(C)]
struct AccessDesc {
    location: Location,
    flags: u32,
}

const _: () = assert!(
    std::mem::size_of::<AllocationProp>() == std::mem::size_of::<hip::hipMemAllocationProp>()
);
const _: () =
    assert!(std::mem::size_of::<AccessDesc>() == std::mem::size_of::<hip::hipMemAccessDesc>());

fn prop(ordinal: i32, kind: MemoryKind) -> AllocationProp {
    AllocationProp {
        type_: match kind {
            MemoryKind::Device => TYPE_PINNED,
            MemoryKind::Symmetric => TYPE_UNCACHED,
        },
        requested_handle_type: HANDLE_POSIX_FD,
        location: Location {
            type_: LOCATION_DEVICE,
            id: ordinal,
        },
        win32_handle_meta_data: std::ptr::null_mut(),
        compression_type: 0,
        gpu_direct_rdma_capable: 0,
        usage: 0,
    }
}

/// One mapping of this device: the allocation handle (as an integer: the runtime's handle
/// is a pointer) and the mapped size.
#[derive(Debug, Clone, Copy)]
struct Mapping {
    handle: usize,
    size: usize,
}

/// The shared-memory state of one HIP device.
pub(super) struct SharedMemory {
    /// The allocation granularity, or why the API is unusable.
    support: OnceLock<std::result::Result<usize, String>>,
    mappings: Mutex<HashMap<u64, Mapping>>,
}

fn shared_error(call: &'static str, message: String) -> Error {
    Error::Driver {
        backend: BackendKind::Hip,
        call,
        message,
    }
}

fn detect(ordinal: i32) -> std::result::Result<usize, String> {
    if !has_symbols(VMM_SYMBOLS) {
        return Err("the HIP runtime lacks the virtual-memory calls".into());
    }
    set_device(ordinal).map_err(|e| e.to_string())?;
    let mut supported = 0;
    // SAFETY: a valid out-pointer; the runtime checks the device.
    let r = unsafe {
        hip::hipDeviceGetAttribute(
            &mut supported,
            hip::hipDeviceAttribute_t_hipDeviceAttributeVirtualMemoryManagementSupported,
            ordinal,
        )
    };
    if r != hip::hipError_t_hipSuccess {
        return Err(format!("hipDeviceGetAttribute: {}", describe(r)));
    }
    if supported == 0 {
        return Err("the device does not support virtual memory management".into());
    }
    let prop = prop(ordinal, MemoryKind::Symmetric);
    let mut granularity = 0;
    // SAFETY: valid pointers; `prop` has the layout of `hipMemAllocationProp`.
    let r = unsafe {
        hip::hipMemGetAllocationGranularity(
            &mut granularity,
            (&prop as *const AllocationProp).cast(),
            GRANULARITY_MINIMUM as _,
        )
    };
    match r {
        r if r != hip::hipError_t_hipSuccess => {
            Err(format!("hipMemGetAllocationGranularity: {}", describe(r)))
        }
        _ if granularity == 0 => Err("the runtime reports a granularity of 0".into()),
        _ => Ok(granularity),
    }
}

impl SharedMemory {
    pub(super) fn new() -> Self {
        Self {
            support: OnceLock::new(),
            mappings: Mutex::new(HashMap::new()),
        }
    }

    fn granularity(&self, ordinal: i32) -> Result<usize> {
        match self.support.get_or_init(|| detect(ordinal)) {
            Ok(granularity) => Ok(*granularity),
            Err(why) => {
                tracing::debug!(why = why.as_str(), "no HIP shared memory");
                Err(Error::Unsupported {
                    backend: BackendKind::Hip,
                    what: "exportable memory on this device and runtime (the virtual-memory API is unusable)",
                })
            }
        }
    }

    /// Whether memory can be shared with other processes.
    pub(super) fn supported(&self, ordinal: i32) -> bool {
        self.granularity(ordinal).is_ok()
    }

    /// Allocates `bytes` of exportable memory of `kind`.
    pub(super) fn alloc(&self, ordinal: i32, bytes: usize, kind: MemoryKind) -> Result<u64> {
        let oom = |reason: String| Error::OutOfMemory {
            backend: BackendKind::Hip,
            ordinal: usize::try_from(ordinal).unwrap_or(0),
            bytes,
            reason,
        };
        if bytes == 0 {
            return Err(oom("a zero-byte allocation was asked for".into()));
        }
        let granularity = self.granularity(ordinal)?;
        let size = round_up(bytes, granularity).ok_or_else(|| oom("the size overflows".into()))?;
        set_device(ordinal)?;
        let prop = prop(ordinal, kind);
        let mut handle: hip::hipMemGenericAllocationHandle_t = std::ptr::null_mut();
        // SAFETY: valid pointers; `prop` has the layout of `hipMemAllocationProp`.
        let r = unsafe {
            hip::hipMemCreate(
                &mut handle,
                size,
                (&prop as *const AllocationProp).cast(),
                0,
            )
        };
        if r == hip::hipError_t_hipErrorOutOfMemory {
            return Err(oom(describe(r)));
        }
        check("hipMemCreate", r)?;
        self.map(ordinal, handle, size, granularity)
    }

    /// Reserves an address range, maps `handle` there and lets this device read and write
    /// it; takes over `handle` (released on failure).
    fn map(
        &self,
        ordinal: i32,
        handle: hip::hipMemGenericAllocationHandle_t,
        size: usize,
        granularity: usize,
    ) -> Result<u64> {
        let release = |err: Error| {
            // SAFETY: the handle is not mapped anywhere any more.
            let _ = unsafe { hip::hipMemRelease(handle) };
            err
        };
        let mut ptr: *mut c_void = std::ptr::null_mut();
        // SAFETY: a valid out-pointer; no fixed address is asked for.
        check("hipMemAddressReserve", unsafe {
            hip::hipMemAddressReserve(&mut ptr, size, granularity, std::ptr::null_mut(), 0)
        })
        .map_err(release)?;
        let free_range = |err: Error| {
            // SAFETY: the range was reserved above and nothing is mapped in it.
            let _ = unsafe { hip::hipMemAddressFree(ptr, size) };
            release(err)
        };
        // SAFETY: the range is reserved, `size` long, and the handle holds `size` bytes.
        check("hipMemMap", unsafe {
            hip::hipMemMap(ptr, size, 0, handle, 0)
        })
        .map_err(free_range)?;
        let access = AccessDesc {
            location: Location {
                type_: LOCATION_DEVICE,
                id: ordinal,
            },
            flags: ACCESS_READ_WRITE,
        };
        // SAFETY: the range is mapped; one descriptor with the C layout is passed.
        check("hipMemSetAccess", unsafe {
            hip::hipMemSetAccess(ptr, size, (&access as *const AccessDesc).cast(), 1)
        })
        .map_err(|err| {
            // SAFETY: the range was mapped above and is not used yet.
            let _ = unsafe { hip::hipMemUnmap(ptr, size) };
            free_range(err)
        })?;
        let addr = ptr as u64;
        lock(&self.mappings).insert(
            addr,
            Mapping {
                handle: handle as usize,
                size,
            },
        );
        Ok(addr)
    }

    /// A new descriptor for the exportable allocation at `addr`.
    pub(super) fn export_fd(&self, ordinal: i32, addr: u64) -> Result<OwnedFd> {
        let Some(mapping) = lock(&self.mappings).get(&addr).copied() else {
            return Err(shared_error(
                "hipMemExportToShareableHandle",
                format!("{addr:#x} is not the start of an exportable allocation of this device"),
            ));
        };
        set_device(ordinal)?;
        let mut fd: std::ffi::c_int = -1;
        // SAFETY: for POSIX file-descriptor handles the runtime writes an `int`.
        check("hipMemExportToShareableHandle", unsafe {
            hip::hipMemExportToShareableHandle(
                (&mut fd as *mut std::ffi::c_int).cast::<c_void>(),
                mapping.handle as hip::hipMemGenericAllocationHandle_t,
                HANDLE_POSIX_FD as _,
                0,
            )
        })?;
        if fd < 0 {
            return Err(shared_error(
                "hipMemExportToShareableHandle",
                format!("the runtime returned descriptor {fd}"),
            ));
        }
        // SAFETY: the runtime made a new descriptor, which nothing else owns.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }

    /// Maps memory exported as `fd`, `bytes` long, on this device.
    pub(super) fn import_fd(&self, ordinal: i32, fd: BorrowedFd<'_>, bytes: usize) -> Result<u64> {
        let granularity = self.granularity(ordinal)?;
        let size = round_up(bytes.max(1), granularity).ok_or_else(|| {
            shared_error(
                "hipMemImportFromShareableHandle",
                format!("{bytes} bytes overflow"),
            )
        })?;
        set_device(ordinal)?;
        let mut handle: hip::hipMemGenericAllocationHandle_t = std::ptr::null_mut();
        // SAFETY: for POSIX file-descriptor handles the descriptor is passed as the pointer
        // value; the runtime does not take it over.
        check("hipMemImportFromShareableHandle", unsafe {
            hip::hipMemImportFromShareableHandle(
                &mut handle,
                fd.as_raw_fd() as isize as *mut c_void,
                HANDLE_POSIX_FD as _,
            )
        })?;
        self.map(ordinal, handle, size, granularity)
    }

    /// Unmaps and releases a mapping made by `alloc` or `import_fd`.
    ///
    /// # Safety
    /// `addr` is not used afterwards.
    pub(super) unsafe fn free(&self, ordinal: i32, addr: u64) -> Result<()> {
        let Some(mapping) = lock(&self.mappings).remove(&addr) else {
            return Err(shared_error(
                "free_shared",
                format!("{addr:#x} is not shared memory of this device"),
            ));
        };
        set_device(ordinal)?;
        let ptr = addr as *mut c_void;
        // All three run even when one fails; the first failure is reported.
        // SAFETY: the range was mapped by `map` and is not used any more.
        let unmap = check("hipMemUnmap", unsafe {
            hip::hipMemUnmap(ptr, mapping.size)
        });
        // SAFETY: as above; the range was reserved by `map`.
        let free = check("hipMemAddressFree", unsafe {
            hip::hipMemAddressFree(ptr, mapping.size)
        });
        // SAFETY: the handle is not mapped any more.
        let release = check("hipMemRelease", unsafe {
            hip::hipMemRelease(mapping.handle as hip::hipMemGenericAllocationHandle_t)
        });
        unmap.and(free).and(release)
    }
}

/// `bytes` rounded up to a multiple of `granularity`.
fn round_up(bytes: usize, granularity: usize) -> Option<usize> {
    bytes
        .checked_add(granularity - 1)
        .map(|b| b / granularity * granularity)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mirrors_have_the_c_layout() {
        assert_eq!(std::mem::offset_of!(AllocationProp, location), 8);
        assert_eq!(
            std::mem::offset_of!(AllocationProp, win32_handle_meta_data),
            16
        );
        assert_eq!(std::mem::offset_of!(AllocationProp, compression_type), 24);
        assert_eq!(std::mem::size_of::<AllocationProp>(), 32);
        assert_eq!(std::mem::size_of::<AccessDesc>(), 12);
        assert_eq!(round_up(3, 4096), Some(4096));
    }
}
