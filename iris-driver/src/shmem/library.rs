//! Finding and loading a SHMEM engine's host library at run time (no build-time
//! dependency): from `$NVSHMEM_HOME` / `$ROCSHMEM_HOME`, the dynamic loader's search path,
//! or the Python package that ships it. A library that cannot be found is an error naming
//! every place searched.

use std::ffi::{c_int, c_uint, c_void, OsString};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::engine::ShmemEngine;
use crate::error::{Error, Result};

/// Where to look for an engine's host library. [`from_env`](LibrarySearch::from_env)
/// reads the environment; tests build one by hand.
#[derive(Clone, Debug, Default)]
pub struct LibrarySearch {
    /// The engine's install prefix (`$NVSHMEM_HOME`, `$ROCSHMEM_HOME`): `<home>/lib` is
    /// searched first.
    pub home: Option<PathBuf>,
    /// Install prefixes searched when `home` is unset (`/opt/rocm` for rocSHMEM).
    pub default_homes: Vec<PathBuf>,
    /// Whether to ask the dynamic loader for the library by name (`LD_LIBRARY_PATH`, the
    /// loader cache, a copy already loaded in the process).
    pub loader: bool,
    /// The Python interpreter asked for the folder of the engine's package
    /// (`nvidia-nvshmem-cu13` for NVSHMEM); `None` skips it.
    pub python: Option<OsString>,
}

impl LibrarySearch {
    /// The search the environment asks for: the engine's home variable, the loader, and
    /// the interpreter `$IRIS_PYTHON` (default `python3`).
    pub fn from_env(engine: ShmemEngine) -> Self {
        Self {
            home: std::env::var_os(engine.home_var())
                .filter(|v| !v.is_empty())
                .map(PathBuf::from),
            default_homes: engine.default_homes().iter().map(PathBuf::from).collect(),
            loader: true,
            python: Some(std::env::var_os("IRIS_PYTHON").unwrap_or_else(|| "python3".into())),
        }
    }
}

/// A loaded host library: its entry points (signatures common to NVSHMEM 3 and rocSHMEM
/// 3; ids and attributes are opaque byte blocks laid out per [`ShmemEngine::abi`]),
/// called through the methods below, which check the blocks' sizes.
pub struct ShmemLibrary {
    engine: ShmemEngine,
    /// Where it was loaded from.
    path: String,
    get_uniqueid: unsafe extern "C" fn(*mut u8) -> c_int,
    set_attr_uniqueid_args: unsafe extern "C" fn(c_int, c_int, *const u8, *mut u8) -> c_int,
    init_attr: unsafe extern "C" fn(c_uint, *mut u8) -> c_int,
    finalize: unsafe extern "C" fn(),
    my_pe: unsafe extern "C" fn() -> c_int,
    n_pes: unsafe extern "C" fn() -> c_int,
    malloc: unsafe extern "C" fn(usize) -> *mut c_void,
    free: unsafe extern "C" fn(*mut c_void),
    ptr: unsafe extern "C" fn(*const c_void, c_int) -> *mut c_void,
    init_status: Option<unsafe extern "C" fn() -> c_int>,
    /// Keeps the entry points above valid.
    _library: libloading::Library,
}

impl ShmemLibrary {
    /// The engine this library is.
    pub fn engine(&self) -> ShmemEngine {
        self.engine
    }

    /// Where it was loaded from.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Whether the engine is already initialised in this process (by another library).
    pub fn already_started(&self) -> bool {
        // SAFETY: the status query takes no arguments and may be called at any time.
        self.init_status.is_some_and(|f| unsafe { f() } >= 2)
    }

    /// `Ok` for a return code of 0, else a message naming the entry point.
    fn check(&self, rc: c_int, entry: &[&str]) -> Result<(), String> {
        if rc == 0 {
            Ok(())
        } else {
            Err(format!("{} returned {rc}", entry.first().unwrap_or(&"?")))
        }
    }

    /// `Err` unless `block` holds at least `bytes` (an id or attribute block of the
    /// engine's layout).
    fn sized(block: usize, bytes: usize, what: &str) -> Result<(), String> {
        if block >= bytes {
            Ok(())
        } else {
            Err(format!(
                "a {what} block of {block} bytes; the engine needs {bytes}"
            ))
        }
    }

