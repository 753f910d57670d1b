//! Misuse is an error with context, never a panic or a hang.

mod common;

use std::time::{Duration, Instant};

use common::*;
use iris_host::driver::{self as backend, BackendKind};
use iris_host::symmetric::{PeerMask, SymmetricAddressMap};
use iris_host::{DevicePtr, Error, Iris, KernelArgs, LaunchConfig, Result, World};

fn world(ranks: usize) -> World {
    World::threads(ranks)
        .backend(BackendKind::Cpu)
        .heap_bytes(1 << 20)
}

fn write_ids_args<'a>(
    iris: &'a Iris,
    out: &impl iris_host::AsDevicePtr<u32>,
    n: u64,
) -> Result<KernelArgs<'a>> {
    let mut args = iris.args(unit(), WRITE_IDS);
    args.pointer(out)?;
    args.value(n);
    Ok(args)
}

#[test]
fn a_table_whose_length_differs_from_the_world_size() {
    let err = SymmetricAddressMap::new(
        0,
        4,
        0x1000,
        64,
        vec![0x1000, 0x2000],
        0x10,
        PeerMask::all(4),
    )
    .unwrap_err();
    assert!(matches!(err, Error::InvalidAddressMap(_)));
    assert!(
        err.to_string()
            .contains("2 entries but the world has 4 ranks"),
        "{err}"
    );
}

#[test]
fn a_buffer_from_another_context() {
    world(1)
        .run(|outer| {
            let theirs = outer.zeros::<u32>(16)?;
            let symmetric = outer.symmetric::<f32>(16)?;
            world(1).run(|inner| {
                assert_ne!(inner.id(), outer.id());
                let err = write_ids_args(inner, &theirs, 16).unwrap_err();
                assert!(matches!(err, Error::ForeignBuffer { .. }), "{err}");
                assert!(
                    err.to_string()
                        .contains("launching with a buffer from another context"),
                    "{err}"
                );
                let mut args = inner.args(unit(), ALL_GATHER);
                let err = args.symmetric(&symmetric).unwrap_err();
                assert!(
                    matches!(
                        err,
                        Error::ForeignBuffer {
                            what: "symmetric buffer",
                            ..
                        }
                    ),
                    "{err}"
                );
                let err = write_ids_args(inner, &theirs.device_ptr(), 16).unwrap_err();
                assert!(
                    matches!(
                        err,
                        Error::ForeignBuffer {
                            what: "device pointer",
                            ..
                        }
                    ),
                    "{err}"
                );
                // arguments checked with one context cannot be launched on another
                let args = write_ids_args(outer, &theirs, 16)?;
                let err = inner.launch((1, 16).into(), args).unwrap_err();
                assert!(matches!(err, Error::InvalidArguments { .. }), "{err}");
                Ok(())
            })?;
            Ok(())
        })
        .unwrap();
}

#[test]
fn a_unit_without_a_code_object_for_the_device() {
    let unit = gpu_only_unit();
    let err = world(1)
        .run(|iris| {
            let out = iris.zeros::<u32>(16)?;
            let mut args = iris.args(unit, WRITE_IDS);
            args.pointer(&out)?;
            args.value(16u64);
            iris.launch((1, 16).into(), args)
        })
        .unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("rank 0 failed"), "{msg}");
    assert!(msg.contains("iris_host_tests::gpu_only"), "{msg}");
    assert!(msg.contains("compiled for: gfx942, sm_90"), "{msg}");
    match err {
        Error::RankFailed { source, .. } => match *source {
            Error::NoCodeObject {
                available,
                device_target,
                ..
            } => {
                assert_eq!(available, vec!["gfx942", "sm_90"]);
                assert_eq!(device_target, iris_host::driver::cpu::HOST_TRIPLE);
            }
            other => panic!("{other}"),
        },
        other => panic!("{other}"),
    }
}

