//! Shared test support: CPU code objects built from C, wrapped in kernel units.
#![allow(dead_code)]

mod children;
#[allow(unused_imports)] // not every test crate starts processes
pub use children::{no_core_dump, wait_all, Ended};

use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use iris_device::abi::{CodeObject, KernelSpec, KernelUnit, ParamKind, ParamSpec, TargetKind};
use iris_host::driver::cpu::HOST_TRIPLE;

const SOURCE: &str = include_str!("kernels.c");

/// Kernel indices in [`unit`].
pub const WRITE_IDS: usize = 0;
pub const BLOCK_REVERSE: usize = 1;
pub const VALUES: usize = 2;
pub const ALL_GATHER: usize = 3;
pub const SPIN: usize = 4;
pub const REMOTE_ADD: usize = 5;

/// Shared bytes of `block_reverse` (one u32 per thread, up to 1024 threads).
pub const REVERSE_SHARED: u32 = 4096;

/// The bytes of `kernels.c` built as a shared object with the system C compiler.
///
/// A process spawned by a test reads them from the file `IRIS_TEST_KERNELS_SO` names
/// instead of building them again.
pub fn kernels_so() -> &'static [u8] {
    static SO: OnceLock<Vec<u8>> = OnceLock::new();
    SO.get_or_init(|| {
        if let Some(path) = std::env::var_os("IRIS_TEST_KERNELS_SO") {
            return std::fs::read(path).expect("read IRIS_TEST_KERNELS_SO");
        }
        let dir: PathBuf =
            std::env::temp_dir().join(format!("iris-host-tests-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let src = dir.join("kernels.c");
        let out = dir.join("kernels.so");
        std::fs::write(&src, SOURCE).expect("write kernels.c");
        let status = Command::new("cc")
            .args(["-shared", "-fPIC", "-O2", "-o"])
            .arg(&out)
            .arg(&src)
            .status()
            .expect("running cc");
        assert!(status.success(), "cc failed to build the test kernels");
        let bytes = std::fs::read(&out).expect("read kernels.so");
        let _ = std::fs::remove_dir_all(&dir);
        bytes
    })
}

fn leak<T>(v: Vec<T>) -> &'static [T] {
    Box::leak(v.into_boxed_slice())
}

const fn value(name: &'static str, ty: &'static str, size: u32, align: u32) -> ParamSpec {
    ParamSpec {
        name,
        ty,
        kind: ParamKind::Value { size, align },
    }
}

const fn pointer(name: &'static str, ty: &'static str) -> ParamSpec {
    ParamSpec {
        name,
        ty,
        kind: ParamKind::Pointer,
    }
}

/// The specs of the kernels in `kernels.c`, in index order.
pub fn specs() -> Vec<KernelSpec> {
    vec![
        KernelSpec {
            name: "write_ids",
            params: leak(vec![pointer("out", "*mut u32"), value("n", "u64", 8, 8)]),
            shared_bytes: 0,
            concurrent_threads: false,
            max_block_threads: 1024,
            peer_checks: false,
            signal_waits: false,
            spins: false,
            trace_events: false,
        },
        KernelSpec {
            name: "block_reverse",
            params: leak(vec![
                pointer("input", "*const u32"),
                pointer("out", "*mut u32"),
                pointer("dirty", "*mut u32"),
                value("active", "u32", 4, 4),
            ]),
            shared_bytes: REVERSE_SHARED,
            concurrent_threads: true,
            max_block_threads: 1024,
            peer_checks: false,
            signal_waits: false,
            spins: false,
            trace_events: false,
        },
        KernelSpec {
            name: "values",
            params: leak(vec![
                pointer("out", "*mut f64"),
                value("a", "u8", 1, 1),
                value("b", "u16", 2, 2),
                value("v", "f32x4", 16, 16),
                value("d", "f64", 8, 8),
            ]),
            shared_bytes: 0,
            concurrent_threads: false,
            max_block_threads: 256,
            peer_checks: false,
            signal_waits: false,
            spins: false,
            trace_events: false,
        },
        KernelSpec {
            name: "all_gather",
            params: leak(vec![
                pointer("input", "*const f32"),
                ParamSpec {
                    name: "out",
                    ty: "Symmetric<f32>",
                    kind: ParamKind::Symmetric,
                },
                value("n", "u64", 8, 8),
                value("me", "u32", 4, 4),
                value("world", "u32", 4, 4),
            ]),
            shared_bytes: 0,
            concurrent_threads: false,
            max_block_threads: 1024,
            peer_checks: false,
            signal_waits: false,
            spins: false,
            trace_events: false,
        },
        KernelSpec {
            name: "spin",
            params: leak(vec![pointer("flag", "*const u32")]),
            shared_bytes: 0,
            concurrent_threads: false,
            max_block_threads: 1,
            peer_checks: false,
            signal_waits: false,
            spins: false,
            trace_events: false,
        },
        KernelSpec {
            name: "remote_add",
            params: leak(vec![
                ParamSpec {
                    name: "counter",
                    ty: "Symmetric<u64>",
                    kind: ParamKind::Symmetric,
                },
                value("per_thread", "u64", 8, 8),
                value("world", "u32", 4, 4),
            ]),
            shared_bytes: 0,
            concurrent_threads: false,
            max_block_threads: 1024,
            peer_checks: false,
            signal_waits: false,
            spins: false,
            trace_events: false,
        },
    ]
}

/// The test unit: the kernels of `kernels.c` for the host, plus GPU objects that are
/// never loaded here.
pub fn unit() -> &'static KernelUnit {
    static UNIT: OnceLock<&'static KernelUnit> = OnceLock::new();
    UNIT.get_or_init(|| {
        Box::leak(Box::new(KernelUnit {
            id: "iris_host_tests::kernels",
            kernels: leak(specs()),
            left_out: &[],
            code_objects: leak(vec![
                CodeObject {
                    target: "sm_90",
                    kind: TargetKind::Nvptx,
                    bytes: b"// not loaded\0",
                },
                CodeObject {
                    target: HOST_TRIPLE,
                    kind: TargetKind::Cpu,
                    bytes: kernels_so(),
                },
            ]),
        }))
    })
}

/// A unit with the same kernels but code objects for GPUs only.
pub fn gpu_only_unit() -> &'static KernelUnit {
    Box::leak(Box::new(KernelUnit {
        id: "iris_host_tests::gpu_only",
        kernels: leak(specs()),
        left_out: &[],
        code_objects: leak(vec![
            CodeObject {
                target: "gfx942",
                kind: TargetKind::Amdgpu,
                bytes: b"\0",
            },
            CodeObject {
                target: "sm_90",
                kind: TargetKind::Nvptx,
                bytes: b"\0",
            },
        ]),
    }))
}
