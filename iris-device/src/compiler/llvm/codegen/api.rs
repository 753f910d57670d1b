//! LLVM's C API, opened from the shared library the build found (`IRIS_LLVM_LIBRARY`, see
//! iris-device's build.rs): LLVM 19 to 22, whichever the machine has, with nothing linked
//! into the proc macro. Every function the compiler calls is resolved once, when the first
//! kernel compiles; a missing one is an error naming it.

use std::ffi::{c_char, c_int, c_uint, c_void};
use std::sync::OnceLock;

/// The lld shim's `iris_lld_elf_link(argv, argc, messages, messages_len, can_run_again)`
/// (code_object/lld_library.cpp).
pub type LldLink =
    unsafe extern "C" fn(*const *const c_char, usize, *mut c_char, usize, *mut c_int) -> c_int;

/// The lld shim the build made, or "" (see iris-device's build.rs).
const LLD_LIBRARY: &str = env!("IRIS_LLD_LIBRARY");

/// `LLVMContextRef` and the other opaque handles.
pub(super) type Handle = *mut c_void;

/// `LLVMCodeGenLevelAggressive` (`-O3`).
pub(super) const OPT_AGGRESSIVE: c_int = 3;
/// `LLVMRelocPIC`.
pub(super) const RELOC_PIC: c_int = 2;
/// `LLVMCodeModelDefault`.
pub(super) const CODE_MODEL_DEFAULT: c_int = 0;
/// `LLVMAssemblyFile`.
pub(super) const ASSEMBLY_FILE: c_int = 0;
/// `LLVMObjectFile`.
pub(super) const OBJECT_FILE: c_int = 1;
/// `LLVMReturnStatusAction`: the verifier reports, it does not abort.
pub(super) const RETURN_STATUS: c_int = 2;

/// The shared library the build found, its version, and that version's major number.
pub const LIBRARY: &str = env!("IRIS_LLVM_LIBRARY");
/// The LLVM version the build found (`llvm-config --version`).
pub const VERSION: &str = env!("IRIS_LLVM_VERSION");
/// The `bin` folder of the LLVM the build found (its `ld.lld`, `llvm-objdump`, ...).
pub const BINDIR: &str = env!("IRIS_LLVM_BINDIR");
/// The major version of [`VERSION`]: what the lowering adapts to.
pub const MAJOR: u32 = parse_major(env!("IRIS_LLVM_MAJOR"));

const fn parse_major(s: &str) -> u32 {
    let b = s.as_bytes();
    let mut i = 0;
    let mut n = 0;
    while i < b.len() && b[i].is_ascii_digit() {
        n = n * 10 + (b[i] - b'0') as u32;
        i += 1;
    }
    n
}

macro_rules! llvm_api {
    ($( $name:ident : fn($($arg:ty),*) $(-> $ret:ty)?; )*) => {
        /// The C API functions the compiler calls, resolved from the library.
        #[allow(non_snake_case)]
        pub(super) struct Llvm {
            $( pub $name: unsafe extern "C" fn($($arg),*) $(-> $ret)?, )*
            /// `LLVMParseIRInContext2` (LLVM 21 and newer: the parser leaves the buffer
            /// to the caller).
            pub LLVMParseIRInContext2: Option<unsafe extern "C" fn(Handle, Handle, *mut Handle, *mut *mut c_char) -> c_int>,
            /// `LLVMParseIRInContext` (every version: the parser takes the buffer).
            pub LLVMParseIRInContext: unsafe extern "C" fn(Handle, Handle, *mut Handle, *mut *mut c_char) -> c_int,
            /// The namespace's own C library's `__ctype_init` (glibc), run once on each
            /// thread that calls LLVM: see [`Llvm::enter_thread`].
            ctype_init: Option<unsafe extern "C" fn()>,
            /// `iris_lld_elf_link` of the lld shim the build made (`IRIS_LLD_LIBRARY`),
            /// loaded beside LLVM; `None` without one (the `ld.lld` command is used).
            pub lld_link: Option<LldLink>,
            /// The library the functions above are in (never closed).
            _library: Opened,
        }

        impl Llvm {
            fn resolve(library: Opened) -> Result<Llvm, String> {
                // SAFETY: each symbol is an LLVM C API function whose C signature is the
                // type it is read as (llvm-c/*.h, the same in LLVM 19 to 22), and a
                // function pointer has the size of a data pointer on the hosts iris runs
                // on; the library is never closed.
                unsafe {
                    Ok(Llvm {
                        $( $name: std::mem::transmute::<*mut c_void, unsafe extern "C" fn($($arg),*) $(-> $ret)?>(
                            library.required(concat!(stringify!($name), "\0"))?,
                        ), )*
                        LLVMParseIRInContext2: library
                            .symbol("LLVMParseIRInContext2\0")
                            .map(|f| std::mem::transmute::<*mut c_void, unsafe extern "C" fn(Handle, Handle, *mut Handle, *mut *mut c_char) -> c_int>(f)),
                        LLVMParseIRInContext: std::mem::transmute::<*mut c_void, unsafe extern "C" fn(Handle, Handle, *mut Handle, *mut *mut c_char) -> c_int>(
                            library.required("LLVMParseIRInContext\0")?,
                        ),
                        ctype_init: library
                            .symbol("__ctype_init\0")
                            .map(|f| std::mem::transmute::<*mut c_void, unsafe extern "C" fn()>(f)),
                        lld_link: None,
                        _library: library,
                    })
                }
            }
        }
    };
}