    /// Writes a new unique id into `uid` (at least
    /// [`AbiLayout::uniqueid_bytes`](super::engine::AbiLayout::uniqueid_bytes) long, its
    /// version field set).
    pub fn get_uniqueid(&self, uid: &mut [u8]) -> Result<(), String> {
        Self::sized(uid.len(), self.engine.abi().uniqueid_bytes, "unique id")?;
        // SAFETY: `uid` holds the engine's unique-id block.
        let rc = unsafe { (self.get_uniqueid)(uid.as_mut_ptr()) };
        self.check(rc, self.engine.entry_points().get_uniqueid)
    }

    /// Fills the init attributes `attr` to start as PE `rank` of `size` from `uid`.
    pub fn set_attr_uniqueid_args(
        &self,
        rank: i32,
        size: i32,
        uid: &[u8],
        attr: &mut [u8],
    ) -> Result<(), String> {
        let abi = self.engine.abi();
        Self::sized(uid.len(), abi.uniqueid_bytes, "unique id")?;
        Self::sized(attr.len(), abi.init_attr_bytes, "init attributes")?;
        // SAFETY: both blocks are the engine's, of the sizes its header gives.
        let rc =
            unsafe { (self.set_attr_uniqueid_args)(rank, size, uid.as_ptr(), attr.as_mut_ptr()) };
        self.check(rc, self.engine.entry_points().set_attr_uniqueid_args)
    }

    /// Starts the engine with the init attributes `attr` (collective across its PEs).
    pub fn init_attr(&self, flags: u32, attr: &mut [u8]) -> Result<(), String> {
        Self::sized(
            attr.len(),
            self.engine.abi().init_attr_bytes,
            "init attributes",
        )?;
        // SAFETY: `attr` is the engine's init-attribute block and outlives the call.
        let rc = unsafe { (self.init_attr)(flags, attr.as_mut_ptr()) };
        self.check(rc, self.engine.entry_points().init_attr)
    }

    /// Ends the engine.
    ///
    /// # Safety
    /// This process started it through this library, and nothing of it is used afterwards.
    pub unsafe fn finalize(&self) {
        // SAFETY: per the caller.
        unsafe { (self.finalize)() }
    }

    /// This process's PE number and the number of PEs.
    ///
    /// # Safety
    /// The engine is started.
    pub unsafe fn pe_and_count(&self) -> (i32, i32) {
        // SAFETY: per the caller.
        unsafe { ((self.my_pe)(), (self.n_pes)()) }
    }

    /// Allocates `bytes` of the symmetric heap (collective: every PE, same size, same
    /// order); 0 when it fails.
    ///
    /// # Safety
    /// The engine is started.
    pub unsafe fn malloc(&self, bytes: usize) -> u64 {
        // SAFETY: per the caller.
        unsafe { (self.malloc)(bytes) as u64 }
    }

    /// Frees an allocation of [`malloc`](ShmemLibrary::malloc) (collective).
    ///
    /// # Safety
    /// `addr` came from `malloc` of this engine and is not used afterwards.
    pub unsafe fn free(&self, addr: u64) {
        // SAFETY: per the caller.
        unsafe { (self.free)(addr as *mut c_void) }
    }

    /// PE `pe`'s copy of the symmetric address `addr` as this process can reach it, or 0
    /// when it cannot.
    ///
    /// # Safety
    /// The engine is started and `addr` lies in its symmetric heap.
    pub unsafe fn ptr(&self, addr: u64, pe: i32) -> u64 {
        // SAFETY: per the caller.
        unsafe { (self.ptr)(addr as *const c_void, pe) as u64 }
    }
}

impl std::fmt::Debug for ShmemLibrary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} host library at {}", self.engine, self.path)
    }
}

