//! Device memory shared between processes of one node.
//!
//! The preferred way is the driver's virtual-memory API: `cuMemCreate` with POSIX
//! file-descriptor handles requested, mapped with `cuMemAddressReserve` + `cuMemMap` +
//! `cuMemSetAccess`, exported with `cuMemExportToShareableHandle` as a file descriptor that
//! travels to the peer (with `SCM_RIGHTS`), which imports it with
//! `cuMemImportFromShareableHandle` and maps it the same way.
//!
//! Where the device or the driver lacks that, the legacy IPC API serves: `cuMemAlloc`, with
//! `cuIpcGetMemHandle` giving a 64-byte handle that a peer opens with `cuIpcOpenMemHandle`.
//! Those bytes travel as they are ([`CudaDevice::ipc_handle`],
//! [`CudaDevice::open_ipc_handle`]) or, through `export_fd`/`import_fd`, inside a small
//! memfd, so that callers pass a file descriptor either way.
//!
//! [`CudaDevice::ipc_handle`]: super::CudaDevice::ipc_handle
//! [`CudaDevice::open_ipc_handle`]: super::CudaDevice::open_ipc_handle

use std::collections::HashMap;
use std::ffi::c_void;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::sync::{Mutex, OnceLock};

use cudarc::driver::sys::{
    self, CUdevice_attribute as Attr, CUipcMemHandle, CUmemAccessDesc, CUmemAccess_flags,
    CUmemAllocationGranularity_flags, CUmemAllocationHandleType, CUmemAllocationProp,
    CUmemAllocationType, CUmemGenericAllocationHandle, CUmemLocationType, CUresult,
};
use rustix::fs::{FileType, MemfdFlags};

use super::api::Cuda;
use super::context::PrimaryContext;
use super::driver::{check, describe, has_symbols};
use crate::error::{Error, Result};
use crate::gpu::GpuApi;
use crate::sync::lock;
use crate::BackendKind;
use crate::MemoryKind;

/// Driver calls of the virtual-memory path.
const VMM_SYMBOLS: &[&str] = &[
    "cuMemCreate",
    "cuMemRelease",
    "cuMemAddressReserve",
    "cuMemAddressFree",
    "cuMemMap",
    "cuMemUnmap",
    "cuMemSetAccess",
    "cuMemGetAllocationGranularity",
    "cuMemExportToShareableHandle",
    "cuMemImportFromShareableHandle",
];

/// Driver calls of the legacy IPC path.
const IPC_SYMBOLS: &[&str] = &[
    "cuIpcGetMemHandle",
    "cuIpcOpenMemHandle_v2",
    "cuIpcCloseMemHandle",
];

/// Bytes of a legacy IPC memory handle.
pub const IPC_HANDLE_BYTES: usize = 64;

/// How an exportable allocation is made.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SharedApi {
    /// `cuMemCreate` with a POSIX file-descriptor handle (the virtual-memory API).
    Vmm,
    /// `cuMemAlloc` exported through `cuIpcGetMemHandle` (the legacy IPC API).
    Ipc,
}

/// What the device and driver support, found on first use.
#[derive(Clone, Debug)]
enum Support {
    /// Both APIs; VMM allocations are rounded up to `granularity` bytes.
    Vmm { granularity: usize, ipc: bool },
    /// Only the legacy IPC API; `why` says why VMM is out.
    Ipc { why: String },
    /// Neither.
    None { why: String },
}

/// One shared mapping of this device, by its address.
#[derive(Debug)]
enum Mapping {
    /// Physical memory mapped at the address: created here or imported.
    Vmm {
        handle: CUmemGenericAllocationHandle,
        size: usize,
    },
    /// A `cuMemAlloc` allocation made here for export; `aliases` counts imports of it by
    /// this same process, which share the address.
    IpcOwned { aliases: usize },
    /// A peer's allocation opened with `cuIpcOpenMemHandle`.
    IpcOpened,
}

/// The shared-memory state of one CUDA device.
pub(super) struct SharedMemory {
    support: OnceLock<Support>,
    mappings: Mutex<HashMap<u64, Mapping>>,
}