#[test]
fn invalid_launch_configurations() {
    world(1)
        .run(|iris| {
            let out = iris.zeros::<u32>(64)?;
            let launch =
                |config: LaunchConfig| iris.launch(config, write_ids_args(iris, &out, 32).unwrap());
            let config_error = |config: LaunchConfig, needle: &str| {
                let err = launch(config).unwrap_err();
                assert!(matches!(err, Error::InvalidLaunchConfig { .. }), "{err}");
                assert!(err.to_string().contains(needle), "{err}");
            };
            config_error(
                LaunchConfig::new([0, 1, 1], [32, 1, 1]),
                "grid dimension x is 0",
            );
            config_error(
                LaunchConfig::new([1, 1, 1], [32, 0, 1]),
                "block dimension y is 0",
            );
            config_error(
                LaunchConfig::new([1, 1, 1], [2048, 1, 1]),
                "device allows at most 1024",
            );
            config_error(
                LaunchConfig::new([1, 1, 1], [32, 32, 2]),
                "2048 threads per block",
            );
            config_error(
                LaunchConfig::new([1, 1 << 20, 1], [1, 1, 1]),
                "grid dimension y",
            );
            // over the kernel's own limit (values is built for 256 threads)
            let f = iris.zeros::<f64>(1)?;
            let mut args = iris.args(unit(), VALUES);
            args.pointer(&f)?;
            args.value(1u8);
            args.value(1u16);
            args.value(iris_device::prelude::f32x4::splat(0.0));
            args.value(1.0f64);
            let err = iris.launch((1, 512).into(), args).unwrap_err();
            assert!(
                err.to_string().contains("kernel was built for at most 256"),
                "{err}"
            );
            launch(LaunchConfig::new([1, 1, 1], [32, 1, 1]))?;
            Ok(())
        })
        .unwrap();
}

#[test]
fn arguments_that_do_not_match_the_parameters() {
    world(1)
        .run(|iris| {
            let out = iris.zeros::<u32>(64)?;
            let expect = |args: KernelArgs<'_>, needle: &str| {
                let err = iris.launch((1, 32).into(), args).unwrap_err();
                assert!(matches!(err, Error::InvalidArguments { .. }), "{err}");
                assert!(err.to_string().contains(needle), "{err}");
            };
            // too few
            let mut args = iris.args(unit(), WRITE_IDS);
            args.pointer(&out)?;
            expect(args, "1 argument slot(s) bound");
            // wrong value size
            let mut args = iris.args(unit(), WRITE_IDS);
            args.pointer(&out)?;
            args.value(32u32);
            expect(
                args,
                "parameter 1 `n: u64` takes a value of 8 bytes (align 8), got `u32` of 4 bytes",
            );
            // a value where a pointer goes
            let mut args = iris.args(unit(), WRITE_IDS);
            args.value(0u64);
            args.value(32u64);
            expect(
                args,
                "parameter 0 `out: *mut u32` takes a device pointer, got a value",
            );
            // arguments name their kernel: empty ones for another kernel are its
            // arguments, checked against its parameters
            let args = iris.args(unit(), VALUES);
            expect(args, "kernel `values`: 0 argument slot(s) bound");
            // no such kernel
            let err = iris
                .launch((1, 1).into(), iris.args(unit(), 99))
                .unwrap_err();
            assert!(
                matches!(
                    err,
                    Error::NoSuchKernel {
                        index: 99,
                        count,
                        ..
                    } if count == unit().kernels.len()
                ),
                "{err}"
            );
            // raw device pointers are accepted unchecked
            // SAFETY: `out` is a live allocation of this context.
            let raw = unsafe { DevicePtr::<u32>::from_raw(out.addr()) };
            let args = write_ids_args(iris, &raw, 32)?;
            iris.launch((1, 32).into(), args)?;
            Ok(())
        })
        .unwrap();
}

#[test]
fn a_panicking_rank_is_named_and_wakes_the_others() {
    let started = Instant::now();
    let err = world(4)
        .timeout(Duration::from_secs(60))
        .run(|iris| {
            if iris.rank() == 2 {
                panic!("rank two gives up");
            }
            iris.barrier()?;
            iris.symmetric::<u8>(10).map(drop)
        })
        .unwrap_err();
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "ranks waited for the timeout"
    );
    match &err {
        Error::RankPanicked { rank, message } => {
            assert_eq!(*rank, 2);
            assert!(message.contains("rank two gives up"));
        }
        other => panic!("{other}"),
    }
}

