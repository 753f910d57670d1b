//! The CPU backend loads real code objects (built from C here) and runs their kernels.

mod common;

use std::sync::Arc;

use common::*;
use iris_device::prelude::f32x4;
use iris_host::driver::{self as backend, BackendKind};
use iris_host::module::ModuleCache;
use iris_host::{AsDevicePtr, Iris, LaunchConfig, Result, World};

fn world(ranks: usize) -> World {
    World::threads(ranks)
        .backend(BackendKind::Cpu)
        .heap_bytes(1 << 20)
}

fn write_ids(
    iris: &Iris,
    config: impl Into<LaunchConfig>,
    out: &impl AsDevicePtr<u32>,
    n: u64,
) -> Result<()> {
    let mut args = iris.args(unit(), WRITE_IDS);
    args.pointer(out)?;
    args.value(n);
    iris.launch(config.into(), args)
}

fn block_reverse(
    iris: &Iris,
    config: impl Into<LaunchConfig>,
    input: &impl AsDevicePtr<u32>,
    out: &impl AsDevicePtr<u32>,
    dirty: &impl AsDevicePtr<u32>,
    active: u32,
) -> Result<()> {
    let mut args = iris.args(unit(), BLOCK_REVERSE);
    args.pointer(input)?;
    args.pointer(out)?;
    args.pointer(dirty)?;
    args.value(active);
    iris.launch(config.into(), args)
}

#[test]
fn every_gpu_thread_runs_once_with_its_ids() {
    world(1)
        .run(|iris| {
            let grid = [3u32, 2, 2];
            let block = [4u32, 2, 3];
            let total = 12 * 24;
            let out = iris.full::<u32>(2 * total + 2, u32::MAX)?;
            write_ids(iris, LaunchConfig::new(grid, block), &out, total as u64)?;
            let got = out.to_vec()?;
            for g in 0..total {
                assert_eq!(got[2 * g] as usize, g / 24, "block of thread {g}");
                assert_eq!(got[2 * g + 1] as usize, g % 24, "thread of thread {g}");
            }
            assert_eq!(&got[2 * total..], &[u32::MAX, u32::MAX], "nothing past n");

            // A 1-D launch from a (grid, block) pair, many blocks.
            let n = 100_000u64;
            let out = iris.zeros::<u32>(2 * n as usize)?;
            write_ids(iris, (n.div_ceil(128) as u32, 128), &out, n)?;
            let got = out.to_vec()?;
            assert!((0..n as usize)
                .all(|g| got[2 * g] as usize == g / 128 && got[2 * g + 1] as usize == g % 128));
            Ok(())
        })
        .unwrap();
}

#[test]
fn block_barrier_and_shared_memory() {
    world(1)
        .run(|iris| {
            for (blocks, threads, active) in [
                (1u32, 1u32, 1u32),
                (5, 64, 64),
                (3, 256, 200),
                (2, 1024, 1024),
            ] {
                let n = (blocks * active) as usize;
                let input: Vec<u32> = (0..n as u32).map(|i| i * 7 + 1).collect();
                let input = iris.from_slice(&input)?;
                let out = iris.zeros::<u32>(n)?;
                let dirty = iris.zeros::<u32>(blocks as usize)?;
                block_reverse(iris, (blocks, threads), &input, &out, &dirty, active)?;
                let got = out.to_vec()?;
                for b in 0..blocks as usize {
                    for t in 0..active as usize {
                        let src = b * active as usize + (active as usize - 1 - t);
                        assert_eq!(got[b * active as usize + t], src as u32 * 7 + 1);
                    }
                }
                assert!(
                    dirty.to_vec()?.iter().all(|&d| d == 0),
                    "shared memory starts zeroed in every block"
                );
            }
            Ok(())
        })
        .unwrap();
}

#[test]
fn value_arguments_of_every_size() {
    world(1)
        .run(|iris| {
            let out = iris.zeros::<f64>(1)?;
            let mut args = iris.args(unit(), VALUES);
            args.pointer(&out)?;
            args.value(3u8);
            args.value(500u16);
            args.value(f32x4::new([0.5, 1.5, 2.0, 4.0]));
            args.value(0.25f64);
            iris.launch((1, 1).into(), args)?;
            assert_eq!(out.to_vec()?, vec![3.0 + 500.0 + 8.0 + 0.25]);
            Ok(())
        })
        .unwrap();
}

#[test]
fn launches_are_ordered_and_timed_by_events() {
    world(1)
        .run(|iris| {
            let n = 1 << 16;
            let out = iris.zeros::<u32>(2 * n)?;
            let start = iris.record_event()?;
            for _ in 0..4 {
                write_ids(
                    iris,
                    LaunchConfig::for_elements(n as u64, 256),
                    &out,
                    n as u64,
                )?;
            }
            let end = iris.record_event()?;
            let ms = start.elapsed_ms(&end)?;
            assert!(ms >= 0.0, "{ms}");
            iris.synchronize()?;
            assert_eq!(out.to_vec()?[2 * (n - 1) + 1], 255);
            // host copies wait for queued work: a copy right after a launch sees its result
            let out2 = iris.zeros::<u32>(2 * n)?;
            write_ids(
                iris,
                LaunchConfig::for_elements(n as u64, 64),
                &out2,
                n as u64,
            )?;
            assert_eq!(out2.to_vec()?[2 * (n - 1) + 1], 63);
            // device-side copy
            let copy = iris.zeros::<u32>(2 * n)?;
            copy.copy_from_buffer(&out2)?;
            assert_eq!(copy.to_vec()?, out2.to_vec()?);
            Ok(())
        })
        .unwrap();
}

