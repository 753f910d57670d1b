//! Host cost of a typed launch on the CPU backend, where no GPU is needed: building the
//! arguments alone, the whole typed launch (`KernelArgs` + `Iris::launch`), and a direct
//! `Device::launch` of the same kernel with the same slots on a device of the same backend.
//! The typed launch's cost over the direct one is what the runtime adds (validation, module
//! lookup, slot pointers); the GPU counterpart, against a raw `cuLaunchKernel`, is in
//! `tests/cuda_world.rs`.
//!
//! Run: `cargo bench -p iris-host --bench launch`.

#[path = "../tests/common/mod.rs"]
mod common;

use std::ffi::c_void;
use std::time::{Duration, Instant};

use iris_host::driver::{self as backend, BackendKind, LaunchDims};
use iris_host::{AsDevicePtr, Iris, KernelArgs, LaunchConfig, Result, SymmetricBuffer, World};

const BATCH: usize = 200;
const ROUNDS: usize = 50;

/// The typed launcher the kernel macro generates for `all_gather`.
fn args<'a>(
    iris: &'a Iris,
    input: &impl AsDevicePtr<f32>,
    out: &SymmetricBuffer<'_, f32>,
    n: u64,
) -> Result<KernelArgs<'a>> {
    let mut args = iris.args(common::unit(), common::ALL_GATHER);
    args.pointer(input)?;
    args.symmetric(out)?;
    args.value(n);
    args.value(0u32);
    args.value(1u32);
    Ok(args)
}

fn median_us(samples: &mut [Duration]) -> f64 {
    samples.sort_unstable();
    samples[samples.len() / 2].as_secs_f64() * 1e6
}

/// Times `f` `BATCH * ROUNDS` times, one call per sample, calling `sync` after each batch.
fn time(
    mut f: impl FnMut() -> Result<()>,
    mut sync: impl FnMut() -> Result<()>,
) -> Result<Vec<Duration>> {
    let mut samples = Vec::with_capacity(BATCH * ROUNDS);
    for round in 0..ROUNDS + 2 {
        for _ in 0..BATCH {
            let t = Instant::now();
            f()?;
            if round >= 2 {
                samples.push(t.elapsed());
            }
        }
        sync()?;
    }
    Ok(samples)
}

fn main() -> Result<()> {
    let n = 32u64;
    let results = World::threads(1)
        .backend(BackendKind::Cpu)
        .heap_bytes(1 << 20)
        .run(|iris| {
            let input = iris.from_slice(&[1.0f32; 32])?;
            let out = iris.symmetric_zeros::<f32>(32)?;
            let config = LaunchConfig::linear(1, 1);

            let mut empty = time(|| Ok(()), || Ok(()))?;
            let mut build = time(|| args(iris, &input, &out, n).map(drop), || Ok(()))?;
            let mut typed = time(
                || iris.launch(config, args(iris, &input, &out, n)?),
                || iris.synchronize(),
            )?;

            // The same kernel and slots through the device directly.
            let device = backend::open(BackendKind::Cpu)?.device(0)?;
            let stream = device.create_stream()?;
            let module = device.load_module(common::unit())?;
            let direct_out = iris.symmetric_zeros::<f32>(32)?;
            let map = direct_out.map();
            let mut words = [
                input.addr(),
                map.base(),
                map.base(),
                map.table(),
                n,
                0u64,
                1u64,
            ];
            let mut slots: Vec<*mut c_void> =
                words.iter_mut().map(|w| (w as *mut u64).cast()).collect();
            let dims = LaunchDims {
                grid: [1, 1, 1],
                block: [1, 1, 1],
                dynamic_shared_bytes: 0,
            };
            let mut direct = time(
                // SAFETY: the slots match the kernel's parameters and point at live memory
                // that outlives the stream's work (synchronized after every batch).
                || unsafe {
                    device.launch(&*stream, &*module, common::ALL_GATHER, dims, &mut slots)
                },
                || stream.synchronize(Duration::from_secs(60)),
            )?;
            Ok([
                median_us(&mut empty),
                median_us(&mut build),
                median_us(&mut typed),
                median_us(&mut direct),
            ])
        })?;
    let [empty, build, typed, direct] = results[0];
    println!(
        "CPU backend, host time per call, median of {} calls (all_gather: 7 slots):",
        BATCH * ROUNDS
    );
    println!("  nothing (the clock's cost)  {empty:.3} us");
    println!("  KernelArgs built alone      {build:.3} us");
    println!("  typed launch                {typed:.3} us");
    println!("  Device::launch              {direct:.3} us");
    println!("  typed over direct           {:+.3} us", typed - direct);
    Ok(())
}
