//! Ranks as threads on CUDA devices, through the whole runtime (World, symmetric heap,
//! KernelArgs, Iris::launch), with a hand-written PTX all-gather: every rank stores its
//! input into every peer's copy of a symmetric buffer by translate-then-store. Also the
//! host time of a typed launch against `Device::launch` and a raw `cuLaunchKernel` of the
//! same kernel with the same arguments. Without a CUDA driver every test prints why it is skipped
//! and passes, unless `IRIS_REQUIRE_GPU` is set, which makes that a failure.

use std::ffi::c_void;
use std::time::{Duration, Instant};

use cudarc::driver::sys;
use iris_device::abi::{CodeObject, KernelSpec, KernelUnit, ParamKind, ParamSpec, TargetKind};
use iris_host::driver::cuda::{self, CudaModule, CudaStream};
use iris_host::driver::{BackendKind, LaunchDims};
use iris_host::{AsDevicePtr, Error, Iris, LaunchConfig, Result, SymmetricBuffer, World};

/// `all_gather(input, out: Symmetric<f32>, n, me, world)`: for `i < n`, every peer's
/// `out[me * n + i] = input[i]`. Emitted by LLVM's NVPTX back end for sm_80.
const PTX: &str = concat!(
    r#"
.version 7.0
.target sm_80
.address_size 64

.visible .entry all_gather(
	.param .u64 .ptr .global .align 1 all_gather_param_0,
	.param .u64 .ptr .align 1 all_gather_param_1,
	.param .u64 .ptr .align 1 all_gather_param_2,
	.param .u64 .ptr .global .align 1 all_gather_param_3,
	.param .u64 all_gather_param_4,
	.param .u32 all_gather_param_5,
	.param .u32 all_gather_param_6
)
{
	.reg .pred 	%p<4>;
	.reg .b32 	%r<9>;
	.reg .b64 	%rd<16>;

	ld.param.b64 	%rd6, [all_gather_param_4];
	mov.u32 	%r4, %tid.x;
	mov.u32 	%r5, %ctaid.x;
	mov.u32 	%r6, %ntid.x;
	mad.lo.s32 	%r7, %r5, %r6, %r4;
	cvt.u64.u32 	%rd1, %r7;
	setp.ge.u64 	%p1, %rd1, %rd6;
	@%p1 bra 	$L__BB0_4;
	ld.param.b32 	%r3, [all_gather_param_6];
	setp.eq.b32 	%p2, %r3, 0;
	@%p2 bra 	$L__BB0_4;
	ld.param.b32 	%r2, [all_gather_param_5];
	ld.param.b64 	%rd15, [all_gather_param_3];
	ld.param.b64 	%rd5, [all_gather_param_2];
	ld.param.b64 	%rd4, [all_gather_param_1];
	ld.param.b64 	%rd3, [all_gather_param_0];
	shl.b64 	%rd7, %rd1, 2;
	add.s64 	%rd8, %rd3, %rd7;
	ld.global.b32 	%r1, [%rd8];
	cvt.u64.u32 	%rd9, %r2;
	mad.lo.s64 	%rd10, %rd9, %rd6, %rd1;
	shl.b64 	%rd11, %rd10, 2;
	add.s64 	%rd12, %rd4, %rd11;
	sub.s64 	%rd2, %rd12, %rd5;
	mov.b32 	%r8, 0;
$L__BB0_3:
	ld.global.nc.b64 	%rd13, [%rd15];
	add.s64 	%rd14, %rd13, %rd2;
	st.b32 	[%rd14], %r1;
	add.s32 	%r8, %r8, 1;
	add.s64 	%rd15, %rd15, 8;
	setp.lt.u32 	%p3, %r8, %r3;
	@%p3 bra 	$L__BB0_3;
$L__BB0_4:
	ret;
}
"#,
    "\0"
);

const fn value(name: &'static str, ty: &'static str, size: u32) -> ParamSpec {
    ParamSpec {
        name,
        ty,
        kind: ParamKind::Value { size, align: size },
    }
}

