//! Linking with `ld.lld` (in this process when the build made lld's shim, else the
//! command of the LLVM the build found), with temporary files that clean up after
//! themselves.

use super::lld_library::Outcome;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};

/// Where `ld.lld` is looked for, in order: `$IRIS_LLD`, the `bin` folder of the LLVM the
/// build found (`llvm-config --bindir`), `ld.lld-<major>` on `PATH`, `ld.lld` on `PATH`.
pub fn find_lld() -> Result<PathBuf, String> {
    find_lld_with(std::env::var_os("IRIS_LLD"))
}

fn find_lld_with(iris_lld: Option<std::ffi::OsString>) -> Result<PathBuf, String> {
    if let Some(p) = iris_lld.filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        return if p.is_file() {
            Ok(p)
        } else {
            Err(format!(
                "IRIS_LLD names {}, which is not a file",
                p.display()
            ))
        };
    }
    let beside = Path::new(crate::compiler::llvm::LLVM_BINDIR).join("ld.lld");
    if beside.is_file() {
        return Ok(beside);
    }
    let major = crate::compiler::llvm::LLVM_MAJOR;
    if let Some(p) = on_path(&format!("ld.lld-{major}")) {
        return Ok(p);
    }
    if let Some(p) = on_path("ld.lld") {
        return Ok(p);
    }
    Err(format!(
        "no LLVM linker found: looked for $IRIS_LLD, {}, `ld.lld-{major}` and `ld.lld` on \
         PATH; install lld of the same LLVM (`apt-get install lld-{major}`, or run \
         scripts/setup.sh), or set IRIS_LLD to an ld.lld",
        beside.display()
    ))
}

fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// A file in the temporary directory, removed on drop.
pub(super) struct TempFile(pub PathBuf);

impl TempFile {
    /// A fresh name unique to this process and call: `iris-<pid>-<n>.<ext>`.
    pub fn new(ext: &str) -> Self {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let name = format!("iris-{}-{n}.{ext}", std::process::id());
        TempFile(std::env::temp_dir().join(name))
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Links `object` into a shared object with `ld.lld -shared` and `extra` arguments: in
/// this process (lld as a library), or with the `ld.lld` command when `IRIS_LLD` names one
/// or lld cannot run in this process.
pub(super) fn link_shared(object: &[u8], extra: &[&str]) -> Result<Vec<u8>, String> {
    let command = std::env::var_os("IRIS_LLD").is_some_and(|p| !p.is_empty());
    link_shared_by(object, extra, command)
}

/// [`link_shared`] in this process, or with the `ld.lld` command when `command` (or when
/// lld cannot run in this process).
fn link_shared_by(object: &[u8], extra: &[&str], command: bool) -> Result<Vec<u8>, String> {
    let input = TempFile::new("o");
    let output = TempFile::new("so");
    std::fs::write(&input.0, object)
        .map_err(|e| format!("cannot write {}: {e}", input.0.display()))?;
    let mut args: Vec<String> = vec!["-shared".into()];
    args.extend(extra.iter().map(|a| a.to_string()));
    args.push("-o".into());
    args.push(output.0.display().to_string());
    args.push(input.0.display().to_string());
    if !command {
        match super::lld_library::link(&args) {
            Outcome::Linked => return read_output(&output),
            Outcome::Failed(messages) => {
                return Err(format!(
                    "ld.lld -shared failed (lld in this process): {messages}"
                ))
            }
            Outcome::Unavailable => {}
        }
    }
    run_command(&args)?;
    read_output(&output)
}

fn read_output(output: &TempFile) -> Result<Vec<u8>, String> {
    std::fs::read(&output.0).map_err(|e| format!("cannot read {}: {e}", output.0.display()))
}

/// Runs the `ld.lld` command [`find_lld`] finds with `args`.
fn run_command(args: &[String]) -> Result<(), String> {
    let lld = find_lld()?;
    let out = Command::new(&lld)
        .args(args)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", lld.display()))?;
    if !out.status.success() {
        return Err(format!(
            "{} -shared failed ({}): {}",
            lld.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iris_lld_must_name_a_file() {
        let err = find_lld_with(Some("/nonexistent/ld.lld".into())).unwrap_err();
        assert!(err.contains("IRIS_LLD"), "{err}");
        // Unset or empty: the usual places (the build's LLVM has its lld where tests run).
        assert!(find_lld_with(None).is_ok());
        assert!(find_lld_with(Some("".into())).is_ok());
    }

    /// An object for `target` from textual LLVM IR.
    fn object(target: crate::compiler::Target, ir: &str) -> Vec<u8> {
        crate::compiler::llvm::codegen(ir, target, "lld_test", None).expect("codegen")
    }

    #[test]
    fn in_process_and_command_links_give_the_same_code_object() {
        use crate::compiler::Target;
        let amd = object(
            Target::Gfx942,
            "target triple = \"amdgcn-amd-amdhsa\"\ndefine amdgpu_kernel void @k(ptr addrspace(1) %p) {\n  store i32 7, ptr addrspace(1) %p\n  ret void\n}\n",
        );
        let cpu = object(
            Target::Cpu,
            "define void @k(ptr %p) {\n  store i32 7, ptr %p\n  ret void\n}\n",
        );
        for (obj, extra) in [(&amd, &[][..]), (&cpu, &["--no-undefined"][..])] {
            let here = link_shared_by(obj, extra, false).expect("in process");
            let there = link_shared_by(obj, extra, true).expect("command");
            assert!(here.starts_with(b"\x7fELF"));
            assert_eq!(here, there, "lld in process and `ld.lld` differ");
        }
        if crate::compiler::llvm::lld_in_process().is_none() {
            eprintln!("skipped the in-process half: the build made no lld shim (no liblld-N-dev)");
        }
    }

    #[test]
    fn a_link_error_is_reported_and_the_next_link_works() {
        use crate::compiler::Target;
        let needs = object(
            Target::Cpu,
            "declare void @missing()\ndefine void @k() {\n  call void @missing()\n  ret void\n}\n",
        );
        for command in [false, true] {
            let err = link_shared_by(&needs, &["--no-undefined"], command).unwrap_err();
            assert!(
                err.contains("undefined symbol") && err.contains("missing"),
                "{err}"
            );
            let fine = object(Target::Cpu, "define void @k() {\n  ret void\n}\n");
            assert!(link_shared_by(&fine, &["--no-undefined"], command).is_ok());
        }
    }

    #[test]
    fn temporary_files_are_unique_and_removed() {
        let (a, b) = (TempFile::new("o"), TempFile::new("o"));
        assert_ne!(a.0, b.0);
        std::fs::write(&a.0, b"x").unwrap();
        let path = a.0.clone();
        drop(a);
        assert!(!path.exists());
    }
}
