//! The layers of the runtime, checked from the sources (docs/architecture.md draws them):
//! within `iris-driver` and `iris-host`, a module may name only modules of a lower layer,
//! so no two modules of different concepts import each other, directly or around a circle;
//! calls into GPU runtimes (`extern "C"`, `libloading`, the vendor bindings) stay in
//! `iris-driver`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A crate's top-level modules, lowest layer first; a module may use only modules of
/// earlier layers.
struct Layers {
    krate: &'static str,
    layers: &'static [&'static [&'static str]],
}

const DRIVER: Layers = Layers {
    krate: "iris-driver",
    layers: &[
        &["kind"],
        &["error"],
        &["sync", "work_queues", "runtime_loader"],
        &["device"],
        &["gpu", "shmem"],
        &["cpu", "cuda", "hip"],
        &["open"],
    ],
};

const HOST: Layers = Layers {
    krate: "iris-host",
    layers: &[
        &["config", "pod"],
        &["transport", "module"],
        &["rank"],
        &["memory"],
        &["symmetric"],
        &["launch", "event"],
        &["trace"],
        &["context"],
        &["streams", "world"],
    ],
};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every `.rs` file under `dir`.
fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display())) {
            let path = entry.expect("dir entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// The code of a file without comments (line comments, doc comments) and string
/// literals' contents, so that only real paths count.
fn code(text: &str) -> String {
    text.lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The names `lib.rs` re-exports at the crate root, by the module they come from
/// (`pub use device::{Device, Stream}` makes `crate::Device` a use of `device`).
fn root_exports(lib: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let flat = code(lib).replace('\n', " ");
    for stmt in flat.split(';') {
        let stmt = stmt.trim();
        let Some(rest) = stmt.strip_prefix("pub use ") else {
            continue;
        };
        let Some((module, names)) = rest.split_once("::") else {
            continue;
        };
        let names = names.trim().trim_start_matches('{').trim_end_matches('}');
        for name in names.split(',') {
            let name = name.trim().rsplit("::").next().unwrap_or("").trim();
            if !name.is_empty() {
                out.insert(name.to_string(), module.trim().to_string());
            }
        }
    }
    out
}

/// The top-level modules `code` names through `crate::`.
fn used_modules(
    code: &str,
    modules: &BTreeSet<&str>,
    exports: &BTreeMap<String, String>,
) -> BTreeSet<String> {
    let mut used = BTreeSet::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        rest = &rest[i + "crate::".len()..];
        let names: Vec<String> = if let Some(group) = rest.strip_prefix('{') {
            let end = group.find('}').unwrap_or(group.len());
            group[..end]
                .split(',')
                .map(|n| n.trim().split("::").next().unwrap_or("").trim().to_string())
                .collect()
        } else {
            let end = rest
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            vec![rest[..end].to_string()]
        };
        for name in names {
            if modules.contains(name.as_str()) {
                used.insert(name);
            } else if let Some(module) = exports.get(&name) {
                used.insert(module.clone());
            }
        }
    }
    used
}

/// Every use of a module of the same or a higher layer, as `file: a -> b`.
fn violations(layers: &Layers) -> (Vec<String>, BTreeSet<(String, String)>) {
    let src = root().join(layers.krate).join("src");
    let layer_of: BTreeMap<&str, usize> = layers
        .layers
        .iter()
        .enumerate()
        .flat_map(|(i, ms)| ms.iter().map(move |m| (*m, i)))
        .collect();
    let modules: BTreeSet<&str> = layer_of.keys().copied().collect();
    let lib = std::fs::read_to_string(src.join("lib.rs")).expect("lib.rs");
    let exports = root_exports(&lib);
    let mut bad = Vec::new();
    let mut edges = BTreeSet::new();
    for file in sources(&src) {
        let relative = file.strip_prefix(&src).expect("under src");
        let top = relative
            .components()
            .next()
            .and_then(|c| c.as_os_str().to_str())
            .unwrap_or("")
            .trim_end_matches(".rs");
        if top == "lib" || top == "bin" {
            continue;
        }
        let Some(&own) = layer_of.get(top) else {
            bad.push(format!(
                "{}: module `{top}` is in no layer of {} (add it to tests/architecture.rs and docs/architecture.md)",
                relative.display(),
                layers.krate
            ));
            continue;
        };
        let text = std::fs::read_to_string(&file).expect("source");
        // Unit tests may build their fixtures with higher layers (a world, a context).
        let text = text.split("#[cfg(test)]").next().unwrap_or("");
        for used in used_modules(&code(text), &modules, &exports) {
            if used == top {
                continue;
            }
            edges.insert((top.to_string(), used.clone()));
            if layer_of[used.as_str()] >= own {
                bad.push(format!(
                    "{}/src/{}: `{top}` uses `{used}`, which is not in a lower layer",
                    layers.krate,
                    relative.display()
                ));
            }
        }
    }
    (bad, edges)
}

#[test]
fn the_driver_s_modules_use_only_lower_layers() {
    let (bad, edges) = violations(&DRIVER);
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    // The layering says something: the vendors sit on the shared device.
    assert!(edges.contains(&("cuda".into(), "gpu".into())), "{edges:?}");
    assert!(
        edges.contains(&("error".into(), "kind".into())),
        "{edges:?}"
    );
}

#[test]
fn the_host_s_modules_use_only_lower_layers() {
    let (bad, edges) = violations(&HOST);
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    assert!(
        edges.contains(&("symmetric".into(), "rank".into())),
        "{edges:?}"
    );
    assert!(
        edges.contains(&("world".into(), "context".into())),
        "{edges:?}"
    );
}

#[test]
fn only_the_driver_calls_foreign_code() {
    let mut bad = Vec::new();
    for krate in ["iris-host", "iris-device", "iris-macros", "src"] {
        let dir = if krate == "src" {
            root().join("src")
        } else {
            root().join(krate).join("src")
        };
        for file in sources(&dir) {
            // The compiler calls its toolchain (LLVM's shared library, the ld.lld command),
            // at build time only: that is not the device runtime.
            if file.starts_with(root().join("iris-device/src/compiler")) {
                continue;
            }
            let text = code(&std::fs::read_to_string(&file).expect("source"));
            // Test modules may load a stand-in library to read what it recorded.
            let text = text.split("#[cfg(test)]").next().unwrap_or("");
            for needle in ["cudarc", "cubecl_hip_sys", "libloading", "extern \"C\" {"] {
                if text.contains(needle) {
                    bad.push(format!("{}: `{needle}`", file.display()));
                }
            }
        }
    }
    assert!(
        bad.is_empty(),
        "foreign calls outside iris-driver:\n{}",
        bad.join("\n")
    );
}