static UNIT: KernelUnit = KernelUnit {
    id: "cuda_world::all_gather",
    kernels: &[KernelSpec {
        name: "all_gather",
        params: &[
            ParamSpec {
                name: "input",
                ty: "*const f32",
                kind: ParamKind::Pointer,
            },
            ParamSpec {
                name: "out",
                ty: "Symmetric<f32>",
                kind: ParamKind::Symmetric,
            },
            value("n", "u64", 8),
            value("me", "u32", 4),
            value("world", "u32", 4),
        ],
        shared_bytes: 0,
        concurrent_threads: false,
        max_block_threads: 1024,
        peer_checks: false,
        signal_waits: false,
        spins: false,
        trace_events: false,
    }],
    left_out: &[],
    code_objects: &[CodeObject {
        target: "sm_80",
        kind: TargetKind::Nvptx,
        bytes: PTX.as_bytes(),
    }],
};

/// What the kernel macro generates as the typed launcher.
fn all_gather(
    iris: &Iris,
    config: LaunchConfig,
    input: &impl AsDevicePtr<f32>,
    out: &SymmetricBuffer<'_, f32>,
    n: u64,
    me: u32,
    world: u32,
) -> Result<()> {
    let mut args = iris.args(&UNIT, 0);
    args.pointer(input)?;
    args.symmetric(out)?;
    args.value(n);
    args.value(me);
    args.value(world);
    iris.launch(config, args)
}

fn cuda_present() -> bool {
    match cuda::open() {
        Ok(_) => true,
        Err(err) if std::env::var_os("IRIS_REQUIRE_GPU").is_some() => {
            panic!("IRIS_REQUIRE_GPU is set but the CUDA backend does not open: {err}")
        }
        Err(err) => {
            eprintln!("skipped: {err}");
            false
        }
    }
}

fn world(ranks: usize) -> World {
    World::threads(ranks)
        .backend(BackendKind::Cuda)
        .heap_bytes(64 << 20)
        .timeout(Duration::from_secs(60))
}

#[test]
fn all_gather_at_1_2_4_8_ranks() {
    if !cuda_present() {
        return;
    }
    for ranks in [1usize, 2, 4, 8] {
        let n = 100_003usize;
        let input = |r: usize| -> Vec<f32> { (0..n).map(|i| (r * n + i) as f32 * 0.5).collect() };
        let outputs = world(ranks)
            .run(|iris| {
                let me = iris.rank();
                let local = iris.from_slice(&input(me))?;
                let out = iris.symmetric_full::<f32>(ranks * n, -1.0)?;
                iris.barrier()?;
                let config = LaunchConfig::for_elements(n as u64, 256);
                all_gather(
                    iris,
                    config,
                    &local,
                    &out,
                    n as u64,
                    me as u32,
                    ranks as u32,
                )?;
                iris.barrier()?;
                Ok((iris.device_info().ordinal, out.to_vec()?))
            })
            .unwrap_or_else(|e| panic!("all-gather at {ranks} ranks: {e}"));
        let expected: Vec<f32> = (0..ranks).flat_map(input).collect();
        for (rank, (device, got)) in outputs.iter().enumerate() {
            assert!(
                got == &expected,
                "rank {rank} (device {device}) of {ranks}: wrong result"
            );
        }
        let devices: Vec<usize> = outputs.iter().map(|(d, _)| *d).collect();
        eprintln!("all-gather at {ranks} rank(s) on devices {devices:?}: ok");
    }
}

fn percentile_us(samples: &mut [Duration], p: f64) -> f64 {
    samples.sort_unstable();
    samples[((samples.len() - 1) as f64 * p).round() as usize].as_secs_f64() * 1e6
}