#[test]
fn a_failing_rank_is_named_and_others_wake_with_an_error() {
    let results = std::sync::Mutex::new(Vec::new());
    let err = world(3)
        .run(|iris| {
            if iris.rank() == 1 {
                return Err(Error::InvalidConfig("rank one's own failure".into()));
            }
            let r = iris.barrier();
            results
                .lock()
                .unwrap()
                .push((iris.rank(), r.as_ref().map_err(|e| e.to_string()).err()));
            r
        })
        .unwrap_err();
    assert!(matches!(&err, Error::RankFailed { rank: 1, .. }), "{err}");
    assert!(err.to_string().contains("rank one's own failure"), "{err}");
    for (rank, msg) in results.into_inner().unwrap() {
        let msg = msg.expect("the barrier must fail");
        assert!(msg.contains("rank 1"), "rank {rank}: {msg}");
    }
}

#[test]
fn a_rank_that_never_arrives_times_out_by_name() {
    let err = world(3)
        .timeout(Duration::from_millis(300))
        .run(|iris| {
            if iris.rank() == 2 {
                std::thread::sleep(Duration::from_millis(1500));
                return Ok(());
            }
            iris.barrier()
        })
        .unwrap_err();
    let msg = err.to_string();
    assert!(matches!(&err, Error::RankFailed { .. }), "{msg}");
    assert!(msg.contains("timed out"), "{msg}");
    assert!(msg.contains("rank(s) 2 did not arrive"), "{msg}");
}

#[test]
fn a_kernel_that_never_finishes_times_out() {
    let err = world(1)
        .timeout(Duration::from_millis(300))
        .run(|iris| {
            let flag = iris.zeros::<u32>(1)?;
            let mut args = iris.args(unit(), SPIN);
            args.pointer(&flag)?;
            iris.launch((1, 1).into(), args)?;
            let err = iris.synchronize().unwrap_err();
            assert!(matches!(err, Error::Timeout { rank: Some(0), .. }), "{err}");
            // release the kernel by writing the flag behind the stream's back
            // SAFETY: the CPU backend's device memory is host memory; the flag is a live, aligned u32.
            unsafe { std::sync::atomic::AtomicU32::from_ptr(flag.addr() as *mut u32) }
                .store(1, std::sync::atomic::Ordering::Release);
            iris.synchronize()?;
            Err::<(), _>(err)
        })
        .unwrap_err();
    assert!(err.to_string().contains("timed out"), "{err}");
}

#[test]
fn backend_selection_errors() {
    let err = BackendKind::from_name("opencl").unwrap_err();
    assert!(
        err.to_string().contains("unknown backend `opencl`"),
        "{err}"
    );
    assert_eq!(BackendKind::from_name(" CPU ").unwrap(), BackendKind::Cpu);
    for kind in [BackendKind::Cuda, BackendKind::Hip] {
        if let Err(err) = backend::open(kind) {
            assert!(matches!(err, Error::BackendUnavailable { .. }), "{err}");
            assert!(err.to_string().contains(kind.name()), "{err}");
        }
    }
    let err = World::threads(0)
        .backend(BackendKind::Cpu)
        .run(|_| Ok(()))
        .unwrap_err();
    assert!(matches!(err, Error::InvalidConfig(_)), "{err}");
}

#[test]
fn host_copies_check_lengths() {
    world(1)
        .run(|iris| {
            let buf = iris.zeros::<u16>(8)?;
            let err = buf.copy_from_slice(&[1, 2, 3]).unwrap_err();
            assert!(
                matches!(
                    err,
                    Error::LengthMismatch {
                        expected: 8,
                        got: 3,
                        ..
                    }
                ),
                "{err}"
            );
            let mut out = [0u16; 9];
            assert!(buf.copy_to_slice(&mut out).is_err());
            let empty = iris.zeros::<u16>(0)?;
            assert!(empty.is_empty());
            assert_eq!(empty.to_vec()?, Vec::<u16>::new());
            let err = iris.zeros::<u64>(usize::MAX).unwrap_err();
            assert!(matches!(err, Error::SizeOverflow { .. }), "{err}");
            Ok(())
        })
        .unwrap();
}
