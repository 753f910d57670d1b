//! The CUDA backend on a real GPU, with hand-written PTX (no kernel compiler involved):
//! memory, copies, events, module selection and loading, launches, a translate-then-store
//! through a table of bases, threads sharing a device, and launch overhead against a raw
//! `cuLaunchKernel`. Without a CUDA driver every test prints why it is skipped and passes,
//! unless `IRIS_REQUIRE_GPU` is set (as on the GPU machine), which makes that a failure.

use std::ffi::c_void;
use std::sync::Arc;
use std::time::{Duration, Instant};

use cudarc::driver::sys;
use iris_device::abi::{CodeObject, KernelSpec, KernelUnit, ParamKind, ParamSpec, TargetKind};
use iris_driver::cuda::{self, CudaModule, CudaStream};
use iris_driver::Error;
use iris_driver::{Backend, Device, LaunchDims, MemoryKind, Module, Stream};

const WAIT: Duration = Duration::from_secs(30);

/// `fill(out, n)`: `out[i] = 2 * i + 1`; `translate_store(ptr, base, table, peer, n)`:
/// `(table[peer] + (ptr - base))[i] = peer * 1000000 + i`, the `Symmetric` slot layout
/// followed by two scalars. Emitted by LLVM's NVPTX back end for sm_80.
const PTX: &str = concat!(
    r#"
.version 7.0
.target sm_80
.address_size 64

.visible .entry fill(
	.param .u64 .ptr .global .align 1 fill_param_0,
	.param .u32 fill_param_1
)
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<8>;
	.reg .b64 	%rd<4>;

	ld.param.b32 	%r2, [fill_param_1];
	mov.u32 	%r3, %tid.x;
	mov.u32 	%r4, %ctaid.x;
	mov.u32 	%r5, %ntid.x;
	mad.lo.s32 	%r6, %r4, %r5, %r3;
	setp.ge.u32 	%p1, %r6, %r2;
	@%p1 bra 	$L__BB0_2;
	ld.param.b64 	%rd2, [fill_param_0];
	mul.wide.u32 	%rd3, %r6, 4;
	add.s64 	%rd1, %rd2, %rd3;
	shl.b32 	%r7, %r6, 1;
	or.b32 	%r1, %r7, 1;
	st.global.b32 	[%rd1], %r1;
$L__BB0_2:
	ret;
}

.visible .entry translate_store(
	.param .u64 .ptr .align 1 translate_store_param_0,
	.param .u64 .ptr .align 1 translate_store_param_1,
	.param .u64 .ptr .global .align 1 translate_store_param_2,
	.param .u32 translate_store_param_3,
	.param .u32 translate_store_param_4
)
{
	.reg .pred 	%p<2>;
	.reg .b32 	%r<8>;
	.reg .b64 	%rd<11>;

	mov.u32 	%r3, %tid.x;
	mov.u32 	%r4, %ctaid.x;
	mov.u32 	%r5, %ntid.x;
	ld.param.b32 	%r6, [translate_store_param_4];
	mad.lo.s32 	%r1, %r4, %r5, %r3;
	setp.ge.u32 	%p1, %r1, %r6;
	@%p1 bra 	$L__BB1_2;
	ld.param.b32 	%r2, [translate_store_param_3];
	ld.param.b64 	%rd3, [translate_store_param_2];
	ld.param.b64 	%rd2, [translate_store_param_1];
	ld.param.b64 	%rd1, [translate_store_param_0];
	mul.wide.u32 	%rd4, %r2, 8;
	add.s64 	%rd5, %rd3, %rd4;
	ld.global.nc.b64 	%rd6, [%rd5];
	sub.s64 	%rd7, %rd1, %rd2;
	add.s64 	%rd8, %rd6, %rd7;
	mul.wide.u32 	%rd9, %r1, 4;
	add.s64 	%rd10, %rd8, %rd9;
	mad.lo.s32 	%r7, %r2, 1000000, %r1;
	st.b32 	[%rd10], %r7;
$L__BB1_2:
	ret;
}
"#,
    "\0"
);

const U32: ParamKind = ParamKind::Value { size: 4, align: 4 };

