//! An initialised SHMEM engine. The engines hold one processing element (PE) per process,
//! so the state is process-wide: initialised once, by the first context that allocates
//! from it, and kept until the process exits (the engines cannot be initialised again
//! after finalising).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use crate::transport::{decode_status, encode_status, Collective, Reader, Writer};
use iris_driver::shmem::{load, LibrarySearch, ShmemEngine, ShmemLibrary};
use iris_driver::{Error, Result};

/// How the engine's PEs find each other.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ShmemBootstrap {
    /// Rank 0 asks the engine for a unique id and sends it to every rank over iris's own
    /// rendezvous; each rank then joins as PE `rank` of the world's size. Works wherever
    /// the iris world does (the processes of one node).
    #[default]
    UniqueId,
    /// The engine's own default bootstrap, configured by its environment
    /// (`NVSHMEM_BOOTSTRAP=PMI|PMI2|PMIX|MPI`, as set up by `srun` or `mpirun`). The PE
    /// number it assigns must equal the iris rank.
    Environment,
}

impl ShmemBootstrap {
    /// The bootstrap `$IRIS_SHMEM_BOOTSTRAP` names (`uid`, the default, or `env`).
    pub fn from_env() -> Result<Self> {
        Self::parse(std::env::var("IRIS_SHMEM_BOOTSTRAP").ok().as_deref())
    }

    /// The bootstrap a value of `$IRIS_SHMEM_BOOTSTRAP` names (`None`: unset).
    pub fn parse(value: Option<&str>) -> Result<Self> {
        match value {
            None | Some("" | "uid") => Ok(ShmemBootstrap::UniqueId),
            Some("env") => Ok(ShmemBootstrap::Environment),
            Some(value) => Err(Error::InvalidEnv {
                var: "IRIS_SHMEM_BOOTSTRAP",
                value: value.to_string(),
                reason: "expected `uid` (unique id over iris's rendezvous) or `env` (the engine's own PMI/MPI bootstrap)".into(),
            }),
        }
    }
}

/// The engine, initialised in this process as PE `pe` of `n_pes`.
#[derive(Debug)]
pub(crate) struct ShmemRuntime {
    pub library: ShmemLibrary,
    pub pe: usize,
    pub n_pes: usize,
    /// Finalized (when the world that started it ended): it cannot start again.
    finalized: AtomicBool,
    /// Started by another library of this process (PyTorch's NVSHMEM, say): used as it
    /// is, and left for that library to finalize.
    adopted: bool,
}

impl ShmemRuntime {
    /// Finalizes the engine (collective in the engine: every PE calls it). The caller
    /// has checked that every rank is here and made its device current.
    pub(crate) fn finalize(&self) {
        if !self.adopted && !self.finalized.swap(true, Ordering::AcqRel) {
            // SAFETY: started, and every allocation was freed (buffers borrow the
            // context that finalizes).
            unsafe { self.library.finalize() };
        }
    }
}

/// The engines initialised in this process.
static RUNTIMES: Mutex<Vec<Arc<ShmemRuntime>>> = Mutex::new(Vec::new());

/// What a rank tells the others when the engine starts: whether it loaded the library,
/// and (rank 0) the unique id.
/// What a rank tells the others when the engine starts.
struct Start {
    /// Whether it loaded the library (and rank 0 made the id).
    status: Result<(), String>,
    /// Whether another library of its process already started the engine.
    started: bool,
    /// Rank 0's unique id.
    uid: Vec<u8>,
}

impl Start {
    fn encode(&self) -> Vec<u8> {
        let mut w = Writer::new();
        encode_status(&mut w, &self.status);
        w.u8(u8::from(self.started)).bytes(&self.uid);
        w.finish()
    }

    fn decode(bytes: &[u8]) -> Result<Start> {
        let mut r = Reader::new("shmem start", bytes);
        let status = decode_status(&mut r)?;
        let started = r.u8()? != 0;
        let uid = r.bytes()?.to_vec();
        r.end()?;
        Ok(Start {
            status,
            started,
            uid,
        })
    }
}

