//! Runtime misuse, each an error whose text says what went wrong (never a panic, a hang or
//! lost memory): grids of zero or beyond the device in every axis, zero-length
//! allocations, double frees, a heap exhausted and reused over 100,000 allocation cycles,
//! `IRIS_BACKEND` / `IRIS_TIMEOUT` holding bad values, code objects the device cannot use,
//! and peer indices outside the world.
//!
//! Decisions these tests pin down:
//! - A zero-length allocation is a valid, empty buffer (not an error). A plain [`Buffer`]
//!   of zero bytes holds no memory (its address is 0, which a kernel launched with `n = 0`
//!   never reads); a zero-length symmetric buffer takes one heap granule (256 bytes) so
//!   that its table and base are real addresses, and gives it back when freed.
//! - A double free cannot be written against the API: [`SymmetricBuffer::free`] takes the
//!   buffer by value and dropping frees exactly once (the same holds for [`Buffer`]). The
//!   layers below, which take offsets and maps, refuse a second free with
//!   [`Error::InvalidFree`] and leave their state as it was.
//!
//! Environment variables are tested in child processes (this binary again, running the
//! `child` test with `IRIS_TEST_ROLE` set), never with `set_var` in this multithreaded
//! test process.

mod common;

use std::process::{Command, Stdio};
use std::time::Instant;

use common::*;
use iris_device::abi::{CodeObject, KernelUnit, TargetKind};
use iris_host::driver::cpu::HOST_TRIPLE;
use iris_host::driver::BackendKind;
use iris_host::symmetric::{HeapAllocator, HeapError, HEAP_ALIGN};
use iris_host::{Buffer, Error, Iris, LaunchConfig, ProviderKind, Result, SymmetricBuffer, World};

fn world(ranks: usize) -> World {
    World::threads(ranks)
        .backend(BackendKind::Cpu)
        .heap_bytes(1 << 20)
}

fn write_ids(iris: &Iris, out: &Buffer<'_, u32>, n: u64, config: LaunchConfig) -> Result<()> {
    let mut args = iris.args(unit(), WRITE_IDS);
    args.pointer(out)?;
    args.value(n);
    iris.launch(config, args)
}

fn all_gather(
    iris: &Iris,
    input: &Buffer<'_, f32>,
    out: &SymmetricBuffer<'_, f32>,
    n: u64,
) -> Result<()> {
    let mut args = iris.args(unit(), ALL_GATHER);
    args.pointer(input)?;
    args.symmetric(out)?;
    args.value(n);
    args.value(iris.rank() as u32);
    args.value(iris.world_size() as u32);
    iris.launch(LaunchConfig::for_elements(n, 64), args)
}

// ----- grids ------------------------------------------------------------------------------

#[test]
fn a_grid_of_zero_or_beyond_the_device_in_any_axis_is_refused_and_runs_nothing() {
    world(1)
        .run(|iris| {
            let out = iris.full::<u32>(64, 7)?; // write_ids writes 2 words per id: n = 32
            let max = iris.device_info().max_grid_dims;
            for (axis, name) in ["x", "y", "z"].iter().enumerate() {
                let mut zero = [1u32; 3];
                zero[axis] = 0;
                let err = write_ids(iris, &out, 32, LaunchConfig::new(zero, [64, 1, 1]))
                    .unwrap_err();
                assert!(matches!(err, Error::InvalidLaunchConfig { .. }), "{err}");
                assert_eq!(
                    err.to_string(),
                    format!(
                        "kernel `write_ids`: invalid launch configuration: grid dimension {name} is 0"
                    )
                );
                if let Some(over) = max[axis].checked_add(1) {
                    let mut big = [1u32; 3];
                    big[axis] = over;
                    let err = write_ids(iris, &out, 32, LaunchConfig::new(big, [64, 1, 1]))
                        .unwrap_err();
                    assert!(matches!(err, Error::InvalidLaunchConfig { .. }), "{err}");
                    assert_eq!(
                        err.to_string(),
                        format!(
                            "kernel `write_ids`: invalid launch configuration: grid dimension {name} is {over}, the device allows at most {}",
                            max[axis]
                        )
                    );
                }
            }
            // nothing ran: the buffer still holds what it was filled with
            iris.synchronize()?;
            assert!(out.to_vec()?.iter().all(|&v| v == 7));
            // the largest grid the device allows in y is accepted (1-thread blocks)
            write_ids(iris, &out, 32, LaunchConfig::new([1, max[1].min(4096), 1], [1, 1, 1]))?;
            iris.synchronize()
        })
        .unwrap();
}