const KERNELS: &[KernelSpec] = &[
    KernelSpec {
        name: "fill",
        params: &[
            ParamSpec {
                name: "out",
                ty: "*mut u32",
                kind: ParamKind::Pointer,
            },
            ParamSpec {
                name: "n",
                ty: "u32",
                kind: U32,
            },
        ],
        shared_bytes: 0,
        concurrent_threads: false,
        max_block_threads: 1024,
        peer_checks: false,
        signal_waits: false,
        spins: false,
        trace_events: false,
    },
    KernelSpec {
        name: "translate_store",
        params: &[
            ParamSpec {
                name: "dst",
                ty: "Symmetric<u32>",
                kind: ParamKind::Symmetric,
            },
            ParamSpec {
                name: "peer",
                ty: "u32",
                kind: U32,
            },
            ParamSpec {
                name: "n",
                ty: "u32",
                kind: U32,
            },
        ],
        shared_bytes: 0,
        concurrent_threads: false,
        max_block_threads: 1024,
        peer_checks: false,
        signal_waits: false,
        spins: false,
        trace_events: false,
    },
];

/// The real PTX for sm_80, and a broken object for a target no device has yet: a device
/// that picked it would fail to load.
static UNIT: KernelUnit = KernelUnit {
    id: "cuda_backend::hand_written",
    kernels: KERNELS,
    left_out: &[],
    code_objects: &[
        CodeObject {
            target: "sm_80",
            kind: TargetKind::Nvptx,
            bytes: PTX.as_bytes(),
        },
        CodeObject {
            target: "sm_999",
            kind: TargetKind::Nvptx,
            bytes: b"not ptx\0",
        },
        CodeObject {
            target: "gfx942",
            kind: TargetKind::Amdgpu,
            bytes: b"",
        },
    ],
};

static FUTURE_ONLY: KernelUnit = KernelUnit {
    id: "cuda_backend::future_only",
    kernels: KERNELS,
    left_out: &[],
    code_objects: &[CodeObject {
        target: "sm_999",
        kind: TargetKind::Nvptx,
        bytes: b"\0",
    }],
};

static BROKEN: KernelUnit = KernelUnit {
    id: "cuda_backend::broken",
    kernels: KERNELS,
    left_out: &[],
    code_objects: &[CodeObject {
        target: "sm_80",
        kind: TargetKind::Nvptx,
        bytes:
            b".version 7.0\n.target sm_80\n.address_size 64\n.visible .entry fill() { bogus; }\0",
    }],
};

/// The CUDA backend, or `None` (with the reason printed) where there is none.
fn backend() -> Option<Arc<dyn Backend>> {
    match cuda::open() {
        Ok(backend) => Some(backend),
        Err(err) if std::env::var_os("IRIS_REQUIRE_GPU").is_some() => {
            panic!("IRIS_REQUIRE_GPU is set but the CUDA backend does not open: {err}")
        }
        Err(err) => {
            eprintln!("skipped: {err}");
            None
        }
    }
}

fn device() -> Option<Arc<dyn Device>> {
    let backend = backend()?;
    match backend.device(0) {
        Ok(device) => Some(device),
        Err(err) => panic!("device 0 of an opened CUDA backend: {err}"),
    }
}

fn dims(blocks: u32, threads: u32) -> LaunchDims {
    LaunchDims {
        grid: [blocks, 1, 1],
        block: [threads, 1, 1],
        dynamic_shared_bytes: 0,
    }
}

fn slot<T>(value: &mut T) -> *mut c_void {
    (value as *mut T).cast()
}