llvm_api! {
    LLVMGetVersion: fn(*mut c_uint, *mut c_uint, *mut c_uint);
    LLVMContextCreate: fn() -> Handle;
    LLVMContextDispose: fn(Handle);
    LLVMDisposeModule: fn(Handle);
    LLVMCloneModule: fn(Handle) -> Handle;
    LLVMPrintModuleToString: fn(Handle) -> *mut c_char;
    LLVMDisposeMessage: fn(*mut c_char);
    LLVMCreateMemoryBufferWithMemoryRangeCopy: fn(*const c_char, usize, *const c_char) -> Handle;
    LLVMGetBufferStart: fn(Handle) -> *const c_char;
    LLVMGetBufferSize: fn(Handle) -> usize;
    LLVMDisposeMemoryBuffer: fn(Handle);
    LLVMVerifyModule: fn(Handle, c_int, *mut *mut c_char) -> c_int;
    LLVMGetTargetFromTriple: fn(*const c_char, *mut Handle, *mut *mut c_char) -> c_int;
    LLVMCreateTargetMachine: fn(Handle, *const c_char, *const c_char, *const c_char, c_int, c_int, c_int) -> Handle;
    LLVMDisposeTargetMachine: fn(Handle);
    LLVMCreateTargetDataLayout: fn(Handle) -> Handle;
    LLVMCopyStringRepOfTargetData: fn(Handle) -> *mut c_char;
    LLVMSetModuleDataLayout: fn(Handle, Handle);
    LLVMDisposeTargetData: fn(Handle);
    LLVMCreatePassBuilderOptions: fn() -> Handle;
    LLVMDisposePassBuilderOptions: fn(Handle);
    LLVMRunPasses: fn(Handle, *const c_char, Handle, Handle) -> Handle;
    LLVMGetErrorMessage: fn(Handle) -> *mut c_char;
    LLVMDisposeErrorMessage: fn(*mut c_char);
    LLVMTargetMachineEmitToMemoryBuffer: fn(Handle, Handle, c_int, *mut *mut c_char, *mut Handle) -> c_int;
    LLVMInitializeAMDGPUTargetInfo: fn();
    LLVMInitializeAMDGPUTarget: fn();
    LLVMInitializeAMDGPUTargetMC: fn();
    LLVMInitializeAMDGPUAsmPrinter: fn();
    LLVMInitializeNVPTXTargetInfo: fn();
    LLVMInitializeNVPTXTarget: fn();
    LLVMInitializeNVPTXTargetMC: fn();
    LLVMInitializeNVPTXAsmPrinter: fn();
}