// ----- zero-length allocations ------------------------------------------------------------

#[test]
fn zero_length_allocations_are_valid_empty_buffers() {
    world(2)
        .run(|iris| {
            // plain device memory: no memory at all
            let empty = iris.zeros::<u32>(0)?;
            assert!(empty.is_empty());
            assert_eq!(empty.bytes(), 0);
            assert_eq!(empty.addr(), 0, "a zero-byte buffer holds no memory");
            empty.copy_from_slice(&[])?;
            assert_eq!(empty.to_vec()?, Vec::<u32>::new());
            let from_nothing = iris.from_slice::<f32>(&[])?;
            assert!(from_nothing.is_empty());
            // a kernel launched over it with n = 0 runs and touches nothing
            write_ids(iris, &empty, 0, LaunchConfig::for_elements(0, 64))?;

            // symmetric memory: a valid empty buffer with a real base and table
            let before = iris.symmetric::<u8>(iris.heap_bytes())?;
            drop(before);
            let sym = iris.symmetric::<f32>(0)?;
            assert!(sym.is_empty());
            assert_eq!(sym.bytes(), 0);
            assert_eq!(sym.map().bytes(), HEAP_ALIGN, "one granule");
            assert_ne!(sym.map().base(), 0);
            assert_eq!(sym.to_vec()?, Vec::<f32>::new());
            sym.copy_from_slice(&[])?;
            let sym_from_nothing = iris.symmetric_from_slice::<u64>(&[])?;
            assert!(sym_from_nothing.is_empty());
            // an all-gather of nothing
            all_gather(iris, &from_nothing, &sym, 0)?;
            iris.synchronize()?;
            // host copies still check lengths against the empty buffer
            let err = sym.copy_from_slice(&[1.0]).unwrap_err();
            assert_eq!(
                err.to_string(),
                "length mismatch in SymmetricBuffer::copy_from_slice: expected 0 elements, got 1"
            );
            sym.free()?;
            drop(sym_from_nothing);
            // both granules came back: the whole heap is one free range again
            let whole = iris.symmetric::<u8>(iris.heap_bytes())?;
            assert_eq!(whole.map().bytes(), iris.heap_bytes());
            Ok(())
        })
        .unwrap();
}

// ----- double free ------------------------------------------------------------------------

// At the API level a double free does not compile: `SymmetricBuffer::free(self)` consumes
// the buffer, and its `Drop` frees only a buffer that was not freed explicitly; `Buffer`
// frees in `Drop` alone. What can be called twice is the layer below: the heap allocator
// (offsets) and a provider's `free(&map)` (with a map cloned from a forgotten buffer).

#[test]
fn the_heap_allocator_refuses_a_double_free_and_stays_consistent() {
    let mut heap = HeapAllocator::new(16 * HEAP_ALIGN);
    let a = heap.alloc(100, 16).unwrap();
    let b = heap.alloc(3 * HEAP_ALIGN, 16).unwrap();
    heap.free(a).unwrap();
    let snapshot = (heap.free_bytes(), heap.live_ranges(), heap.free_ranges());
    assert_eq!(
        heap.free(a),
        Err(HeapError::InvalidFree {
            offset: a,
            reason: "the range is already free (double free)"
        })
    );
    // an offset inside a live range, and one beyond the heap
    assert_eq!(
        heap.free(b + HEAP_ALIGN),
        Err(HeapError::InvalidFree {
            offset: b + HEAP_ALIGN,
            reason: "no allocation starts at this offset"
        })
    );
    assert!(matches!(
        heap.free(1 << 40),
        Err(HeapError::InvalidFree { .. })
    ));
    assert_eq!(
        (heap.free_bytes(), heap.live_ranges(), heap.free_ranges()),
        snapshot,
        "a refused free changes nothing"
    );
    heap.free(b).unwrap();
    assert_eq!(heap.free_bytes(), heap.size());
    assert_eq!(heap.free_ranges(), 1);
    assert_eq!(
        heap.free(b),
        Err(HeapError::InvalidFree {
            offset: b,
            reason: "the range is already free (double free)"
        })
    );
    // and a bad alignment is an error, not a panic
    assert_eq!(heap.alloc(8, 3), Err(HeapError::BadAlignment(3)));
}