#[test]
fn modules_load_once_per_unit_and_device() {
    let backend = backend::open(BackendKind::Cpu).unwrap();
    let device = backend.device(0).unwrap();
    let cache = ModuleCache::new();
    let a = cache.get_or_load(&*device, unit()).unwrap();
    let b = cache.get_or_load(&*device, unit()).unwrap();
    assert!(Arc::ptr_eq(&a, &b));
    assert_eq!(cache.len(), 1);
    assert_eq!(a.target(), iris_host::driver::cpu::HOST_TRIPLE);
    // the launch path borrows the same module from the lock-free table
    let borrowed = cache.get_or_load_ref(&*device, unit()).unwrap();
    assert!(std::ptr::addr_eq(&*borrowed, Arc::as_ptr(&a)));
    // concurrent first use still loads once
    let cache = ModuleCache::new();
    let modules: Vec<_> = std::thread::scope(|s| {
        let hs: Vec<_> = (0..8)
            .map(|_| s.spawn(|| cache.get_or_load(&*device, unit()).unwrap()))
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert!(modules.iter().all(|m| Arc::ptr_eq(m, &modules[0])));
    assert_eq!(cache.len(), 1);
}

#[test]
fn units_beyond_the_lock_free_table_still_load_once() {
    let backend = backend::open(BackendKind::Cpu).unwrap();
    let device = backend.device(0).unwrap();
    let cache = ModuleCache::new();
    // more units than the table publishes: the later ones are found through the map
    let units: Vec<&'static iris_device::abi::KernelUnit> =
        (0..40).map(|_| &*Box::leak(Box::new(*unit()))).collect();
    for round in 0..2 {
        for (i, &u) in units.iter().enumerate() {
            let shared = cache.get_or_load(&*device, u).unwrap();
            let borrowed = cache.get_or_load_ref(&*device, u).unwrap();
            assert!(
                std::ptr::addr_eq(&*borrowed, Arc::as_ptr(&shared)),
                "unit {i}, round {round}"
            );
            assert!(std::ptr::eq(borrowed.unit(), u));
        }
    }
    assert_eq!(cache.len(), units.len());
}

#[test]
fn ranks_sharing_the_cpu_launch_concurrently() {
    let sums = world(4)
        .run(|iris| {
            let n = 4096u64;
            let out = iris.zeros::<u32>(2 * n as usize)?;
            for _ in 0..10 {
                write_ids(iris, LaunchConfig::for_elements(n, 128), &out, n)?;
            }
            let got = out.to_vec()?;
            Ok(got.iter().map(|&v| v as u64).sum::<u64>() + iris.rank() as u64)
        })
        .unwrap();
    let base = sums[0];
    assert_eq!(sums, vec![base, base + 1, base + 2, base + 3]);
}

#[test]
fn direct_backend_use() {
    use iris_host::driver::{LaunchDims, MemoryKind};
    let backend = backend::open(BackendKind::Cpu).unwrap();
    assert_eq!(backend.kind(), BackendKind::Cpu);
    assert_eq!(backend.device_count(), 1);
    assert!(backend.device(1).is_err());
    assert!(backend.can_access_peer(0, 0).unwrap());
    let device = backend.device(0).unwrap();
    let info = device.info();
    assert_eq!(info.target, iris_host::driver::cpu::HOST_TRIPLE);
    assert!(info.max_threads_per_block >= 1024);
    let stream = device.create_stream().unwrap();
    let module = device.load_module(unit()).unwrap();
    let n = 1000u64;
    let out = device.alloc(8 * n as usize, MemoryKind::Device).unwrap();
    assert_eq!(out % 256, 0);
    let mut out_slot = out;
    let mut n_slot = n;
    let mut slots = [
        (&mut out_slot as *mut u64).cast::<core::ffi::c_void>(),
        (&mut n_slot as *mut u64).cast(),
    ];
    let dims = LaunchDims {
        grid: [8, 1, 1],
        block: [128, 1, 1],
        dynamic_shared_bytes: 0,
    };
    // SAFETY: a kernel of this module with matching argument slots; the memory they name stays live until the stream is synchronized.
    unsafe { device.launch(&*stream, &*module, WRITE_IDS, dims, &mut slots) }.unwrap();
    // the slots may be reused at once: the launch copied them
    n_slot = 0;
    let _ = n_slot;
    stream
        .synchronize(std::time::Duration::from_secs(10))
        .unwrap();
    let mut host = vec![0u8; 8 * n as usize];
    // SAFETY: the test's own live allocation, at least as long as the copy.
    unsafe { device.memcpy_dtoh(&*stream, &mut host, out) }.unwrap();
    let words: Vec<u32> = host
        .chunks(4)
        .map(|c| u32::from_ne_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(words[2 * 999], 7);
    assert_eq!(words[2 * 999 + 1], 999 % 128);
    // out-of-range copies are refused
    // SAFETY: the test's own allocation, not used afterwards (a second free is refused).
    assert!(unsafe { device.memcpy_dtoh(&*stream, &mut host, out + 8) }.is_err());
    // SAFETY: the test's own allocation, not used afterwards (a second free is refused).
    unsafe { device.free(out) }.unwrap();
    // SAFETY: the test's own allocation, not used afterwards (a second free is refused).
    assert!(unsafe { device.free(out) }.is_err());
}