/// Loads `engine`'s host library from the first place of `search` that has a usable one.
pub fn load(engine: ShmemEngine, search: &LibrarySearch) -> Result<ShmemLibrary> {
    let mut tried = Vec::new();
    let homes: Vec<PathBuf> = match &search.home {
        Some(home) => vec![home.clone()],
        None => {
            tried.push(format!("${} is unset", engine.home_var()));
            search.default_homes.iter().map(PathBuf::from).collect()
        }
    };
    for home in &homes {
        for name in engine.library_names() {
            let path = home.join("lib").join(name);
            if let Some(lib) = try_file(engine, &path, &mut tried) {
                return Ok(lib);
            }
        }
        let archive = home.join("lib/librocshmem.a");
        if engine == ShmemEngine::Rocshmem && archive.exists() {
            tried.push(format!(
                "{} is there, but a static library cannot be loaded at run time: build rocSHMEM with -DBUILD_SHARED_LIBS=ON (or a shared shim over it)",
                archive.display()
            ));
        }
    }
    if search.loader {
        for name in engine.library_names() {
            match open(engine, name) {
                Ok(lib) => return Ok(lib),
                Err(reason) => tried.push(format!("{name} on the loader's path: {reason}")),
            }
        }
    }
    if let (Some(python), Some(package)) = (&search.python, engine.python_package()) {
        match python_package_dir(python, package) {
            Ok(dir) => {
                for name in engine.library_names() {
                    let path = dir.join("lib").join(name);
                    if let Some(lib) = try_file(engine, &path, &mut tried) {
                        return Ok(lib);
                    }
                }
            }
            Err(reason) => tried.push(format!(
                "{}'s package {package}: {reason}",
                python.to_string_lossy()
            )),
        }
    }
    Err(Error::ShmemUnavailable {
        engine: engine.name(),
        reason: format!(
            "its host library was not found; searched: {}. Set ${} to its install prefix, add its lib folder to LD_LIBRARY_PATH{}",
            tried.join("; "),
            engine.home_var(),
            match engine.python_package() {
                Some(_) => ", or install the Python package nvidia-nvshmem-cu13 (or -cu12)",
                None => "",
            }
        ),
    })
}

fn try_file(engine: ShmemEngine, path: &Path, tried: &mut Vec<String>) -> Option<ShmemLibrary> {
    if !path.exists() {
        tried.push(format!("{}: no such file", path.display()));
        return None;
    }
    match open(engine, path.as_os_str()) {
        Ok(lib) => Some(lib),
        Err(reason) => {
            tried.push(format!("{}: {reason}", path.display()));
            None
        }
    }
}

/// Opens `file` and resolves every entry point; the reason when either fails.
fn open(engine: ShmemEngine, file: impl AsRef<std::ffi::OsStr>) -> Result<ShmemLibrary, String> {
    let file = file.as_ref();
    // SAFETY: loading runs the library's initialisers; SHMEM host libraries have no
    // initialiser that depends on the caller.
    let library = unsafe { libloading::Library::new(file) }.map_err(|e| e.to_string())?;
    let names = engine.entry_points();
    macro_rules! sym {
        ($names:expr) => {{
            let names: &[&str] = $names;
            let found = names.iter().find_map(|name| {
                // SAFETY: each candidate has the C signature the field declares (the
                // engine's public header; C++ functions of these signatures use the C
                // calling convention); `_library` keeps it loaded for as long as the
                // pointer lives.
                unsafe { library.get(name.as_bytes()) }.ok().map(|s| *s)
            });
            found.ok_or_else(|| {
                format!(
                    "not a usable {} host library: symbol {} is missing",
                    engine.name(),
                    names[0]
                )
            })?
        }};
    }
    Ok(ShmemLibrary {
        engine,
        path: file.to_string_lossy().into_owned(),
        get_uniqueid: sym!(names.get_uniqueid),
        set_attr_uniqueid_args: sym!(names.set_attr_uniqueid_args),
        init_attr: sym!(names.init_attr),
        finalize: sym!(names.finalize),
        my_pe: sym!(names.my_pe),
        n_pes: sym!(names.n_pes),
        malloc: sym!(names.malloc),
        free: sym!(names.free),
        ptr: sym!(names.ptr),
        // SAFETY: as above; `fn() -> int` per the engine's header.
        init_status: names
            .init_status
            .iter()
            .find_map(|name| unsafe { library.get(name.as_bytes()) }.ok().map(|s| *s)),
        _library: library,
    })
}

