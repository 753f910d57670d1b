//! With the `compiler` feature: finds the LLVM (19 to 22) the kernel compiler loads when
//! the proc macro runs, and tells the compiler where it is. Nothing is linked: the macro
//! opens LLVM's shared library (`libLLVM.so.N`, which every distribution and ROCm ship) at
//! run time through its C API, and links code objects with that LLVM's `ld.lld`.
//!
//! Where it looks, first found wins: `$IRIS_LLVM_CONFIG` (an `llvm-config`; only it, and an
//! error when it is unusable), ROCm's `/opt/rocm/llvm/bin/llvm-config`, then
//! `llvm-config-22` down to `llvm-config-19` (on `PATH`, then `/usr/lib/llvm-N/bin`), then
//! `llvm-config` on `PATH`. An LLVM is usable when it is version 19 to 22, has a shared
//! library, the AMDGPU, NVPTX and host targets, and its `ld.lld`. Sets for the compiler:
//! `IRIS_LLVM_LIBRARY` (the shared library), `IRIS_LLVM_VERSION`, `IRIS_LLVM_MAJOR`,
//! `IRIS_LLVM_BINDIR` (where its `ld.lld` is looked for first).
//!
//! When that LLVM has lld's libraries (`liblldELF.a`, `liblldCommon.a` and the headers:
//! Debian/Ubuntu's `liblld-N-dev`) and a C++ compiler is present, it also builds
//! `src/compiler/code_object/lld_library.cpp` into a shared object linked against them and
//! that LLVM's shared library, and sets `IRIS_LLD_LIBRARY` to it (empty otherwise): the
//! compiler then links code objects with lld in its own process instead of starting
//! `ld.lld`. Without the feature: nothing.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=IRIS_LLVM_CONFIG");
    #[cfg(feature = "compiler")]
    find_llvm::run();
}

#[cfg(feature = "compiler")]
mod find_llvm {
    use std::path::{Path, PathBuf};
    use std::process::Command;

    /// The LLVM versions the compiler supports.
    const OLDEST: u32 = 19;
    const NEWEST: u32 = 22;

    /// Builds lld_library.cpp into `$OUT_DIR/libiris_lld.so` against the LLVM's lld
    /// libraries and shared library; its path, or why not.
    fn build_lld_shim(found: &Found) -> Result<String, String> {
        let source = "src/compiler/code_object/lld_library.cpp";
        println!("cargo:rerun-if-changed={source}");
        let include = PathBuf::from(query(&found.config, "--includedir")?);
        let libdir = PathBuf::from(query(&found.config, "--libdir")?);
        let needed = [
            include.join("lld/Common/Driver.h"),
            libdir.join("liblldELF.a"),
            libdir.join("liblldCommon.a"),
        ];
        if let Some(absent) = needed.iter().find(|p| !p.is_file()) {
            return Err(format!(
                "{} is absent (install liblld-{}-dev for lld in process)",
                absent.display(),
                found.major
            ));
        }
        let out = PathBuf::from(std::env::var("OUT_DIR").map_err(|e| e.to_string())?)
            .join("libiris_lld.so");
        let cxx = std::env::var("CXX").unwrap_or_else(|_| "c++".to_string());
        let mut cmd = Command::new(&cxx);
        cmd.args(["-shared", "-fPIC", "-std=c++17", "-O2", "-fno-rtti"])
            .args(["-D_GNU_SOURCE", "-D__STDC_CONSTANT_MACROS"])
            .args(["-D__STDC_FORMAT_MACROS", "-D__STDC_LIMIT_MACROS"])
            .arg(format!("-I{}", include.display()))
            .arg(source)
            .arg("-o")
            .arg(&out)
            .args(&needed[1..])
            .arg(&found.library);
        // lld compresses sections with zlib and zstd, which LLVM's shared library links too.
        for lib in ["libz.so.1", "libzstd.so.1"] {
            if let Some(path) = system_library(lib) {
                cmd.arg(path);
            }
        }
        cmd.arg("-Wl,--no-undefined");
        let result = cmd
            .output()
            .map_err(|e| format!("cannot run the C++ compiler `{cxx}`: {e}"))?;
        if !result.status.success() {
            let text = String::from_utf8_lossy(&result.stderr);
            let first: Vec<&str> = text.lines().take(3).collect();
            return Err(format!("building {source} failed: {}", first.join(" / ")));
        }
        Ok(out.display().to_string())
    }

