//! With the `compiler` feature: builds the small C++ shim that calls lld's ELF linker as a
//! library (src/compiler/code_object/lld_library.cpp) and links lld's static libraries
//! (Debian's `liblld-22-dev`) from the LLVM that llvm-sys uses. Without it: nothing.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=LLVM_SYS_221_PREFIX");
    #[cfg(feature = "compiler")]
    build_lld_shim();
}

#[cfg(feature = "compiler")]
fn build_lld_shim() {
    let shim = "src/compiler/code_object/lld_library.cpp";
    println!("cargo:rerun-if-changed={shim}");
    let prefix = llvm_prefix();
    let include = prefix.join("include");
    let lib = prefix.join("lib");
    for (file, package) in [
        (include.join("lld/Common/Driver.h"), "liblld-22-dev"),
        (lib.join("liblldELF.a"), "liblld-22-dev"),
        (lib.join("liblldCommon.a"), "liblld-22-dev"),
    ] {
        if !file.is_file() {
            panic!(
                "iris-device: {} is missing: lld's libraries are needed to link code objects \
                 in process; run scripts/setup.sh (it installs `{package}`), or point \
                 LLVM_SYS_221_PREFIX at an LLVM 22 that has them",
                file.display()
            );
        }
    }
    cc::Build::new()
        .cpp(true)
        .std("c++17")
        .file(shim)
        .include(&include)
        .flag_if_supported("-fno-rtti")
        .flag_if_supported("-Wno-unused-parameter")
        .define("_GNU_SOURCE", None)
        .define("__STDC_CONSTANT_MACROS", None)
        .define("__STDC_FORMAT_MACROS", None)
        .define("__STDC_LIMIT_MACROS", None)
        .compile("iris_lld_shim");
    println!("cargo:rustc-link-search=native={}", lib.display());
    println!("cargo:rustc-link-lib=static=lldELF");
    println!("cargo:rustc-link-lib=static=lldCommon");
}

/// The LLVM 22 llvm-sys builds against: `LLVM_SYS_221_PREFIX` (the workspace sets it to
/// /usr/lib/llvm-22), else `llvm-config-22 --prefix`, else /usr/lib/llvm-22.
#[cfg(feature = "compiler")]
fn llvm_prefix() -> std::path::PathBuf {
    if let Some(p) = std::env::var_os("LLVM_SYS_221_PREFIX").filter(|p| !p.is_empty()) {
        return std::path::PathBuf::from(p);
    }
    std::process::Command::new("llvm-config-22")
        .arg("--prefix")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| std::path::PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()))
        .unwrap_or_else(|| std::path::PathBuf::from("/usr/lib/llvm-22"))
}