/// The folder of Python package `package` as `python` finds it (bounded: 20 s).
fn python_package_dir(python: &OsString, package: &str) -> Result<PathBuf, String> {
    let script = format!(
        "import importlib.util as u\ntry:\n    s = u.find_spec({package:?})\nexcept Exception:\n    s = None\nprint(list(s.submodule_search_locations)[0] if s and s.submodule_search_locations else '')"
    );
    let mut child = Command::new(python)
        .args(["-c", &script])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot run the interpreter ({e})"))?;
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err("the interpreter did not answer within 20 s".into());
            }
            Err(e) => return Err(format!("waiting for the interpreter: {e}")),
        }
    }
    let mut out = String::new();
    if let Some(mut stdout) = child.stdout.take() {
        use std::io::Read;
        stdout
            .read_to_string(&mut out)
            .map_err(|e| format!("reading the interpreter's answer: {e}"))?;
    }
    let dir = out.trim();
    if dir.is_empty() {
        Err("not installed".into())
    } else {
        Ok(PathBuf::from(dir))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nothing() -> LibrarySearch {
        LibrarySearch {
            home: None,
            default_homes: Vec::new(),
            loader: false,
            python: None,
        }
    }

    #[test]
    fn a_missing_library_names_every_place_searched() {
        let dir = std::env::temp_dir().join(format!("iris-shmem-empty-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("lib")).unwrap();
        let search = LibrarySearch {
            home: Some(dir.clone()),
            default_homes: Vec::new(),
            loader: true,
            python: Some("iris-no-such-python".into()),
        };
        let err = load(ShmemEngine::Nvshmem, &search).unwrap_err().to_string();
        assert!(err.starts_with("NVSHMEM is unavailable"), "{err}");
        for part in [
            format!(
                "{}: no such file",
                dir.join("lib/libnvshmem_host.so.3").display()
            ),
            "libnvshmem_host.so.3 on the loader's path".to_string(),
            "iris-no-such-python's package nvidia.nvshmem: cannot run the interpreter".into(),
            "NVSHMEM_HOME".into(),
        ] {
            assert!(err.contains(&part), "`{part}` missing from: {err}");
        }
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn an_unset_home_is_said_and_rocshmem_has_no_python_package() {
        let err = load(ShmemEngine::Rocshmem, &nothing())
            .unwrap_err()
            .to_string();
        assert!(err.contains("$ROCSHMEM_HOME is unset"), "{err}");
        assert!(!err.contains("Python"), "{err}");
    }

    #[test]
    fn a_library_without_the_entry_points_is_refused_by_name() {
        // Any shared library that is not NVSHMEM: the C library itself.
        let err = open(ShmemEngine::Nvshmem, "libc.so.6").unwrap_err();
        assert!(
            err.contains(
                "not a usable NVSHMEM host library: symbol nvshmemx_get_uniqueid is missing"
            ),
            "{err}"
        );
    }

    #[test]
    fn a_python_without_the_package_says_not_installed() {
        let Ok(python) = which("python3") else {
            eprintln!("skipped: no python3 on PATH");
            return;
        };
        let err = python_package_dir(&python, "iris_no_such_package.sub").unwrap_err();
        assert_eq!(err, "not installed");
    }

    #[test]
    fn a_static_only_rocshmem_install_says_how_to_get_a_loadable_one() {
        let dir = std::env::temp_dir().join(format!("iris-rocshmem-static-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("lib")).unwrap();
        std::fs::write(dir.join("lib/librocshmem.a"), b"!<arch>\n").unwrap();
        let search = LibrarySearch {
            home: Some(dir.clone()),
            ..nothing()
        };
        let err = load(ShmemEngine::Rocshmem, &search)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("librocshmem.a is there, but a static library cannot be loaded"),
            "{err}"
        );
        assert!(err.contains("-DBUILD_SHARED_LIBS=ON"), "{err}");
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// The real NVSHMEM host library (from `$IRIS_TEST_NVSHMEM_HOME`, e.g. the folder
    /// `nvidia/nvshmem` of the `nvidia-nvshmem-cu13` wheel) loads, every entry point
    /// resolves, and a unique id comes back with its version intact (the bootstrap needs
    /// no GPU).
    #[test]
    fn the_real_nvshmem_host_library_loads_and_makes_a_unique_id() {
        let Some(home) = std::env::var_os("IRIS_TEST_NVSHMEM_HOME") else {
            eprintln!("skipped: IRIS_TEST_NVSHMEM_HOME is unset (point it at an NVSHMEM install to run this)");
            return;
        };
        let search = LibrarySearch {
            home: Some(home.into()),
            ..nothing()
        };
        let lib = load(ShmemEngine::Nvshmem, &search).unwrap();
        assert!(
            lib.path.ends_with("lib/libnvshmem_host.so.3"),
            "{}",
            lib.path
        );
        let abi = ShmemEngine::Nvshmem.abi();
        let mut uid = vec![0u8; abi.uniqueid_bytes];
        let (off, version) = abi.uniqueid_version.unwrap();
        uid[off..off + 4].copy_from_slice(&version.to_ne_bytes());
        lib.get_uniqueid(&mut uid).unwrap();
        assert_eq!(uid[..4], version.to_ne_bytes());
        assert!(
            uid[4..].iter().any(|&b| b != 0),
            "the id carries the root's address"
        );
    }

    fn which(name: &str) -> Result<OsString, ()> {
        let path = std::env::var_os("PATH").ok_or(())?;
        std::env::split_paths(&path)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
            .map(|p| p.into_os_string())
            .ok_or(())
    }
}