fn read_u32(device: &dyn Device, stream: &dyn Stream, addr: u64, n: usize) -> Vec<u32> {
    let mut bytes = vec![0u8; n * 4];
    // SAFETY: the test's own live allocation, at least as long as the copy.
    unsafe { device.memcpy_dtoh(stream, &mut bytes, addr) }.expect("dtoh");
    bytes
        .chunks(4)
        .map(|c| u32::from_ne_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

fn fill(device: &dyn Device, stream: &dyn Stream, module: &dyn Module, out: u64, n: u32) {
    let (mut out, mut n_arg) = (out, n);
    let mut args = [slot(&mut out), slot(&mut n_arg)];
    // SAFETY: a kernel of this module with matching argument slots; the memory they name stays live until the stream is synchronized.
    unsafe { device.launch(stream, module, 0, dims(n.div_ceil(256), 256), &mut args) }
        .expect("launch fill");
}

#[test]
fn device_info_is_sane() {
    let Some(backend) = backend() else { return };
    let device = backend.device(0).expect("device 0");
    let info = device.info();
    eprintln!("{info:?}");
    assert!(info.target.starts_with("sm_"), "{}", info.target);
    assert!(info.max_threads_per_block >= 1024);
    assert!(info.max_grid_dims[0] >= 65535);
    assert!(info.multiprocessors > 0 && info.total_memory > 0);
    // The physical device's identity: set, and one per device.
    assert_ne!(info.uuid, [0; 16], "device 0 has no UUID");
    let uuids: Vec<[u8; 16]> = (0..backend.device_count())
        .map(|d| backend.device(d).expect("a device").info().uuid)
        .collect();
    for (i, u) in uuids.iter().enumerate() {
        assert!(!uuids[..i].contains(u), "devices share a UUID: {uuids:?}");
    }
    assert!(Arc::ptr_eq(
        &device,
        &backend.device(0).expect("device 0 again")
    ));
    assert!(backend.can_access_peer(0, 0).expect("peer query"));
    backend.enable_peer_access(0, 0).expect("self peer access");
    let count = backend.device_count();
    match backend.device(count) {
        Err(Error::NoSuchDevice { ordinal, .. }) => assert_eq!(ordinal, count),
        other => panic!("device {count} of {count}: {:?}", other.map(|_| ())),
    }
}

#[test]
fn copies_sets_and_events() {
    let Some(device) = device() else { return };
    let stream = device.create_stream().expect("stream");
    let n = 1 << 20;
    let a = device.alloc(n, MemoryKind::Device).expect("alloc a");
    let b = device.alloc(n, MemoryKind::Symmetric).expect("alloc b");
    let pattern: Vec<u8> = (0..n).map(|i| (i * 7 % 251) as u8).collect();
    let start = device.create_event().expect("event");
    let end = device.create_event().expect("event");
    // SAFETY: the test's own live allocation, at least as long as the copy.
    unsafe {
        device.memcpy_htod(&*stream, a, &pattern).expect("htod");
        stream.record(&*start).expect("record");
        device.memcpy_dtod(&*stream, b, a, n).expect("dtod");
        device.memset(&*stream, b + 16, 0xab, 32).expect("memset");
        device.memcpy_dtod(&*stream, a, a, 0).expect("empty dtod");
        stream.record(&*end).expect("record");
    }
    end.synchronize(WAIT).expect("event sync");
    let ms = start.elapsed_ms(&*end).expect("elapsed");
    assert!(ms >= 0.0, "{ms}");
    let mut back = vec![0u8; n];
    // SAFETY: the test's own live allocation, at least as long as the copy.
    unsafe { device.memcpy_dtoh(&*stream, &mut back, b) }.expect("dtoh");
    let mut expected = pattern.clone();
    expected[16..48].fill(0xab);
    assert!(back == expected, "device copy differs");
    // SAFETY: the test's own allocation, not used afterwards (a second free is refused).
    unsafe {
        device.free(a).expect("free");
        device.free(b).expect("free");
    }
    match device.alloc(0, MemoryKind::Device) {
        Err(Error::OutOfMemory { bytes: 0, .. }) => {}
        other => panic!("zero-byte alloc: {other:?}"),
    }
}

#[test]
fn fill_kernel_and_module_selection() {
    let Some(device) = device() else { return };
    let stream = device.create_stream().expect("stream");
    let module = device.load_module(&UNIT).expect("load the unit");
    assert_eq!(
        module.target(),
        "sm_80",
        "the highest sm_XX not above the device"
    );
    let n: u32 = 1_000_003;
    let out = device
        .alloc(n as usize * 4, MemoryKind::Device)
        .expect("alloc");
    // SAFETY: the test's own live allocation, at least as long as the copy.
    unsafe { device.memset(&*stream, out, 0xff, n as usize * 4) }.expect("memset");
    fill(&*device, &*stream, &*module, out, n);
    stream.synchronize(WAIT).expect("sync");
    let got = read_u32(&*device, &*stream, out, n as usize);
    let bad = got
        .iter()
        .enumerate()
        .find(|&(i, &v)| v != 2 * i as u32 + 1);
    assert_eq!(bad, None, "fill wrote a wrong value");

    let mut args = [std::ptr::null_mut(); 2];
    // SAFETY: a kernel of this module with matching argument slots; the memory they name stays live until the stream is synchronized.
    match unsafe { device.launch(&*stream, &*module, 2, dims(1, 1), &mut args) } {
        Err(Error::NoSuchKernel {
            index: 2, count: 2, ..
        }) => {}
        other => panic!("kernel index 2: {other:?}"),
    }
    match device.load_module(&FUTURE_ONLY).map(|m| m.target()) {
        Err(err @ Error::NoCodeObject { .. }) => {
            let text = err.to_string();
            eprintln!("expected error: {text}");
            assert!(
                text.contains("sm_999") && text.contains(&device.info().target),
                "{text}"
            );
        }
        other => panic!("a unit for sm_999 only: {other:?}"),
    }
    match device.load_module(&BROKEN).map(|m| m.target()) {
        Err(err @ Error::ModuleLoad { .. }) => eprintln!("expected error: {err}"),
        other => panic!("broken PTX: {other:?}"),
    }
    // SAFETY: the test's own allocation, not used afterwards (a second free is refused).
    unsafe { device.free(out) }.expect("free");
}

#[test]
fn translate_then_store_through_a_table() {
    let Some(backend) = backend() else { return };
    let near = backend.device(0).expect("device 0");
    // With a second GPU that device 0 can reach, "rank 1" lives there.
    let remote = backend.device_count() > 1 && backend.can_access_peer(0, 1).unwrap_or(false);
    let far = if remote {
        backend.device(1).expect("device 1")
    } else {
        near.clone()
    };
    if remote {
        backend
            .enable_peer_access(0, 1)
            .expect("peer access 0 -> 1");
        backend
            .enable_peer_access(0, 1)
            .expect("enabling twice is fine");
    }
    eprintln!("rank 1 on device {}", far.info().ordinal);
    let stream = near.create_stream().expect("stream");
    let far_stream = far.create_stream().expect("stream");
    let module = near.load_module(&UNIT).expect("load");
    let (n, skip) = (4096u32, 16usize);
    let words = n as usize + skip;
    let a = near
        .alloc(words * 4, MemoryKind::Symmetric)
        .expect("alloc a");
    let b = far
        .alloc(words * 4, MemoryKind::Symmetric)
        .expect("alloc b");
    let table = near.alloc(16, MemoryKind::Device).expect("alloc table");
    let bases: Vec<u8> = [a, b].iter().flat_map(|x| x.to_ne_bytes()).collect();
    // SAFETY: the test's own live allocation, at least as long as the copy.
    unsafe {
        near.memcpy_htod(&*stream, table, &bases).expect("table");
        near.memset(&*stream, a, 0, words * 4).expect("clear a");
        far.memset(&*far_stream, b, 0, words * 4).expect("clear b");
    }
    far_stream.synchronize(WAIT).expect("sync");
    for peer in [1u32, 0] {
        let (mut ptr, mut base, mut tab) = (a + skip as u64 * 4, a, table);
        let (mut peer_arg, mut n_arg) = (peer, n);
        let mut args = [
            slot(&mut ptr),
            slot(&mut base),
            slot(&mut tab),
            slot(&mut peer_arg),
            slot(&mut n_arg),
        ];
        // SAFETY: a kernel of this module with matching argument slots; the memory they name stays live until the stream is synchronized.
        unsafe { near.launch(&*stream, &*module, 1, dims(n.div_ceil(128), 128), &mut args) }
            .expect("launch translate_store");
    }
    stream.synchronize(WAIT).expect("sync");
    for (who, dev, st, addr, peer) in [
        ("a", &near, &stream, a, 0u32),
        ("b", &far, &far_stream, b, 1),
    ] {
        let got = read_u32(&**dev, &**st, addr, words);
        assert!(
            got[..skip].iter().all(|&v| v == 0),
            "{who}: bytes before the pointer changed"
        );
        let bad = got[skip..]
            .iter()
            .enumerate()
            .find(|&(i, &v)| v != peer * 1_000_000 + i as u32);
        assert_eq!(bad, None, "{who}: wrong value after translation");
    }
    // SAFETY: the test's own allocation, not used afterwards (a second free is refused).
    unsafe {
        near.free(a).expect("free");
        far.free(b).expect("free");
        near.free(table).expect("free");
    }
}

#[test]
fn threads_share_a_device() {
    let Some(device) = device() else { return };
    let module: Arc<dyn Module> = Arc::from(device.load_module(&UNIT).expect("load"));
    let workers: Vec<_> = (0..4u32)
        .map(|t| {
            let (device, module) = (device.clone(), module.clone());
            std::thread::spawn(move || {
                let stream = device.create_stream().expect("stream");
                let n = 10_000 + t;
                let out = device
                    .alloc(n as usize * 4, MemoryKind::Device)
                    .expect("alloc");
                for _ in 0..10 {
                    fill(&*device, &*stream, &*module, out, n);
                }
                stream.synchronize(WAIT).expect("sync");
                let got = read_u32(&*device, &*stream, out, n as usize);
                // SAFETY: the test's own allocation, not used afterwards (a second free is refused).
                unsafe { device.free(out) }.expect("free");
                got.iter().enumerate().all(|(i, &v)| v == 2 * i as u32 + 1)
            })
        })
        .collect();
    for w in workers {
        assert!(w.join().expect("worker"), "a thread read wrong values");
    }
}

fn percentile(samples: &mut [Duration], p: f64) -> f64 {
    samples.sort_unstable();
    let i = ((samples.len() - 1) as f64 * p).round() as usize;
    samples[i].as_secs_f64() * 1e6
}

#[test]
fn launch_overhead_against_raw_cu_launch_kernel() {
    let Some(device) = device() else { return };
    let stream = device.create_stream().expect("stream");
    let module = device.load_module(&UNIT).expect("load");
    let function = module
        .as_any()
        .downcast_ref::<CudaModule>()
        .expect("a CUDA module")
        .function(0)
        .expect("fill");
    let raw_stream = stream
        .as_any()
        .downcast_ref::<CudaStream>()
        .expect("a CUDA stream")
        .raw();
    let out = device.alloc(32 * 4, MemoryKind::Device).expect("alloc");
    let (mut out_arg, mut n_arg) = (out, 32u32);
    let mut args = [slot(&mut out_arg), slot(&mut n_arg)];
    let d = dims(1, 32);
    let ours = |args: &mut [*mut c_void]| {
        // SAFETY: a kernel of this module with matching argument slots; the memory they name stays live until the stream is synchronized.
        unsafe { device.launch(&*stream, &*module, 0, d, args) }.expect("launch");
    };
    let raw = |args: &mut [*mut c_void]| {
        // SAFETY: the test's own live allocations, sized for the calls below.
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
                args.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        };
        assert_eq!(r, sys::CUresult::CUDA_SUCCESS);
    };
    let (batch, rounds) = (500, 20);
    let mut times = [
        Vec::with_capacity(batch * rounds),
        Vec::with_capacity(batch * rounds),
    ];
    for round in 0..rounds + 2 {
        for (which, samples) in times.iter_mut().enumerate() {
            for _ in 0..batch {
                let t = Instant::now();
                if which == 0 {
                    ours(&mut args)
                } else {
                    raw(&mut args)
                }
                if round >= 2 {
                    samples.push(t.elapsed());
                }
            }
            stream.synchronize(WAIT).expect("sync");
        }
    }
    let start = device.create_event().expect("event");
    let end = device.create_event().expect("event");
    stream.record(&*start).expect("record");
    for _ in 0..1000 {
        ours(&mut args);
    }
    stream.record(&*end).expect("record");
    end.synchronize(WAIT).expect("sync");
    // Milliseconds for 1000 launches are microseconds per launch.
    let device_us = start.elapsed_ms(&*end).expect("elapsed") as f64;
    let [mut ours_t, mut raw_t] = times;
    let (ours_med, raw_med) = (percentile(&mut ours_t, 0.5), percentile(&mut raw_t, 0.5));
    let (ours_p90, raw_p90) = (percentile(&mut ours_t, 0.9), percentile(&mut raw_t, 0.9));
    eprintln!(
        "launch overhead, host time per call over {} launches each (1 block of 32 threads):",
        ours_t.len()
    );
    eprintln!("  Device::launch       median {ours_med:.3} us  p90 {ours_p90:.3} us");
    eprintln!("  raw cuLaunchKernel   median {raw_med:.3} us  p90 {raw_p90:.3} us");
    eprintln!(
        "  difference           median {:+.3} us",
        ours_med - raw_med
    );
    eprintln!("  device time per launch, 1000 back to back: {device_us:.3} us");
    assert_eq!(read_u32(&*device, &*stream, out, 32)[31], 63);
    // SAFETY: the test's own allocation, not used afterwards (a second free is refused).
    unsafe { device.free(out) }.expect("free");
}
