//! The SHMEM engines iris can take symmetric memory from, and what differs between them:
//! where their host library lives, the names of its entry points, and the layout of the
//! unique id and init attributes passed to it. The rest of the provider is shared.

use std::fmt;

use crate::BackendKind;

/// A SHMEM library: it owns the heap, the bootstrap and the network; iris reads the
/// per-peer pointers it hands out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ShmemEngine {
    /// NVIDIA's NVSHMEM (`libnvshmem_host.so.3`), for the `cuda` backend.
    Nvshmem,
    /// AMD's rocSHMEM (`librocshmem.so`), for the `hip` backend.
    Rocshmem,
}

/// The symbol names of the host-library entry points the provider calls, each a list of
/// candidates tried in order: the C name first, then (rocSHMEM, whose host API is C++) the
/// Itanium-mangled names of its `rocshmem::` functions.
#[derive(Clone, Copy, Debug)]
pub struct EntryPoints {
    /// `nvshmemx_get_uniqueid`: a new unique id.
    pub get_uniqueid: &'static [&'static str],
    /// `nvshmemx_set_attr_uniqueid_args`: init attributes from a unique id.
    pub set_attr_uniqueid_args: &'static [&'static str],
    /// `nvshmemx_hostlib_init_attr`: starting the engine.
    pub init_attr: &'static [&'static str],
    /// `nvshmemx_hostlib_finalize`: ending it.
    pub finalize: &'static [&'static str],
    /// `nvshmem_my_pe`.
    pub my_pe: &'static [&'static str],
    /// `nvshmem_n_pes`.
    pub n_pes: &'static [&'static str],
    /// `nvshmem_malloc`: a symmetric allocation.
    pub malloc: &'static [&'static str],
    /// `nvshmem_free`.
    pub free: &'static [&'static str],
    /// `nvshmem_ptr`: a peer's copy as this process reaches it.
    pub ptr: &'static [&'static str],
    /// Whether the engine is already initialised in this process (by another library,
    /// e.g. PyTorch): returns >= 2 when it is. Optional: empty where the engine has none.
    pub init_status: &'static [&'static str],
}

/// Byte layouts of the engine's unique id and init attributes (opaque C structs whose
/// version fields the library checks).
#[derive(Clone, Copy, Debug)]
pub struct AbiLayout {
    /// Size of the unique id.
    pub uniqueid_bytes: usize,
    /// `(offset, value)` of the unique id's version field, if it has one.
    pub uniqueid_version: Option<(usize, i32)>,
    /// Size of the init attributes.
    pub init_attr_bytes: usize,
    /// `(offset, value)` pairs of 32-bit fields set before the attributes are used (the
    /// library's own initializer macro).
    pub init_attr_fields: &'static [(usize, i32)],
    /// The init flag that selects the unique-id bootstrap.
    pub init_with_uniqueid: u32,
}

impl ShmemEngine {
    /// Every engine.
    pub const ALL: [ShmemEngine; 2] = [ShmemEngine::Nvshmem, ShmemEngine::Rocshmem];