    /// `name` in the system's library folders.
    fn system_library(name: &str) -> Option<PathBuf> {
        system_lib_dirs()
            .into_iter()
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    }

    fn system_lib_dirs() -> Vec<PathBuf> {
        let arch = if cfg!(target_arch = "aarch64") {
            "aarch64"
        } else {
            "x86_64"
        };
        vec![
            PathBuf::from(format!("/usr/lib/{arch}-linux-gnu")),
            PathBuf::from("/usr/lib64"),
            PathBuf::from("/usr/lib"),
        ]
    }

    /// A usable LLVM.
    struct Found {
        config: PathBuf,
        version: String,
        major: u32,
        library: PathBuf,
        bindir: PathBuf,
    }

    pub fn run() {
        let found = match std::env::var_os("IRIS_LLVM_CONFIG").filter(|v| !v.is_empty()) {
            Some(config) => probe(Path::new(&config)).unwrap_or_else(|why| {
                panic!(
                    "iris-device: IRIS_LLVM_CONFIG names {}, which cannot be used: {why}",
                    Path::new(&config).display()
                )
            }),
            None => search(),
        };
        println!("cargo:rerun-if-changed={}", found.config.display());
        println!(
            "cargo:rustc-env=IRIS_LLVM_LIBRARY={}",
            found.library.display()
        );
        println!("cargo:rustc-env=IRIS_LLVM_VERSION={}", found.version);
        println!("cargo:rustc-env=IRIS_LLVM_MAJOR={}", found.major);
        println!(
            "cargo:rustc-env=IRIS_LLVM_BINDIR={}",
            found.bindir.display()
        );
        let shim = build_lld_shim(&found).unwrap_or_else(|why| {
            println!(
                "cargo:warning=iris: links code objects with the ld.lld command (about 20 ms \
                 a link), not lld in process: {why}"
            );
            String::new()
        });
        println!("cargo:rustc-env=IRIS_LLD_LIBRARY={shim}");
        if found.major < 22 {
            println!(
                "cargo:warning=iris: LLVM {} ({}) builds correct NVIDIA code; on an H200 \
                 its mma.sync GEMMs ran 1.3x slower than LLVM 22's (wgmma ones as fast): \
                 prefer LLVM 22 for GEMMs",
                found.version,
                found.config.display()
            );
        }
        if found.major < 20 {
            println!(
                "cargo:warning=iris: LLVM {} ({}) cannot build gfx950 (LLVM 20 and newer can): \
                 kernels are compiled without AMD MI350/MI355 code objects",
                found.version,
                found.config.display()
            );
        }
    }

    /// The first usable LLVM in the documented order, or a build error listing what was
    /// found and why each was passed over.
    fn search() -> Found {
        let mut candidates: Vec<PathBuf> = vec![PathBuf::from("/opt/rocm/llvm/bin/llvm-config")];
        for major in (OLDEST..=NEWEST).rev() {
            if let Some(p) = on_path(&format!("llvm-config-{major}")) {
                candidates.push(p);
            }
            candidates.push(PathBuf::from(format!(
                "/usr/lib/llvm-{major}/bin/llvm-config"
            )));
        }
        if let Some(p) = on_path("llvm-config") {
            candidates.push(p);
        }
        let mut passed_over = Vec::new();
        for config in candidates.iter().filter(|p| p.is_file()) {
            match probe(config) {
                Ok(found) => {
                    for (path, why) in &passed_over {
                        println!("cargo:warning=iris: passed over {path}: {why}");
                    }
                    return found;
                }
                Err(why) => passed_over.push((config.display().to_string(), why)),
            }
        }
        let tried: Vec<String> = passed_over
            .iter()
            .map(|(path, why)| format!("\n  {path}: {why}"))
            .collect();
        panic!(
            "iris-device: no usable LLVM found (the kernel compiler needs LLVM {OLDEST} to \
             {NEWEST} with its shared library and ld.lld). Run scripts/setup.sh, which \
             installs one (on Debian/Ubuntu: llvm-N and lld-N), or set IRIS_LLVM_CONFIG to an \
             llvm-config. Looked at $IRIS_LLVM_CONFIG, /opt/rocm/llvm, llvm-config-{NEWEST} to \
             -{OLDEST} and llvm-config.{}",
            tried.concat()
        );
    }