/// Marks a memfd that carries a legacy IPC handle instead of a VMM export.
const WRAP_MAGIC: [u8; 16] = *b"iris-cuda-ipc\0v1";
/// Bytes of the wrapper: magic, pid (8), address (8), handle.
const WRAP_BYTES: usize = 16 + 8 + 8 + IPC_HANDLE_BYTES;

fn shared_error(call: &'static str, message: String) -> Error {
    Error::Driver {
        backend: BackendKind::Cuda,
        call,
        message,
    }
}

fn io_error(what: &str, err: rustix::io::Errno) -> Error {
    Error::Io {
        what: what.to_string(),
        source: err.into(),
    }
}

/// The allocation properties of pinned device memory on `ctx`'s device, exportable as a
/// POSIX file descriptor.
fn properties(ctx: &PrimaryContext) -> CUmemAllocationProp {
    // SAFETY: a plain C struct for which all zeroes is a valid (empty) value.
    let mut prop: CUmemAllocationProp = unsafe { std::mem::zeroed() };
    prop.type_ = CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.requestedHandleTypes = CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    prop.location.type_ = CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = ctx.device;
    prop
}

fn attribute(ctx: &PrimaryContext, attr: Attr) -> Result<i32> {
    let mut value = 0;
    // SAFETY: a valid out-pointer and device handle.
    check("cuDeviceGetAttribute", unsafe {
        sys::cuDeviceGetAttribute(&mut value, attr, ctx.device)
    })?;
    Ok(value)
}

fn detect(ctx: &PrimaryContext) -> Support {
    let ipc = has_symbols(IPC_SYMBOLS);
    let vmm = || -> std::result::Result<usize, String> {
        if !has_symbols(VMM_SYMBOLS) {
            return Err("the driver lacks the virtual-memory calls".into());
        }
        let supported = |attr, what: &str| match attribute(ctx, attr) {
            Ok(0) => Err(format!("the device does not support {what}")),
            Ok(_) => Ok(()),
            Err(err) => Err(err.to_string()),
        };
        supported(
            Attr::CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
            "virtual memory management",
        )?;
        supported(
            Attr::CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED,
            "POSIX file-descriptor handles",
        )?;
        let prop = properties(ctx);
        let mut granularity = 0;
        // SAFETY: valid pointers to an out-value and to filled-in properties.
        let r = unsafe {
            sys::cuMemGetAllocationGranularity(
                &mut granularity,
                &prop,
                CUmemAllocationGranularity_flags::CU_MEM_ALLOC_GRANULARITY_MINIMUM,
            )
        };
        match r {
            CUresult::CUDA_SUCCESS if granularity > 0 => Ok(granularity),
            CUresult::CUDA_SUCCESS => Err("the driver reports a granularity of 0".into()),
            r => Err(format!("cuMemGetAllocationGranularity: {}", describe(r))),
        }
    };
    let support = match vmm() {
        Ok(granularity) => Support::Vmm { granularity, ipc },
        Err(why) if ipc => Support::Ipc { why },
        Err(why) => Support::None {
            why: format!("{why}, and the driver lacks the IPC calls"),
        },
    };
    tracing::debug!(device = ctx.device, ?support, "CUDA shared memory");
    support
}

/// `bytes` rounded up to a multiple of `granularity`.
fn round_up(bytes: usize, granularity: usize) -> Option<usize> {
    bytes
        .checked_add(granularity - 1)
        .map(|b| b / granularity * granularity)
}

impl SharedMemory {
    pub(super) fn new() -> Self {
        Self {
            support: OnceLock::new(),
            mappings: Mutex::new(HashMap::new()),
        }
    }

    fn support(&self, ctx: &PrimaryContext) -> &Support {
        self.support.get_or_init(|| detect(ctx))
    }

    /// Whether memory can be shared with other processes at all.
    pub(super) fn supported(&self, ctx: &PrimaryContext) -> bool {
        !matches!(self.support(ctx), Support::None { .. })
    }