/// Host time per call of the same launch (the all-gather kernel, 7 slots, 1 block of 32
/// threads) three ways, in interleaved batches on one thread: the typed launcher
/// (`KernelArgs` built + `Iris::launch`), `Device::launch` with prepared slots, and a raw
/// `cuLaunchKernel` with prepared parameters.
#[test]
fn typed_launch_overhead() {
    if !cuda_present() {
        return;
    }
    let (batch, rounds) = (500, 20);
    let [mut typed, mut device, mut raw] = world(1)
        .run(|iris| {
            let n = 32u64;
            let local = iris.from_slice(&[1.0f32; 32])?;
            let out = iris.symmetric_zeros::<f32>(32)?;
            let config = LaunchConfig::linear(1, 32);

            // The same kernel on the same device (and primary context), outside the runtime.
            let dev = cuda::open()?.device(iris.device_info().ordinal)?;
            let stream = dev.create_stream()?;
            let module = dev.load_module(&UNIT)?;
            let function = module
                .as_any()
                .downcast_ref::<CudaModule>()
                .ok_or_else(|| Error::InvalidConfig("not a CUDA module".into()))?
                .function(0)?;
            let raw_stream = stream
                .as_any()
                .downcast_ref::<CudaStream>()
                .ok_or_else(|| Error::InvalidConfig("not a CUDA stream".into()))?
                .raw();
            let map = out.map();
            let mut words = [local.addr(), map.base(), map.base(), map.table(), n, 0, 1];
            let mut slots: Vec<*mut c_void> =
                words.iter_mut().map(|w| (w as *mut u64).cast()).collect();
            let dims = LaunchDims {
                grid: [1, 1, 1],
                block: [32, 1, 1],
                dynamic_shared_bytes: 0,
            };

            let mut samples: [Vec<Duration>; 3] = Default::default();
            for round in 0..rounds + 2 {
                for (which, times) in samples.iter_mut().enumerate() {
                    for _ in 0..batch {
                        let t = Instant::now();
                        match which {
                            0 => all_gather(iris, config, &local, &out, n, 0, 1)?,
                            // SAFETY: the slots match the kernel's parameters and point at
                            // memory that outlives the launches (synchronized below).
                            1 => unsafe { dev.launch(&*stream, &*module, 0, dims, &mut slots)? },
                            _ => {
                                // SAFETY: as above, with the function and stream of `dev`.
                                let r = unsafe {
                                    sys::cuLaunchKernel(
                                        function,
                                        1,
                                        1,
                                        1,
                                        32,
                                        1,
                                        1,
                                        0,
                                        raw_stream,
                                        slots.as_mut_ptr(),
                                        std::ptr::null_mut(),
                                    )
                                };
                                assert_eq!(r, sys::CUresult::CUDA_SUCCESS, "cuLaunchKernel");
                            }
                        }
                        if round >= 2 {
                            times.push(t.elapsed());
                        }
                    }
                    iris.synchronize()?;
                    stream.synchronize(Duration::from_secs(60))?;
                }
            }
            assert!(out.to_vec()?.iter().all(|&v| v == 1.0));
            Ok(samples)
        })
        .unwrap_or_else(|e| panic!("launches: {e}"))
        .remove(0);
    let count = typed.len();
    let (t50, t90) = (
        percentile_us(&mut typed, 0.5),
        percentile_us(&mut typed, 0.9),
    );
    let (d50, d90) = (
        percentile_us(&mut device, 0.5),
        percentile_us(&mut device, 0.9),
    );
    let (r50, r90) = (percentile_us(&mut raw, 0.5), percentile_us(&mut raw, 0.9));
    eprintln!(
        "launch overhead, host time per call over {count} launches each (all_gather, 7 slots, 1 block of 32 threads):"
    );
    eprintln!("  typed launch (KernelArgs + Iris::launch)  median {t50:.3} us  p90 {t90:.3} us");
    eprintln!("  Device::launch                            median {d50:.3} us  p90 {d90:.3} us");
    eprintln!("  raw cuLaunchKernel                        median {r50:.3} us  p90 {r90:.3} us");
    eprintln!(
        "  typed over raw                            median {:+.3} us",
        t50 - r50
    );
    assert!(
        t50 - r50 < 1.0,
        "a typed launch costs {:.3} us more than a raw cuLaunchKernel (the bound is 1 us)",
        t50 - r50
    );
}