    /// What `config` describes, or why it cannot be used.
    fn probe(config: &Path) -> Result<Found, String> {
        let version = query(config, "--version")?;
        let major: u32 = version
            .split('.')
            .next()
            .and_then(|m| m.parse().ok())
            .ok_or_else(|| format!("cannot read the version `{version}`"))?;
        if !(OLDEST..=NEWEST).contains(&major) {
            return Err(format!(
                "LLVM {version}; the compiler supports {OLDEST} to {NEWEST}"
            ));
        }
        let targets = query(config, "--targets-built")?;
        let host = if cfg!(target_arch = "aarch64") {
            "AArch64"
        } else {
            "X86"
        };
        for needed in ["AMDGPU", "NVPTX", host] {
            if !targets.split_whitespace().any(|t| t == needed) {
                return Err(format!(
                    "LLVM {version} was built without the {needed} target (it has: {targets})"
                ));
            }
        }
        let libdir = PathBuf::from(query(config, "--libdir")?);
        let library = shared_library(&libdir, major).ok_or_else(|| {
            format!(
                "LLVM {version} has no shared library (libLLVM.so.{major}*, libLLVM-{major}.so \
                 or libLLVM.so) in {} or the system's library folders",
                libdir.display()
            )
        })?;
        let bindir = PathBuf::from(query(config, "--bindir")?);
        if !bindir.join("ld.lld").is_file() && on_path(&format!("ld.lld-{major}")).is_none() {
            return Err(format!(
                "LLVM {version} has no linker: no ld.lld in {} and no ld.lld-{major} on PATH \
                 (Debian/Ubuntu: lld-{major})",
                bindir.display()
            ));
        }
        Ok(Found {
            config: config.to_path_buf(),
            version,
            major,
            library,
            bindir,
        })
    }

    /// The shared library, by the names distributions and ROCm use: in `libdir`, else (for
    /// a version-named one) in the system's library folders, where Debian and Ubuntu's
    /// `libllvmN` package puts it (`llvm-N-dev` adds the links in `libdir`).
    fn shared_library(libdir: &Path, major: u32) -> Option<PathBuf> {
        let versioned = |dir: &Path| -> Vec<PathBuf> {
            let mut names: Vec<String> = std::fs::read_dir(dir)
                .map(|entries| {
                    entries
                        .filter_map(|e| e.ok()?.file_name().into_string().ok())
                        .filter(|n| n.starts_with(&format!("libLLVM.so.{major}")))
                        .collect()
                })
                .unwrap_or_default();
            names.sort();
            names.push(format!("libLLVM-{major}.so"));
            names.into_iter().map(|n| dir.join(n)).collect()
        };
        let mut candidates = versioned(libdir);
        candidates.push(libdir.join("libLLVM.so"));
        for dir in system_lib_dirs() {
            candidates.extend(versioned(&dir));
        }
        candidates
            .into_iter()
            .find(|p| p.is_file())
            .map(|p| p.canonicalize().unwrap_or(p))
    }

    fn query(config: &Path, flag: &str) -> Result<String, String> {
        let out = Command::new(config)
            .arg(flag)
            .output()
            .map_err(|e| format!("cannot run it: {e}"))?;
        if !out.status.success() {
            return Err(format!("`{flag}` failed ({})", out.status));
        }
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    }

    fn on_path(name: &str) -> Option<PathBuf> {
        let path = std::env::var_os("PATH")?;
        std::env::split_paths(&path)
            .map(|d| d.join(name))
            .find(|p| p.is_file())
    }
}