/// The engine of this process, initialised as PE `rank` of `size` on first use
/// (collective over `collective` then: every rank calls it). The caller has made its
/// device current on this thread.
pub(crate) fn runtime(
    engine: ShmemEngine,
    rank: usize,
    size: usize,
    bootstrap: ShmemBootstrap,
    search: &LibrarySearch,
    collective: &dyn Collective,
) -> Result<Arc<ShmemRuntime>> {
    let mut runtimes = iris_driver::sync::lock(&RUNTIMES);
    if let Some(rt) = runtimes.iter().find(|rt| rt.library.engine() == engine) {
        return if rt.finalized.load(Ordering::Acquire) {
            Err(Error::ShmemUnavailable {
                engine: engine.name(),
                reason: "it was finalized in this process when the world that started it ended, and cannot start again in the same process".into(),
            })
        } else if (rt.pe, rt.n_pes) == (rank, size) {
            Ok(Arc::clone(rt))
        } else {
            Err(Error::ShmemUnavailable {
                engine: engine.name(),
                reason: format!(
                    "it runs in this process as PE {} of {}, and cannot be started again as rank {rank} of {size}",
                    rt.pe, rt.n_pes
                ),
            })
        };
    }
    let abi = engine.abi();
    let loaded = load(engine, search);
    let mut uid = vec![0u8; abi.uniqueid_bytes];
    if let Some((off, v)) = abi.uniqueid_version {
        uid[off..off + 4].copy_from_slice(&v.to_ne_bytes());
    }
    let started = loaded.as_ref().is_ok_and(|lib| lib.already_started());
    let status = match (&loaded, rank, bootstrap) {
        (Err(e), _, _) => Err(e.to_string()),
        (Ok(_), _, _) if started => Ok(()),
        (Ok(lib), 0, ShmemBootstrap::UniqueId) => lib.get_uniqueid(&mut uid),
        (Ok(_), _, _) => Ok(()),
    };
    let what = format!("{} start", engine.name());
    let mine = Start {
        status,
        started,
        uid,
    };
    let gathered = collective.exchange(rank, &what, mine.encode(), Vec::new())?;
    let starts: Vec<Start> = gathered
        .iter()
        .map(|c| Start::decode(&c.bytes))
        .collect::<Result<_>>()?;
    let status = mine.status;
    let library = loaded?;
    if let Err(reason) = status {
        return Err(Error::ShmemUnavailable {
            engine: engine.name(),
            reason,
        });
    }
    if let Some((peer, reason)) = starts
        .iter()
        .enumerate()
        .find_map(|(r, s)| s.status.as_ref().err().map(|e| (r, e.clone())))
    {
        return Err(Error::PeerFailed {
            rank,
            what,
            peer,
            reason: format!("could not start {}: {reason}", engine.name()),
        });
    }
    if starts.iter().any(|s| s.started) {
        let (yes, no): (Vec<usize>, Vec<usize>) = (0..size).partition(|&r| starts[r].started);
        if !no.is_empty() {
            return Err(Error::ShmemUnavailable {
                engine: engine.name(),
                reason: format!(
                    "another library already started it in the processes of ranks {yes:?} but not of ranks {no:?}: start it everywhere or nowhere"
                ),
            });
        }
        return adopt(&mut runtimes, library, rank, size);
    }
    let mut attr = vec![0u8; abi.init_attr_bytes];
    for &(off, v) in abi.init_attr_fields {
        attr[off..off + 4].copy_from_slice(&v.to_ne_bytes());
    }
    let flags = match bootstrap {
        ShmemBootstrap::UniqueId => {
            let uid = &starts[0].uid;
            if uid.len() != abi.uniqueid_bytes {
                return Err(Error::Protocol {
                    what,
                    reason: format!(
                        "rank 0 sent a unique id of {} bytes, {} expected",
                        uid.len(),
                        abi.uniqueid_bytes
                    ),
                });
            }
            library
                .set_attr_uniqueid_args(rank as i32, size as i32, uid, &mut attr)
                .map_err(|reason| Error::ShmemUnavailable {
                    engine: engine.name(),
                    reason,
                })?;
            abi.init_with_uniqueid
        }
        ShmemBootstrap::Environment => 0,
    };
    let _span = tracing::debug_span!("shmem_init", engine = engine.name(), rank, size).entered();
    library
        .init_attr(flags, &mut attr)
        .map_err(|reason| Error::ShmemUnavailable {
            engine: engine.name(),
            reason: format!(
                "{reason} (see the engine's own messages above; NVSHMEM_DEBUG=INFO shows more)"
            ),
        })?;
    // SAFETY: the engine is initialised.
    let (pe, n_pes) = unsafe { library.pe_and_count() };
    if (pe as i64, n_pes as i64) != (rank as i64, size as i64) {
        // SAFETY: initialised above, nothing allocated.
        unsafe { library.finalize() };
        return Err(Error::ShmemUnavailable {
            engine: engine.name(),
            reason: format!(
                "it numbered this process PE {pe} of {n_pes}, but it is rank {rank} of {size}: launch so that the engine's PE numbers are the iris ranks"
            ),
        });
    }
    tracing::debug!(path = %library.path(), "shmem engine started");
    Ok(register(&mut runtimes, library, rank, size, false))
}

