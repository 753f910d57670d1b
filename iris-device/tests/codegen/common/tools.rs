//! Compiling units for a target and reading the results with LLVM's tools.

#![allow(dead_code)]

use iris_device::compiler::kernel_ir::Unit;
use iris_device::compiler::{code_object, llvm, Target};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};

/// Everything one target's compilation produced.
pub struct Out {
    pub target: Target,
    /// LLVM IR as lowered.
    pub ll: String,
    /// LLVM IR after `default<O3>`.
    pub opt: String,
    /// Assembly (PTX for NVIDIA).
    pub asm: String,
    /// The packaged code object.
    pub object: Vec<u8>,
}

fn scratch_dir(tag: &str) -> PathBuf {
    static N: AtomicU64 = AtomicU64::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    std::env::temp_dir().join(format!(
        "iris-codegen-test-{}-{tag}-{n}",
        std::process::id()
    ))
}

/// Lowers, optimises, emits and packages `unit` for `target`, keeping the dumps.
pub fn compile(unit: &Unit, target: Target) -> Out {
    let ll = llvm::lower_unit(unit, target)
        .unwrap_or_else(|e| panic!("lowering {} for {}: {e}", unit.name, target.name()));
    let dir = scratch_dir(&unit.name);
    let emitted = llvm::codegen(&ll, target, &unit.name, Some(&dir))
        .unwrap_or_else(|e| panic!("codegen {} for {}: {e}", unit.name, target.name()));
    let object = code_object::package(target, &emitted)
        .unwrap_or_else(|e| panic!("packaging {} for {}: {e}", unit.name, target.name()));
    let stem = format!("{}.{}", unit.name, target.name());
    let read = |ext: &str| {
        std::fs::read_to_string(dir.join(format!("{stem}.{ext}")))
            .unwrap_or_else(|e| panic!("dump {stem}.{ext}: {e}"))
    };
    let out = Out {
        target,
        opt: read("opt.ll"),
        asm: read("s"),
        ll: read("ll"),
        object,
    };
    assert_eq!(out.ll, ll, "the dumped IR is the lowered IR");
    let _ = std::fs::remove_dir_all(&dir);
    out
}

/// Whether the NVIDIA code is LLVM 22's, which the instruction-level checks describe.
/// Older LLVMs (19 to 21) give correct code with known differences, which the tests
/// check instead where they matter: ordered atomics as relaxed ones between fences
/// (`ld.volatile` / `st.volatile` with `fence.acq_rel`), and shared-memory tests on
/// pointers LLVM 22 can trace left in place (their fallback paths stay, untaken).
pub fn nvptx_like_llvm22() -> bool {
    llvm::LLVM_MAJOR >= 22
}

/// Compiles for every target.
pub fn compile_all(unit: &Unit) -> Vec<Out> {
    iris_device::compiler::buildable(&iris_device::compiler::ALL_TARGETS)
        .into_iter()
        .map(|t| compile(unit, t))
        .collect()
}

/// A tool of the LLVM the compiler uses: in its `bin` folder, else `<name>-<major>` on
/// PATH. Panics (the test fails) when missing: the setup script installs them (`llvm-N`).
pub fn tool(name: &str) -> PathBuf {
    let beside = Path::new(llvm::LLVM_BINDIR).join(name);
    if beside.is_file() {
        return beside;
    }
    let versioned = format!("{name}-{}", llvm::LLVM_MAJOR);
    if let Some(path) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&path) {
            let p = dir.join(&versioned);
            if p.is_file() {
                return p;
            }
        }
    }
    panic!(
        "{name} is missing (looked in {} and for {versioned} on PATH); install llvm-{}",
        llvm::LLVM_BINDIR,
        llvm::LLVM_MAJOR
    );
}