/// The host target's four registration functions.
#[cfg(target_arch = "x86_64")]
const HOST_INIT: [&str; 4] = [
    "LLVMInitializeX86TargetInfo\0",
    "LLVMInitializeX86Target\0",
    "LLVMInitializeX86TargetMC\0",
    "LLVMInitializeX86AsmPrinter\0",
];
#[cfg(target_arch = "aarch64")]
const HOST_INIT: [&str; 4] = [
    "LLVMInitializeAArch64TargetInfo\0",
    "LLVMInitializeAArch64Target\0",
    "LLVMInitializeAArch64TargetMC\0",
    "LLVMInitializeAArch64AsmPrinter\0",
];
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
const HOST_INIT: [&str; 0] = [];

/// LLVM's shared library, opened in a link-map namespace of its own.
///
/// The macro runs inside rustc, which has an LLVM of its own loaded
/// (`libLLVM.so.N-rust-..`). Opened the usual way, the library's calls bind to rustc's
/// same-named C++ functions (measured: a crash in `PMTopLevelManager::schedulePass`);
/// with `RTLD_DEEPBIND` they stay inside, but its C library calls then do too while
/// libstdc++'s go to rustc's allocator (measured: `free(): invalid pointer`). A namespace
/// of its own (`dlmopen`) gives it its own C and C++ libraries: nothing is shared, and
/// nothing allocated on one side is freed on the other (LLVM frees its own messages and
/// buffers; the compiler only copies out of them).
pub(super) struct Opened(*mut c_void);

// SAFETY: a `dlopen` handle may be used from any thread.
unsafe impl Send for Opened {}
// SAFETY: as above; it is only read.
unsafe impl Sync for Opened {}

impl Opened {
    fn open(path: &str) -> Result<Opened, String> {
        let c = std::ffi::CString::new(path).map_err(|_| format!("{path} holds a NUL"))?;
        // SAFETY: a NUL-terminated path; opening LLVM runs its static constructors, which
        // only set up LLVM's own globals (command-line options, registries).
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        let handle = unsafe { libc::dlmopen(libc::LM_ID_NEWLM, c.as_ptr(), libc::RTLD_NOW) };
        // SAFETY: as above.
        #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
        let handle = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        if handle.is_null() {
            return Err(dl_error());
        }
        Ok(Opened(handle))
    }

    /// Opens `path` in the same namespace as this library, so that it links against the
    /// LLVM already loaded there.
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    fn open_beside(&self, path: &str) -> Result<Opened, String> {
        let c = std::ffi::CString::new(path).map_err(|_| format!("{path} holds a NUL"))?;
        let mut lmid: libc::Lmid_t = 0;
        // SAFETY: a live handle and an out-pointer of the type RTLD_DI_LMID writes.
        if unsafe {
            libc::dlinfo(
                self.0,
                libc::RTLD_DI_LMID,
                (&mut lmid as *mut libc::Lmid_t).cast(),
            )
        } != 0
        {
            return Err(dl_error());
        }
        // SAFETY: a NUL-terminated path; the shim's constructors only register lld's
        // drivers' globals.
        let handle = unsafe { libc::dlmopen(lmid, c.as_ptr(), libc::RTLD_NOW) };
        if handle.is_null() {
            return Err(dl_error());
        }
        Ok(Opened(handle))
    }

    /// The address of `name` (NUL-terminated), if the library has it.
    fn symbol(&self, name: &str) -> Option<*mut c_void> {
        // SAFETY: a live handle and a NUL-terminated name.
        let p = unsafe { libc::dlsym(self.0, name.as_ptr().cast()) };
        (!p.is_null()).then_some(p)
    }

    /// The address of `name`, or an error naming it.
    fn required(&self, name: &str) -> Result<*mut c_void, String> {
        self.symbol(name).ok_or_else(|| {
            format!(
                "{LIBRARY} (LLVM {VERSION}) has no `{}`",
                name.trim_end_matches('\0')
            )
        })
    }
}

