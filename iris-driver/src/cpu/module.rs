//! Loading a CPU code object: its bytes go to a memfd, which is dlopen-ed through
//! `/proc/self/fd/N`; every kernel symbol is a `CpuKernelEntry`.

use std::any::Any;
use std::ffi::CString;
use std::fs::File;
use std::io::Write;
use std::os::fd::{AsRawFd, FromRawFd};
use std::sync::Arc;

use iris_device::abi::{CpuKernelEntry, KernelUnit, TargetKind};
use libloading::os::unix::{Library, RTLD_LOCAL, RTLD_NOW};

use super::HOST_TRIPLE;
use crate::error::{Error, Result};
use crate::{select_code_object, Module};

/// A CPU code object loaded into this process.
pub(crate) struct CpuModule {
    unit: &'static KernelUnit,
    target: &'static str,
    /// Kept alive by every launch still queued, so the code cannot be unloaded under it.
    pub(crate) library: Arc<LoadedObject>,
    /// One entry per kernel of the unit, in order.
    pub(crate) entries: Vec<CpuKernelEntry>,
}

/// A dlopen-ed object and the memfd it was loaded from.
///
/// The memfd stays open while the object is loaded: glibc recognises an already-loaded
/// object by its path, so a `/proc/self/fd/N` whose number was reused by a newer memfd
/// would hand back the old object. Fields drop in order: the library is closed first.
pub(crate) struct LoadedObject {
    _library: Library,
    _memfd: File,
}

impl CpuModule {
    /// Loads the host-triple object of `unit`.
    pub(crate) fn load(unit: &'static KernelUnit) -> Result<Self> {
        let object = select_code_object(unit, TargetKind::Cpu, HOST_TRIPLE, |t| t == HOST_TRIPLE)?;
        let fail = |reason: String| Error::ModuleLoad {
            unit: unit.id,
            target: object.target,
            reason,
        };
        let file = memfd(unit.id).map_err(|e| fail(format!("memfd_create: {e}")))?;
        (&file)
            .write_all(object.bytes)
            .map_err(|e| fail(format!("writing the object to a memfd: {e}")))?;
        let path = format!("/proc/self/fd/{}", file.as_raw_fd());
        // SAFETY: loading runs the object's initialisers; code objects of a kernel unit
        // are built by the iris compiler (or the runtime's tests) and have none that
        // matter.
        let library = unsafe { Library::open(Some(&path), RTLD_NOW | RTLD_LOCAL) }
            .map_err(|e| fail(format!("dlopen: {e}")))?;
        let mut entries = Vec::with_capacity(unit.kernels.len());
        for spec in unit.kernels {
            // SAFETY: the ABI says every kernel symbol is a `CpuKernelEntry`.
            let symbol = unsafe { library.get::<CpuKernelEntry>(spec.name.as_bytes()) }
                .map_err(|e| fail(format!("kernel `{}`: {e}", spec.name)))?;
            entries.push(*symbol);
        }
        tracing::debug!(
            unit = unit.id,
            target = object.target,
            "loaded CPU code object"
        );
        Ok(Self {
            unit,
            target: object.target,
            library: Arc::new(LoadedObject {
                _library: library,
                _memfd: file,
            }),
            entries,
        })
    }
}

impl Module for CpuModule {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn unit(&self) -> &'static KernelUnit {
        self.unit
    }

    fn target(&self) -> &'static str {
        self.target
    }
}

fn memfd(name: &str) -> std::io::Result<File> {
    let name: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .take(200)
        .collect();
    let name = CString::new(format!("iris:{name}")).map_err(std::io::Error::other)?;
    // SAFETY: a valid NUL-terminated name; the flags are constants.
    let fd = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: `fd` is a fresh descriptor owned by nothing else.
    Ok(unsafe { File::from_raw_fd(fd) })
}