    /// The API an allocation uses unless the caller picks one.
    pub(super) fn default_api(&self, ctx: &PrimaryContext) -> Result<SharedApi> {
        match self.support(ctx) {
            Support::Vmm { .. } => Ok(SharedApi::Vmm),
            Support::Ipc { .. } => Ok(SharedApi::Ipc),
            Support::None { why } => {
                tracing::debug!(why = why.as_str(), "no CUDA shared memory");
                Err(Error::Unsupported {
                    backend: BackendKind::Cuda,
                    what: "exportable memory on this device and driver (neither the virtual-memory nor the IPC API is usable)",
                })
            }
        }
    }

    fn granularity(&self, ctx: &PrimaryContext) -> Result<usize> {
        match self.support(ctx) {
            Support::Vmm { granularity, .. } => Ok(*granularity),
            Support::Ipc { why } | Support::None { why } => Err(shared_error(
                "cuMemCreate",
                format!("exportable memory through file descriptors is unavailable: {why}"),
            )),
        }
    }

    /// Whether the legacy IPC API is usable.
    pub(super) fn ipc_available(&self, ctx: &PrimaryContext) -> bool {
        matches!(
            self.support(ctx),
            Support::Vmm { ipc: true, .. } | Support::Ipc { .. }
        )
    }

    fn require_ipc(&self, ctx: &PrimaryContext, call: &'static str) -> Result<()> {
        match self.support(ctx) {
            Support::Vmm { ipc: true, .. } | Support::Ipc { .. } => Ok(()),
            Support::Vmm { ipc: false, .. } => {
                Err(shared_error(call, "the driver lacks the IPC calls".into()))
            }
            Support::None { why } => Err(shared_error(call, why.clone())),
        }
    }

    /// Allocates `bytes` of exportable memory with `api`.
    pub(super) fn alloc(
        &self,
        ctx: &PrimaryContext,
        ordinal: usize,
        bytes: usize,
        api: SharedApi,
    ) -> Result<u64> {
        let oom = |reason: String| Error::OutOfMemory {
            backend: BackendKind::Cuda,
            ordinal,
            bytes,
            reason,
        };
        if bytes == 0 {
            return Err(oom("a zero-byte allocation was asked for".into()));
        }
        match api {
            SharedApi::Vmm => {
                let granularity = self.granularity(ctx)?;
                let size =
                    round_up(bytes, granularity).ok_or_else(|| oom("the size overflows".into()))?;
                ctx.make_current()?;
                let prop = properties(ctx);
                let mut handle = 0;
                // SAFETY: valid pointers to an out-handle and to filled-in properties.
                match unsafe { sys::cuMemCreate(&mut handle, size, &prop, 0) } {
                    CUresult::CUDA_SUCCESS => {}
                    CUresult::CUDA_ERROR_OUT_OF_MEMORY => {
                        return Err(oom(describe(CUresult::CUDA_ERROR_OUT_OF_MEMORY)))
                    }
                    r => return Err(shared_error("cuMemCreate", describe(r))),
                }
                self.map(ctx, handle, size, granularity)
            }
            SharedApi::Ipc => {
                self.require_ipc(ctx, "cuIpcGetMemHandle")?;
                ctx.make_current()?;
                // SAFETY: the context is current.
                let addr = unsafe { <Cuda as GpuApi>::mem_alloc(bytes.max(1), MemoryKind::Device) }
                    .map_err(|reason| Error::OutOfMemory {
                        backend: BackendKind::Cuda,
                        ordinal,
                        bytes,
                        reason,
                    })?;
                lock(&self.mappings).insert(addr, Mapping::IpcOwned { aliases: 0 });
                Ok(addr)
            }
        }
    }