    /// Its name in messages.
    pub fn name(self) -> &'static str {
        match self {
            ShmemEngine::Nvshmem => "NVSHMEM",
            ShmemEngine::Rocshmem => "rocSHMEM",
        }
    }

    /// The engine for a backend: NVSHMEM for `cuda`, rocSHMEM for `hip`, none for `cpu`.
    pub fn for_backend(backend: BackendKind) -> Option<ShmemEngine> {
        match backend {
            BackendKind::Cuda => Some(ShmemEngine::Nvshmem),
            BackendKind::Hip => Some(ShmemEngine::Rocshmem),
            BackendKind::Cpu => None,
        }
    }

    /// The environment variable naming the engine's install prefix.
    pub fn home_var(self) -> &'static str {
        match self {
            ShmemEngine::Nvshmem => "NVSHMEM_HOME",
            ShmemEngine::Rocshmem => "ROCSHMEM_HOME",
        }
    }

    /// The host library's file names, most specific first (the loader's search path is
    /// asked for each).
    pub fn library_names(self) -> &'static [&'static str] {
        match self {
            ShmemEngine::Nvshmem => &["libnvshmem_host.so.3", "libnvshmem_host.so"],
            // rocSHMEM installs a static library by default; a shared build
            // (-DBUILD_SHARED_LIBS=ON, or a distribution's librocshmem.so.1) or a shared
            // shim over it (librocshmem_host.so) can be loaded.
            ShmemEngine::Rocshmem => &["librocshmem.so.1", "librocshmem.so", "librocshmem_host.so"],
        }
    }

    /// Install prefixes searched when the home variable is unset.
    pub fn default_homes(self) -> &'static [&'static str] {
        match self {
            ShmemEngine::Nvshmem => &[],
            ShmemEngine::Rocshmem => &["/opt/rocm"],
        }
    }

    /// The Python package that ships the library (`<package folder>/lib/<name>`), if any.
    pub fn python_package(self) -> Option<&'static str> {
        match self {
            ShmemEngine::Nvshmem => Some("nvidia.nvshmem"),
            ShmemEngine::Rocshmem => None,
        }
    }

    /// The symbol names of the host-library entry points iris calls.
    pub fn entry_points(self) -> EntryPoints {
        match self {
            ShmemEngine::Nvshmem => EntryPoints {
                get_uniqueid: &["nvshmemx_get_uniqueid"],
                set_attr_uniqueid_args: &["nvshmemx_set_attr_uniqueid_args"],
                init_attr: &["nvshmemx_hostlib_init_attr"],
                finalize: &["nvshmemx_hostlib_finalize"],
                my_pe: &["nvshmem_my_pe"],
                n_pes: &["nvshmem_n_pes"],
                malloc: &["nvshmem_malloc"],
                free: &["nvshmem_free"],
                ptr: &["nvshmem_ptr"],
                // NVSHMEM_STATUS_IS_INITIALIZED = 2, LIMITED_MPG = 3, FULL_MPG = 4.
                init_status: &["nvshmemx_init_status"],
            },
            // rocshmem.hpp (rocSHMEM >= 3.1): `namespace rocshmem { ... }`, no extern "C".
            ShmemEngine::Rocshmem => EntryPoints {
                get_uniqueid: &[
                    "rocshmem_get_uniqueid",
                    "_ZN8rocshmem21rocshmem_get_uniqueidEPSt5arrayIhLm128EE",
                ],
                set_attr_uniqueid_args: &[
                    "rocshmem_set_attr_uniqueid_args",
                    "_ZN8rocshmem31rocshmem_set_attr_uniqueid_argsEiiPSt5arrayIhLm128EEPNS_20rocshmem_init_attr_tE",
                ],
                init_attr: &[
                    "rocshmem_init_attr",
                    "_ZN8rocshmem18rocshmem_init_attrEjPNS_20rocshmem_init_attr_tE",
                ],
                finalize: &["rocshmem_finalize", "_ZN8rocshmem17rocshmem_finalizeEv"],
                my_pe: &["rocshmem_my_pe", "_ZN8rocshmem14rocshmem_my_peEv"],
                n_pes: &["rocshmem_n_pes", "_ZN8rocshmem14rocshmem_n_pesEv"],
                malloc: &["rocshmem_malloc", "_ZN8rocshmem15rocshmem_mallocEm"],
                free: &["rocshmem_free", "_ZN8rocshmem13rocshmem_freeEPv"],
                ptr: &[
                    "rocshmem_ptr",
                    "_ZN8rocshmem12rocshmem_ptrEPKvi",
                    "_ZN8rocshmem12rocshmem_ptrEPvi",
                ],
                init_status: &[],
            },
        }
    }

    /// The byte layouts of the unique id and the init attributes.
    pub fn abi(self) -> AbiLayout {
        match self {
            // nvshmem_uniqueid.h / nvshmem_types.h (NVSHMEM 3.x): a 128-byte id whose
            // first int is (1 << 16) + 128; nvshmemx_init_attr_v2 (144 bytes) = { int
            // version; void *mpi_comm; nvshmemx_init_args_v2 args } with args = { int
            // version @16; nvshmemx_uniqueid_args_v1 uid_args @24 = { int version; id*;
            // int myrank @40; int nranks @44 }; int cuda_device_id @48; ... }.
            ShmemEngine::Nvshmem => AbiLayout {
                uniqueid_bytes: 128,
                uniqueid_version: Some((0, (1 << 16) + 128)),
                init_attr_bytes: 144,
                init_attr_fields: &[
                    (0, (2 << 16) + 144),
                    (16, (2 << 16) + 128),
                    (24, (1 << 16) + 24),
                    (40, -1),
                    (44, -1),
                    (48, -1),
                ],
                init_with_uniqueid: 1 << 3,
            },
            // rocshmem_common.hpp: `rocshmem_uniqueid_t = std::array<uint8_t, 128>`;
            // `rocshmem_init_attr_t { int32_t rank; int32_t nranks; rocshmem_uniqueid_t uid;
            // void *mpi_comm; }` (144 bytes, no version); ROCSHMEM_INIT_WITH_UNIQUEID = 1.
            ShmemEngine::Rocshmem => AbiLayout {
                uniqueid_bytes: 128,
                uniqueid_version: None,
                init_attr_bytes: 144,
                init_attr_fields: &[],
                init_with_uniqueid: 1,
            },
        }
    }
}

impl fmt::Display for ShmemEngine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}