/// Records the engine of this process, running as PE `rank` of `size`.
fn register(
    runtimes: &mut Vec<Arc<ShmemRuntime>>,
    library: ShmemLibrary,
    rank: usize,
    size: usize,
    adopted: bool,
) -> Arc<ShmemRuntime> {
    let rt = Arc::new(ShmemRuntime {
        library,
        pe: rank,
        n_pes: size,
        finalized: AtomicBool::new(false),
        adopted,
    });
    runtimes.push(Arc::clone(&rt));
    rt
}

/// Uses the engine another library of this process already started, when its PE numbers
/// are the iris ranks.
fn adopt(
    runtimes: &mut Vec<Arc<ShmemRuntime>>,
    library: ShmemLibrary,
    rank: usize,
    size: usize,
) -> Result<Arc<ShmemRuntime>> {
    // SAFETY: the engine is initialised (its status says so).
    let (pe, n_pes) = unsafe { library.pe_and_count() };
    if (pe as i64, n_pes as i64) != (rank as i64, size as i64) {
        return Err(Error::ShmemUnavailable {
            engine: library.engine().name(),
            reason: format!(
                "another library started it with this process as PE {pe} of {n_pes}, but it is rank {rank} of {size}"
            ),
        });
    }
    tracing::debug!(path = %library.path(), "using the SHMEM engine another library started");
    Ok(register(runtimes, library, rank, size, true))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::Rendezvous;
    use std::path::PathBuf;
    use std::time::Duration;

    /// Builds C `source` into `<a new folder>/lib/<file>` and returns the folder (a home
    /// the search looks in).
    fn stand_in(name: &str, file: &str, source: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("iris-{name}-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("lib")).unwrap();
        std::fs::write(dir.join("fake.c"), source).unwrap();
        let status = std::process::Command::new("cc")
            .args(["-shared", "-fPIC", "-o"])
            .arg(dir.join("lib").join(file))
            .arg(dir.join("fake.c"))
            .status()
            .expect("a C compiler (cc) builds the stand-in library");
        assert!(status.success());
        dir
    }

    /// The search of the home `dir` alone, and a world of one rank.
    fn alone(dir: &std::path::Path) -> (LibrarySearch, Rendezvous) {
        let search = LibrarySearch {
            home: Some(dir.to_path_buf()),
            ..LibrarySearch::default()
        };
        (search, Rendezvous::new(1, Duration::from_secs(10)))
    }

    /// A stand-in for a shared rocSHMEM build: its C++ entry points under their mangled
    /// names, checking the init attributes' layout (rank @0, nranks @4, uid @8) against
    /// the id it made.
    const FAKE_ROCSHMEM: &str = r#"
#include <stdlib.h>
#include <string.h>
static unsigned char made[128]; static int me = -1, n = -1;
int _ZN8rocshmem21rocshmem_get_uniqueidEPSt5arrayIhLm128EE(unsigned char *uid) {
    for (int i = 0; i < 128; i++) made[i] = (unsigned char)(i * 7 + 1);
    memcpy(uid, made, 128); return 0; }
int _ZN8rocshmem31rocshmem_set_attr_uniqueid_argsEiiPSt5arrayIhLm128EEPNS_20rocshmem_init_attr_tE(
    int rank, int nranks, unsigned char *uid, unsigned char *attr) {
    memcpy(attr, &rank, 4); memcpy(attr + 4, &nranks, 4); memcpy(attr + 8, uid, 128); return 0; }
int _ZN8rocshmem18rocshmem_init_attrEjPNS_20rocshmem_init_attr_tE(unsigned flags, unsigned char *attr) {
    if (flags != 1 || memcmp(attr + 8, made, 128) != 0) return 7;
    memcpy(&me, attr, 4); memcpy(&n, attr + 4, 4); return 0; }
void _ZN8rocshmem17rocshmem_finalizeEv(void) {}
int _ZN8rocshmem14rocshmem_my_peEv(void) { return me; }
int _ZN8rocshmem14rocshmem_n_pesEv(void) { return n; }
void *_ZN8rocshmem15rocshmem_mallocEm(size_t b) { return calloc(1, b); }
void _ZN8rocshmem13rocshmem_freeEPv(void *p) { free(p); }
void *_ZN8rocshmem12rocshmem_ptrEPKvi(const void *p, int pe) { return pe == me ? (void *)p : NULL; }
"#;

    #[test]
    fn a_rocshmem_build_with_cxx_names_starts_through_the_unique_id_path() {
        let dir = stand_in("fake-rocshmem", "librocshmem.so", FAKE_ROCSHMEM);
        let (search, world) = alone(&dir);
        let rt = runtime(
            ShmemEngine::Rocshmem,
            0,
            1,
            ShmemBootstrap::UniqueId,
            &search,
            &world,
        )
        .unwrap();
        assert_eq!((rt.pe, rt.n_pes), (0, 1));
        // SAFETY: the stand-in's malloc/ptr/free are plain C.
        unsafe {
            let p = rt.library.malloc(64);
            assert_ne!(p, 0);
            assert_eq!(rt.library.ptr(p, 0), p);
            assert_eq!(rt.library.ptr(p, 1), 0);
            rt.library.free(p);
        }
        // Started once per process: the same rank again gets the same engine, another
        // rank an error saying why.
        let again = runtime(
            ShmemEngine::Rocshmem,
            0,
            1,
            ShmemBootstrap::UniqueId,
            &search,
            &world,
        );
        assert!(Arc::ptr_eq(&again.unwrap(), &rt));
        let other = runtime(
            ShmemEngine::Rocshmem,
            1,
            2,
            ShmemBootstrap::UniqueId,
            &search,
            &world,
        )
        .unwrap_err()
        .to_string();
        assert!(
            other.contains("runs in this process as PE 0 of 1"),
            "{other}"
        );
        // Finalized, it cannot start again in this process.
        rt.finalize();
        let after = runtime(
            ShmemEngine::Rocshmem,
            0,
            1,
            ShmemBootstrap::UniqueId,
            &search,
            &world,
        )
        .unwrap_err()
        .to_string();
        assert!(
            after.contains("cannot start again in the same process"),
            "{after}"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// A stand-in for an NVSHMEM another library of the process already started (as PE 0
    /// of 1); it counts the calls that must not happen.
    const FAKE_STARTED_NVSHMEM: &str = r#"
#include <stddef.h>
int forbidden = 0;
int nvshmemx_init_status(void) { return 2; }
int nvshmemx_get_uniqueid(void *u) { forbidden++; return 0; }
int nvshmemx_set_attr_uniqueid_args(int r, int n, const void *u, void *a) { forbidden++; return 0; }
int nvshmemx_hostlib_init_attr(unsigned f, void *a) { forbidden++; return 0; }
void nvshmemx_hostlib_finalize(void) { forbidden++; }
int nvshmem_my_pe(void) { return 0; }
int nvshmem_n_pes(void) { return 1; }
void *nvshmem_malloc(size_t b) { return NULL; }
void nvshmem_free(void *p) {}
void *nvshmem_ptr(const void *p, int pe) { return NULL; }
int fake_forbidden_calls(void) { return forbidden; }
"#;

    #[test]
    fn an_engine_another_library_started_is_used_as_it_is_and_not_finalized() {
        let dir = stand_in("fake-nvshmem", "libnvshmem_host.so.3", FAKE_STARTED_NVSHMEM);
        let lib = dir.join("lib/libnvshmem_host.so.3");
        let (search, world) = alone(&dir);
        let rt = runtime(
            ShmemEngine::Nvshmem,
            0,
            1,
            ShmemBootstrap::UniqueId,
            &search,
            &world,
        )
        .unwrap();
        assert_eq!((rt.pe, rt.n_pes), (0, 1));
        rt.finalize();
        // SAFETY: the stand-in's counter takes no arguments; the library stays loaded
        // (the runtime holds it).
        let forbidden = unsafe {
            let l = libloading::Library::new(&lib).unwrap();
            let f: libloading::Symbol<unsafe extern "C" fn() -> i32> =
                l.get(b"fake_forbidden_calls").unwrap();
            f()
        };
        assert_eq!(
            forbidden, 0,
            "no id, no init and no finalize for an adopted engine"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn the_bootstrap_variable_is_checked() {
        assert_eq!(
            ShmemBootstrap::parse(None).unwrap(),
            ShmemBootstrap::UniqueId
        );
        assert_eq!(
            ShmemBootstrap::parse(Some("uid")).unwrap(),
            ShmemBootstrap::UniqueId
        );
        assert_eq!(
            ShmemBootstrap::parse(Some("env")).unwrap(),
            ShmemBootstrap::Environment
        );
        let err = ShmemBootstrap::parse(Some("mpi")).unwrap_err().to_string();
        assert!(
            err.starts_with("IRIS_SHMEM_BOOTSTRAP=\"mpi\" is invalid: expected `uid`"),
            "{err}"
        );
    }
}