    /// Reserves an address range, maps `handle` there and lets this device read and write
    /// it; takes over `handle` (released on failure).
    fn map(
        &self,
        ctx: &PrimaryContext,
        handle: CUmemGenericAllocationHandle,
        size: usize,
        granularity: usize,
    ) -> Result<u64> {
        let release = |err: Error| {
            // SAFETY: the handle is not mapped anywhere any more.
            let _ = unsafe { sys::cuMemRelease(handle) };
            err
        };
        let mut addr = 0;
        // SAFETY: a valid out-pointer; no fixed address is asked for.
        check("cuMemAddressReserve", unsafe {
            sys::cuMemAddressReserve(&mut addr, size, granularity, 0, 0)
        })
        .map_err(release)?;
        let free_range = |err: Error| {
            // SAFETY: the range was reserved above and nothing is mapped in it.
            let _ = unsafe { sys::cuMemAddressFree(addr, size) };
            release(err)
        };
        // SAFETY: the range is reserved, `size` long, and the handle holds `size` bytes.
        check("cuMemMap", unsafe {
            sys::cuMemMap(addr, size, 0, handle, 0)
        })
        .map_err(free_range)?;
        let mut access: CUmemAccessDesc =
            // SAFETY: a plain C struct for which all zeroes is a valid value.
            unsafe { std::mem::zeroed() };
        access.location.type_ = CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE;
        access.location.id = ctx.device;
        access.flags = CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
        // SAFETY: the range is mapped; one access descriptor is passed.
        check("cuMemSetAccess", unsafe {
            sys::cuMemSetAccess(addr, size, &access, 1)
        })
        .map_err(|err| {
            // SAFETY: the range was mapped above and is not used yet.
            let _ = unsafe { sys::cuMemUnmap(addr, size) };
            free_range(err)
        })?;
        lock(&self.mappings).insert(addr, Mapping::Vmm { handle, size });
        Ok(addr)
    }