#[test]
fn a_provider_refuses_a_double_free_of_a_map() {
    for kind in [ProviderKind::Heap, ProviderKind::Ipc] {
        world(2)
            .run(|iris| {
                let buf = iris.symmetric_with::<u32>(kind, 64)?;
                let map = buf.map().clone();
                std::mem::forget(buf);
                iris.provider(kind).free(&map)?;
                let err = iris.provider(kind).free(&map).unwrap_err();
                assert!(matches!(err, Error::InvalidFree { .. }), "{kind:?}: {err}");
                let msg = err.to_string();
                assert!(msg.contains("double free"), "{kind:?}: {msg}");
                assert!(
                    msg.contains(&format!("on rank {}", iris.rank())),
                    "{kind:?}: {msg}"
                );
                // the provider still works
                let again = iris.symmetric_with::<u32>(kind, 64)?;
                again.free()
            })
            .unwrap_or_else(|e| panic!("{kind:?}: {e}"));
    }
}

// ----- heap exhaustion and reuse ----------------------------------------------------------

/// Fills the heap, checks the exhaustion message, frees every other range and checks the
/// fragmented message, then runs 100,000 allocation/free cycles through the public API and
/// checks that the free bytes the heap reports always equal its size less what is live,
/// and that at the end the heap is one free range again.
#[test]
fn an_exhausted_heap_is_reused_without_leaks_over_100_000_cycles() {
    const HEAP: usize = 64 * HEAP_ALIGN; // 16 KiB
    const CYCLES: usize = 100_000;
    let start = Instant::now();
    World::threads(1)
        .backend(BackendKind::Cpu)
        .heap_bytes(HEAP)
        .run(|iris| {
            assert_eq!(iris.heap_bytes(), HEAP);
            // fill it
            let mut live = Vec::new();
            let err = loop {
                match iris.symmetric::<u8>(HEAP_ALIGN) {
                    Ok(b) => live.push(b),
                    Err(e) => break e,
                }
            };
            assert_eq!(live.len(), HEAP / HEAP_ALIGN);
            assert_eq!(
                err.to_string(),
                format!("symmetric heap of rank 0 is exhausted: 256 bytes requested, 0 of {HEAP} bytes free, largest free range 0 bytes")
            );
            // free every other range: half the heap is free, but in 256-byte pieces
            let mut kept = Vec::new();
            for (i, b) in live.drain(..).enumerate() {
                if i % 2 == 0 {
                    b.free()?;
                } else {
                    kept.push(b);
                }
            }
            let err = iris.symmetric::<u8>(2 * HEAP_ALIGN).unwrap_err();
            assert_eq!(
                err.to_string(),
                format!("symmetric heap of rank 0 is exhausted: 512 bytes requested, {} of {HEAP} bytes free, largest free range 256 bytes", HEAP / 2)
            );
            // the freed pieces are reused
            let reuse: Vec<_> = (0..HEAP / HEAP_ALIGN / 2)
                .map(|_| iris.symmetric::<u8>(HEAP_ALIGN))
                .collect::<Result<_>>()?;
            assert!(matches!(
                iris.symmetric::<u8>(1),
                Err(Error::HeapExhausted { .. })
            ));
            drop(reuse);
            drop(kept);
            let whole = iris.symmetric::<u8>(HEAP)?;
            whole.free()?;

            // cycles: random sizes, up to 24 live (often more than fits), random order of frees
            let mut state = 0x9e37_79b9_7f4a_7c15u64;
            let mut next = move || {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state
            };
            let mut live: Vec<(SymmetricBuffer<'_, u8>, usize)> = Vec::new();
            let mut live_bytes = 0usize;
            let (mut allocs, mut exhausted) = (0usize, 0usize);
            for _ in 0..CYCLES {
                if live.len() < 24 && (live.is_empty() || next() % 2 == 0) {
                    let len = (next() % (4 * HEAP_ALIGN as u64)) as usize; // 0..1024 bytes
                    let granules = len.max(1).div_ceil(HEAP_ALIGN) * HEAP_ALIGN;
                    match iris.symmetric::<u8>(len) {
                        Ok(b) => {
                            assert_eq!(b.map().bytes(), granules);
                            live_bytes += granules;
                            live.push((b, granules));
                            allocs += 1;
                        }
                        Err(Error::HeapExhausted {
                            requested,
                            free,
                            largest,
                            heap,
                            ..
                        }) => {
                            // a genuine exhaustion, with exact accounting
                            assert_eq!(heap, HEAP);
                            assert_eq!(requested, granules);
                            assert_eq!(free, HEAP - live_bytes, "free bytes leak");
                            assert!(largest < requested, "{largest} >= {requested}");
                            exhausted += 1;
                        }
                        Err(other) => return Err(other),
                    }
                } else {
                    let i = (next() % live.len() as u64) as usize;
                    let (b, granules) = live.swap_remove(i);
                    b.free()?;
                    live_bytes -= granules;
                }
            }
            drop(live);
            let whole = iris.symmetric::<u8>(HEAP)?;
            assert_eq!(whole.map().bytes(), HEAP, "the heap coalesced into one range");
            eprintln!(
                "{CYCLES} cycles: {allocs} allocations, {exhausted} exhausted, in {:.2?}",
                start.elapsed()
            );
            assert!(allocs > CYCLES / 3 && exhausted > 100, "{allocs} {exhausted}");
            Ok(())
        })
        .unwrap();
}

// ----- code objects -----------------------------------------------------------------------

fn unit_with(id: &'static str, objects: Vec<CodeObject>) -> &'static KernelUnit {
    Box::leak(Box::new(KernelUnit {
        id,
        kernels: Box::leak(specs().into_boxed_slice()),
        left_out: &[],
        code_objects: Box::leak(objects.into_boxed_slice()),
    }))
}

fn launch_unit(unit: &'static KernelUnit) -> Error {
    world(1)
        .run(|iris| {
            let out = iris.zeros::<u32>(16)?;
            let mut args = iris.args(unit, WRITE_IDS);
            args.pointer(&out)?;
            args.value(16u64);
            iris.launch((1, 16).into(), args)
        })
        .unwrap_err()
}

#[test]
fn code_objects_the_device_cannot_use_are_errors_naming_the_unit() {
    // compiled for nothing at all
    let err = launch_unit(unit_with("misuse::nothing", vec![]));
    let msg = err.to_string();
    assert!(
        msg.contains(&format!(
            "kernel unit `misuse::nothing` has no code object for Cpu target `{HOST_TRIPLE}`; it was compiled for: no target"
        )),
        "{msg}"
    );
    // a CPU object for another host
    let err = launch_unit(unit_with(
        "misuse::other_host",
        vec![CodeObject {
            target: "riscv64gc-unknown-linux-gnu",
            kind: TargetKind::Cpu,
            bytes: b"\x7fELF",
        }],
    ));
    assert!(
        err.to_string()
            .contains("it was compiled for: riscv64gc-unknown-linux-gnu"),
        "{err}"
    );
    // the right target, but bytes that are no shared object: a load error, not a crash
    let err = launch_unit(unit_with(
        "misuse::garbage",
        vec![CodeObject {
            target: HOST_TRIPLE,
            kind: TargetKind::Cpu,
            bytes: b"this is not an ELF file",
        }],
    ));
    let msg = err.to_string();
    assert!(
        msg.contains(&format!(
            "loading kernel unit `misuse::garbage` (target `{HOST_TRIPLE}`) failed"
        )),
        "{msg}"
    );
}

// ----- peers outside the world ------------------------------------------------------------

// A peer index is a plain `u32` value argument: the host cannot tell it from any other
// integer, so it cannot check peers at launch. On the host side, translation refuses them.
#[test]
fn peer_indices_outside_the_world_are_not_translated() {
    world(2)
        .run(|iris| {
            let buf = iris.symmetric::<u32>(16)?;
            let map = buf.map();
            assert!(map.translate(map.base(), 1).is_some());
            assert_eq!(map.translate(map.base(), 2), None);
            assert_eq!(map.translate(map.base(), usize::MAX), None);
            assert_eq!(buf.peer_addr(2), None);
            assert_eq!(map.peer_base(7), None);
            // an address outside the allocation is not translated either
            assert_eq!(map.translate(map.base() + map.bytes() as u64, 0), None);
            Ok(())
        })
        .unwrap();
}

// ----- environment ------------------------------------------------------------------------

const ROLE: &str = "IRIS_TEST_ROLE";

/// The entry point of the spawned processes; does nothing in a normal test run.
#[test]
fn child() {
    let Ok(role) = std::env::var(ROLE) else {
        return;
    };
    let result = match role.as_str() {
        // what a program that does not choose a backend gets
        "default-world" => World::threads(1)
            .heap_bytes(1 << 16)
            .run(|iris| Ok(iris.backend_kind().name()))
            .map(|v| v.join("")),
        other => Err(Error::InvalidConfig(format!("unknown role {other}"))),
    };
    match result {
        Ok(message) => {
            println!("\nROLE-OK {message}");
            std::process::exit(0);
        }
        Err(err) => {
            eprintln!("ROLE-ERROR {err}");
            std::process::exit(1);
        }
    }
}

/// Runs the `default-world` role with `vars` set (and every launcher variable removed).
fn default_world_with(vars: &[(&str, &str)]) -> (bool, String) {
    let exe = std::env::current_exe().expect("current_exe");
    let mut command = Command::new(exe);
    command
        .args(["child", "--exact", "--nocapture", "--test-threads=1"])
        .env(ROLE, "default-world")
        .env_remove("IRIS_BACKEND")
        .env_remove("IRIS_TIMEOUT")
        .stdin(Stdio::null());
    for var in [
        "RANK",
        "WORLD_SIZE",
        "OMPI_COMM_WORLD_RANK",
        "SLURM_PROCID",
        "IRIS_RANK",
        "IRIS_WORLD_SIZE",
        "IRIS_JOB_ID",
    ] {
        command.env_remove(var);
    }
    command.envs(vars.iter().copied());
    let out = command.output().expect("spawn the child");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

#[test]
fn iris_backend_naming_an_unknown_or_missing_backend() {
    // unknown: an error listing the known names, before anything is opened
    let (ok, text) = default_world_with(&[("IRIS_BACKEND", "opencl")]);
    assert!(!ok, "{text}");
    assert!(
        text.contains("ROLE-ERROR unknown backend `opencl`; known: cuda, hip, cpu"),
        "{text}"
    );
    // names are case-insensitive and trimmed
    let (ok, text) = default_world_with(&[("IRIS_BACKEND", " CPU ")]);
    assert!(ok && text.contains("ROLE-OK cpu"), "{text}");
    // a GPU backend asked for by name: it runs there, or says why it cannot; it never
    // falls back to another backend silently
    for gpu in ["cuda", "hip"] {
        let (ok, text) = default_world_with(&[("IRIS_BACKEND", gpu)]);
        if ok {
            assert!(text.contains(&format!("ROLE-OK {gpu}")), "{text}");
        } else {
            assert!(
                text.contains(&format!("ROLE-ERROR the {gpu} backend is unavailable: ")),
                "{text}"
            );
        }
    }
    // empty: the first backend present (the CPU at the latest)
    let (ok, text) = default_world_with(&[("IRIS_BACKEND", "")]);
    assert!(ok && text.contains("ROLE-OK "), "{text}");
}

#[test]
fn iris_timeout_holding_a_bad_value() {
    for (value, reason) in [
        ("abc", "expected a number of seconds"),
        ("0", "the timeout must be positive"),
        ("-3", "the timeout must be positive"),
    ] {
        let (ok, text) = default_world_with(&[("IRIS_BACKEND", "cpu"), ("IRIS_TIMEOUT", value)]);
        assert!(!ok, "{text}");
        assert!(
            text.contains(&format!(
                "ROLE-ERROR IRIS_TIMEOUT={value:?} is invalid: {reason}"
            )),
            "{value}: {text}"
        );
    }
    let (ok, text) = default_world_with(&[("IRIS_BACKEND", "cpu"), ("IRIS_TIMEOUT", "2.5")]);
    assert!(ok, "{text}");
}