/// The lld shim's link function, loaded beside LLVM, when the build made one. A shim that
/// does not load leaves the `ld.lld` command in charge (said once on stderr).
fn lld_shim(library: &Opened) -> Option<LldLink> {
    if LLD_LIBRARY.is_empty() {
        return None;
    }
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    let shim = library.open_beside(LLD_LIBRARY);
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    let shim: Result<Opened, String> = {
        let _ = library;
        Err("needs glibc's dlmopen".to_string())
    };
    match shim.and_then(|s| {
        let f = s.required("iris_lld_elf_link\0")?;
        // `s` is never closed (Opened has no Drop), like LLVM.
        // SAFETY: the shim's function has the LldLink signature (lld_library.cpp).
        Ok(unsafe { std::mem::transmute::<*mut c_void, LldLink>(f) })
    }) {
        Ok(f) => Some(f),
        Err(e) => {
            eprintln!("iris: lld in process unavailable ({LLD_LIBRARY}: {e}); using ld.lld");
            None
        }
    }
}

/// `dlerror()`'s message.
fn dl_error() -> String {
    // SAFETY: dlerror returns null or a NUL-terminated string valid until the next call.
    let msg = unsafe { libc::dlerror() };
    if msg.is_null() {
        return "unknown error".to_string();
    }
    // SAFETY: as above.
    unsafe { std::ffi::CStr::from_ptr(msg) }
        .to_string_lossy()
        .into_owned()
}

/// The loaded API with its targets registered, loaded on first use (once per process),
/// ready for use on the calling thread.
pub(super) fn llvm() -> Result<&'static Llvm, String> {
    static LLVM: OnceLock<Result<Llvm, String>> = OnceLock::new();
    let llvm = LLVM.get_or_init(load).as_ref().map_err(Clone::clone)?;
    llvm.enter_thread();
    Ok(llvm)
}

impl Llvm {
    /// Readies the namespace's C library for this thread: a thread the namespace did not
    /// create has no character-class tables there (glibc sets them up per thread in
    /// `__ctype_init`; measured: `isalpha` crashed inside LLVM on a compiler thread).
    fn enter_thread(&self) {
        thread_local! {
            static READY: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
        }
        if let Some(init) = self.ctype_init {
            READY.with(|ready| {
                if !ready.get() {
                    // SAFETY: `__ctype_init` takes nothing and only sets this thread's
                    // character-class table pointers of the namespace's C library.
                    unsafe { init() };
                    ready.set(true);
                }
            });
        }
    }
}

fn load() -> Result<Llvm, String> {
    let library = Opened::open(LIBRARY).map_err(|e| {
        format!(
            "cannot open LLVM's shared library {LIBRARY} (LLVM {VERSION}, found when iris-device \
             was built): {e}; reinstall that LLVM, or rebuild after pointing IRIS_LLVM_CONFIG \
             at another (scripts/setup.sh)"
        )
    })?;
    let host: Vec<unsafe extern "C" fn()> = HOST_INIT
        .iter()
        .map(|name| {
            // SAFETY: a target registration function, `void(void)`.
            library
                .required(name)
                .map(|f| unsafe { std::mem::transmute::<*mut c_void, unsafe extern "C" fn()>(f) })
        })
        .collect::<Result<_, _>>()?;
    let lld = lld_shim(&library);
    let mut llvm = Llvm::resolve(library)?;
    llvm.lld_link = lld;
    let (mut major, mut minor, mut patch) = (0, 0, 0);
    // SAFETY: three valid out-pointers.
    unsafe { (llvm.LLVMGetVersion)(&mut major, &mut minor, &mut patch) };
    if major != MAJOR {
        return Err(format!(
            "{LIBRARY} is LLVM {major}.{minor}.{patch}, but iris-device was built for LLVM \
             {VERSION}: rebuild (cargo clean -p iris-device)"
        ));
    }
    // SAFETY: LLVM's target registration functions take no arguments and only fill LLVM's
    // global target registry; this runs once per process (the OnceLock).
    unsafe {
        (llvm.LLVMInitializeAMDGPUTargetInfo)();
        (llvm.LLVMInitializeAMDGPUTarget)();
        (llvm.LLVMInitializeAMDGPUTargetMC)();
        (llvm.LLVMInitializeAMDGPUAsmPrinter)();
        (llvm.LLVMInitializeNVPTXTargetInfo)();
        (llvm.LLVMInitializeNVPTXTarget)();
        (llvm.LLVMInitializeNVPTXTargetMC)();
        (llvm.LLVMInitializeNVPTXAsmPrinter)();
        for init in host {
            init();
        }
    }
    Ok(llvm)
}