/// Runs an LLVM tool on `bytes` written to a temporary file; returns stdout.
pub fn run_tool(name: &str, args: &[&str], bytes: &[u8]) -> String {
    let dir = scratch_dir(name);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let file = dir.join("object");
    std::fs::write(&file, bytes).expect("write object");
    let out = Command::new(tool(name))
        .args(args)
        .arg(&file)
        .output()
        .unwrap_or_else(|e| panic!("running {name}: {e}"));
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        out.status.success(),
        "{name} {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// `llvm-objdump -d`.
pub fn disassemble(object: &[u8]) -> String {
    run_tool("llvm-objdump", &["-d"], object)
}

/// `llvm-readelf --notes` (the AMDGPU code-object metadata).
pub fn notes(object: &[u8]) -> String {
    run_tool("llvm-readelf", &["--notes"], object)
}

/// `llvm-readelf --dyn-syms`.
pub fn dyn_syms(object: &[u8]) -> String {
    run_tool("llvm-readelf", &["--dyn-syms", "-W"], object)
}

/// The PTX of entry point `name` in `ptx` (from `.entry name` to the next entry); panics
/// naming `target` when there is none.
pub fn ptx_entry(ptx: &str, name: &str, target: &str) -> String {
    ptx.split(".entry ")
        .find(|b| b.starts_with(name))
        .unwrap_or_else(|| panic!("{target}: no entry {name}\n{ptx}"))
        .to_string()
}

/// The PTX text of a packaged NVPTX object (without the trailing NUL).
pub fn ptx(out: &Out) -> String {
    let bytes = out.object.strip_suffix(&[0]).expect("PTX ends in NUL");
    String::from_utf8(bytes.to_vec()).expect("PTX is UTF-8")
}

/// The lines of `text` between the line containing `start` and the next line containing
/// `end` (exclusive).
pub fn section<'a>(text: &'a str, start: &str, end: &str) -> Vec<&'a str> {
    let mut lines = text.lines().skip_while(|l| !l.contains(start));
    let mut out = Vec::new();
    if let Some(first) = lines.next() {
        out.push(first);
    }
    out.extend(lines.take_while(|l| !l.contains(end)));
    out
}

/// The sizes of a kernel's arguments in the AMDGPU metadata (`.args: - .size: N`),
/// excluding hidden arguments.
pub fn amdgpu_arg_sizes(notes: &str, kernel: &str) -> Vec<u32> {
    // YAML: `amdhsa.kernels:` is a list whose entries start with `  - `; each has a
    // `    .name:` and `.args:` entries (`      - `) with `.size:` and `.value_kind:`.
    let mut kernels: Vec<Vec<&str>> = Vec::new();
    for line in notes.lines() {
        if line.starts_with("  - ") {
            kernels.push(Vec::new());
        }
        if let Some(k) = kernels.last_mut() {
            k.push(line);
        }
    }
    for k in kernels {
        let is_kernel = k
            .iter()
            .any(|l| l.strip_prefix("    .name:").map(str::trim) == Some(kernel));
        if !is_kernel {
            continue;
        }
        let mut sizes = Vec::new();
        let mut size = None;
        for line in k.iter().filter(|l| l.starts_with("      ")) {
            let l = line.trim().trim_start_matches("- ");
            if let Some(v) = l.strip_prefix(".size:") {
                size = v.trim().parse::<u32>().ok();
            }
            if let Some(kind) = l.strip_prefix(".value_kind:") {
                if let Some(sz) = size.take() {
                    if !kind.trim().starts_with("hidden_") {
                        sizes.push(sz);
                    }
                }
            }
        }
        return sizes;
    }
    panic!("kernel {kernel} not found in the metadata:\n{notes}");
}

/// The `.param` declarations of a PTX kernel.
pub fn ptx_params(ptx: &str, kernel: &str) -> Vec<String> {
    let head = format!(".entry {kernel}(");
    let start = ptx
        .find(&head)
        .unwrap_or_else(|| panic!("no .entry {kernel} in\n{ptx}"));
    let rest = &ptx[start + head.len()..];
    let end = rest.find(')').expect("end of parameter list");
    rest[..end]
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with(".param"))
        .map(|l| l.trim_end_matches(',').to_string())
        .collect()
}