    /// A new descriptor for the exportable allocation at `addr`.
    pub(super) fn export_fd(&self, ctx: &PrimaryContext, addr: u64) -> Result<OwnedFd> {
        let handle = match lock(&self.mappings).get(&addr) {
            Some(Mapping::Vmm { handle, .. }) => *handle,
            Some(Mapping::IpcOwned { .. }) => return wrap_ipc(addr, &self.ipc_handle(ctx, addr)?),
            Some(Mapping::IpcOpened) | None => {
                return Err(shared_error(
                    "cuMemExportToShareableHandle",
                    format!(
                        "{addr:#x} is not the start of an exportable allocation of this device"
                    ),
                ))
            }
        };
        ctx.make_current()?;
        let mut fd: std::ffi::c_int = -1;
        // SAFETY: for POSIX file-descriptor handles the driver writes an `int`.
        check("cuMemExportToShareableHandle", unsafe {
            sys::cuMemExportToShareableHandle(
                (&mut fd as *mut std::ffi::c_int).cast::<c_void>(),
                handle,
                CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
                0,
            )
        })?;
        if fd < 0 {
            return Err(shared_error(
                "cuMemExportToShareableHandle",
                format!("the driver returned descriptor {fd}"),
            ));
        }
        // SAFETY: the driver made a new descriptor, which nothing else owns.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }

    /// Maps memory exported as `fd`, `bytes` long, on this device.
    pub(super) fn import_fd(
        &self,
        ctx: &PrimaryContext,
        fd: BorrowedFd<'_>,
        bytes: usize,
    ) -> Result<u64> {
        if let Some((pid, addr, handle)) = unwrap_ipc(fd)? {
            if pid == std::process::id() {
                return self.alias(addr);
            }
            return self.open_ipc_handle(ctx, &handle);
        }
        let granularity = self.granularity(ctx)?;
        let size = round_up(bytes.max(1), granularity).ok_or_else(|| {
            shared_error(
                "cuMemImportFromShareableHandle",
                format!("{bytes} bytes overflow"),
            )
        })?;
        ctx.make_current()?;
        let mut handle = 0;
        // SAFETY: for POSIX file-descriptor handles the descriptor is passed as the pointer
        // value; the driver does not take it over.
        check("cuMemImportFromShareableHandle", unsafe {
            sys::cuMemImportFromShareableHandle(
                &mut handle,
                fd.as_raw_fd() as isize as *mut c_void,
                CUmemAllocationHandleType::CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
            )
        })?;
        self.map(ctx, handle, size, granularity)
    }

    /// The legacy IPC handle of the `cuMemAlloc` allocation at `addr`.
    pub(super) fn ipc_handle(
        &self,
        ctx: &PrimaryContext,
        addr: u64,
    ) -> Result<[u8; IPC_HANDLE_BYTES]> {
        self.require_ipc(ctx, "cuIpcGetMemHandle")?;
        ctx.make_current()?;
        // SAFETY: a plain C struct of bytes.
        let mut handle: CUipcMemHandle = unsafe { std::mem::zeroed() };
        // SAFETY: a valid out-pointer; the driver checks the address.
        check("cuIpcGetMemHandle", unsafe {
            sys::cuIpcGetMemHandle(&mut handle, addr)
        })?;
        Ok(handle.reserved.map(|b| b as u8))
    }

    /// Opens a peer process's legacy IPC handle on this device.
    pub(super) fn open_ipc_handle(
        &self,
        ctx: &PrimaryContext,
        handle: &[u8; IPC_HANDLE_BYTES],
    ) -> Result<u64> {
        self.require_ipc(ctx, "cuIpcOpenMemHandle_v2")?;
        ctx.make_current()?;
        // SAFETY: a plain C struct of bytes.
        let mut raw: CUipcMemHandle = unsafe { std::mem::zeroed() };
        raw.reserved = handle.map(|b| b as std::ffi::c_char);
        let mut addr = 0;
        // SAFETY: a valid out-pointer; the driver checks the handle.
        check("cuIpcOpenMemHandle_v2", unsafe {
            sys::cuIpcOpenMemHandle_v2(
                &mut addr,
                raw,
                sys::CUipcMem_flags::CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS as u32,
            )
        })?;
        lock(&self.mappings).insert(addr, Mapping::IpcOpened);
        Ok(addr)
    }

    /// This process imports its own legacy export: the allocation's own address, counted.
    fn alias(&self, addr: u64) -> Result<u64> {
        match lock(&self.mappings).get_mut(&addr) {
            Some(Mapping::IpcOwned { aliases }) => {
                *aliases += 1;
                Ok(addr)
            }
            _ => Err(shared_error(
                "cuIpcOpenMemHandle_v2",
                format!("this process exported {addr:#x}, which it no longer holds"),
            )),
        }
    }

    /// Unmaps and releases a mapping made by `alloc`, `import_fd` or `open_ipc_handle`.
    ///
    /// # Safety
    /// `addr` is not used afterwards.
    pub(super) unsafe fn free(&self, ctx: &PrimaryContext, addr: u64) -> Result<()> {
        let mapping = {
            let mut mappings = lock(&self.mappings);
            match mappings.get_mut(&addr) {
                Some(Mapping::IpcOwned { aliases }) if *aliases > 0 => {
                    *aliases -= 1;
                    return Ok(());
                }
                Some(_) => mappings.remove(&addr),
                None => None,
            }
        };
        let Some(mapping) = mapping else {
            return Err(shared_error(
                "free_shared",
                format!("{addr:#x} is not shared memory of this device"),
            ));
        };
        ctx.make_current()?;
        match mapping {
            Mapping::Vmm { handle, size } => {
                // All three run even when one fails; the first failure is reported.
                // SAFETY: the range was mapped by `map` and is not used any more.
                let unmap = check("cuMemUnmap", unsafe { sys::cuMemUnmap(addr, size) });
                // SAFETY: as above; the range was reserved by `map`.
                let free = check("cuMemAddressFree", unsafe {
                    sys::cuMemAddressFree(addr, size)
                });
                // SAFETY: the handle is not mapped any more.
                let release = check("cuMemRelease", unsafe { sys::cuMemRelease(handle) });
                unmap.and(free).and(release)
            }
            // SAFETY: per the caller.
            Mapping::IpcOwned { .. } => ctx
                .make_current()
                .and_then(|()| unsafe { <Cuda as GpuApi>::mem_free(addr) }),
            // SAFETY: per the caller; the address came from `cuIpcOpenMemHandle`.
            Mapping::IpcOpened => check("cuIpcCloseMemHandle", unsafe {
                sys::cuIpcCloseMemHandle(addr)
            }),
        }
    }
}

/// A memfd holding a legacy IPC handle, with this process's id and the address.
fn wrap_ipc(addr: u64, handle: &[u8; IPC_HANDLE_BYTES]) -> Result<OwnedFd> {
    let mut bytes = Vec::with_capacity(WRAP_BYTES);
    bytes.extend_from_slice(&WRAP_MAGIC);
    bytes.extend_from_slice(&u64::from(std::process::id()).to_le_bytes());
    bytes.extend_from_slice(&addr.to_le_bytes());
    bytes.extend_from_slice(handle);
    let fd = rustix::fs::memfd_create(c"iris-cuda-ipc", MemfdFlags::CLOEXEC)
        .map_err(|e| io_error("creating a memfd for a CUDA IPC handle", e))?;
    let mut written = 0;
    while written < bytes.len() {
        let n = rustix::io::pwrite(&fd, &bytes[written..], written as u64)
            .map_err(|e| io_error("writing a CUDA IPC handle to a memfd", e))?;
        if n == 0 {
            return Err(shared_error(
                "export_fd",
                "a memfd accepted no bytes".into(),
            ));
        }
        written += n;
    }
    Ok(fd)
}

/// The pid, address and legacy IPC handle in `fd`, when it is a memfd made by [`wrap_ipc`];
/// `None` for any other descriptor (a VMM export).
fn unwrap_ipc(fd: BorrowedFd<'_>) -> Result<Option<(u32, u64, [u8; IPC_HANDLE_BYTES])>> {
    let stat =
        rustix::fs::fstat(fd).map_err(|e| io_error("inspecting a shared-memory descriptor", e))?;
    if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
        return Ok(None);
    }
    let mut bytes = [0u8; WRAP_BYTES];
    let mut read = 0;
    while read < bytes.len() {
        let n = rustix::io::pread(fd, &mut bytes[read..], read as u64)
            .map_err(|e| io_error("reading a CUDA IPC handle from a descriptor", e))?;
        if n == 0 {
            break;
        }
        read += n;
    }
    if read < WRAP_BYTES || bytes[..16] != WRAP_MAGIC {
        return Err(shared_error(
            "import_fd",
            "the descriptor is a regular file, not a CUDA memory export".into(),
        ));
    }
    let word = |at: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&bytes[at..at + 8]);
        u64::from_le_bytes(w)
    };
    let pid = u32::try_from(word(16)).unwrap_or(0);
    let mut handle = [0u8; IPC_HANDLE_BYTES];
    handle.copy_from_slice(&bytes[32..]);
    Ok(Some((pid, word(24), handle)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    #[test]
    fn legacy_handles_survive_a_memfd() {
        let handle: [u8; IPC_HANDLE_BYTES] = std::array::from_fn(|i| (i * 7) as u8);
        let fd = wrap_ipc(0x7f00_dead_0000, &handle).unwrap();
        let (pid, addr, back) = unwrap_ipc(fd.as_fd()).unwrap().unwrap();
        assert_eq!(pid, std::process::id());
        assert_eq!(addr, 0x7f00_dead_0000);
        assert_eq!(back, handle);
    }

    #[test]
    fn other_descriptors_are_not_legacy_handles() {
        let (a, _b) = std::os::unix::net::UnixStream::pair().unwrap();
        assert!(unwrap_ipc(a.as_fd()).unwrap().is_none());
        let other = rustix::fs::memfd_create(c"other", MemfdFlags::CLOEXEC).unwrap();
        rustix::io::write(&other, b"not a handle").unwrap();
        assert!(unwrap_ipc(other.as_fd()).is_err());
    }

    #[test]
    fn sizes_round_up_to_the_granularity() {
        assert_eq!(round_up(1, 2 << 20), Some(2 << 20));
        assert_eq!(round_up(2 << 20, 2 << 20), Some(2 << 20));
        assert_eq!(round_up((2 << 20) + 1, 2 << 20), Some(4 << 20));
        assert_eq!(round_up(usize::MAX, 2 << 20), None);
    }
}
