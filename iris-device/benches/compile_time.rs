//! Compile time per kernel and target: lower to LLVM IR, optimise and emit with LLVM,
//! link (`ld.lld`) or package. Prints the median of several runs in milliseconds, split
//! into the three stages, and the first (cold) run of the process, which also
//! initialises LLVM's targets. `generic_push` is one generic kernel built for 8 element
//! types (8 instances in its unit).
//!
//! `cargo bench -p iris-device --features compiler --bench compile_time`

use iris_device::compiler::frontend::{build_unit_from, InstanceList, SourceFn};
use iris_device::compiler::kernel_ir::Unit;
use iris_device::compiler::{buildable, code_object, llvm, Target, ALL_TARGETS};
use std::time::{Duration, Instant};

const RUNS: usize = 9;

const KERNELS: &[(&str, &str)] = &[
    (
        "all_gather",
        r#"
pub fn all_gather(input: *const f32, out: Symmetric<f32>, n: u64, me: u32, world: u32) {
    let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as u64;
    if i < n {
        let v = unsafe { *input.add(i as usize) };
        for peer in 0..world {
            iris::store(out.add((me as u64 * n + i) as usize), v, peer);
        }
    }
}
"#,
    ),
    (
        "vector_put",
        r#"
pub fn vector_put(src: *const f32x4, dst: Symmetric<f32x4>, n: u64, peer: u32) {
    let stride = (grid_dim_x() * block_dim_x()) as u64;
    let mut i = (block_idx_x() * block_dim_x() + thread_idx_x()) as u64;
    while i < n {
        let v = unsafe { *src.add(i as usize) };
        iris::store(dst.add(i as usize), v * f32x4::splat(2.0), peer);
        i += stride;
    }
}
"#,
    ),
    (
        "message_passing",
        r#"
pub fn message_passing(data: Symmetric<u32>, flag: Symmetric<u32>, n: u64, me: u32, peer: u32) {
    let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as u64;
    if me == 0 {
        if i < n {
            iris::store(data.add(i as usize), i as u32, peer);
        }
        sync_threads();
        if thread_idx_x() == 0 {
            fence(Ordering::SeqCst, Scope::System);
            iris::atomic_add(flag, 1, peer, Ordering::Release, Scope::System);
        }
    } else {
        if thread_idx_x() == 0 {
            while iris::atomic_load(flag, me, Ordering::Acquire, Scope::System) == 0 {}
        }
        sync_threads();
    }
}
"#,
    ),
    (
        "reduce_shared",
        r#"
pub fn reduce_shared(input: *const f32, out: *mut f32, n: u64) {
    let buf = shared_array::<f32, 256>();
    let t = thread_idx_x();
    let i = (block_idx_x() * block_dim_x() + t) as u64;
    let v = if i < n { unsafe { *input.add(i as usize) } } else { 0.0 };
    unsafe { *buf.add(t as usize) = v; }
    sync_threads();
    let mut s = block_dim_x() / 2;
    while s > 0 {
        if t < s {
            unsafe { *buf.add(t as usize) = *buf.add(t as usize) + *buf.add((t + s) as usize); }
        }
        sync_threads();
        s = s / 2;
    }
    if t == 0 {
        unsafe { *out.add(block_idx_x() as usize) = *buf; }
    }
}
"#,
    ),
    (
        "generic_push",
        r#"
#[instances((f32, 4), (f64, 2), (f16, 8), (bf16, 8), (i32, 4), (u32, 4), (i64, 2), (u64, 2))]
pub fn push<T: Element, const L: usize>(input: *const T, out: Symmetric<T>, n: u64, me: u32, world: u32) {
    let stride = (grid_dim_x() * block_dim_x()) as u64;
    let mut i = (block_idx_x() * block_dim_x() + thread_idx_x()) as u64;
    let src = input.cast::<[T; L]>();
    let dst = out.cast::<[T; L]>();
    while i < n / L as u64 {
        let v = unsafe { *src.add(i as usize) };
        for k in 0..world {
            iris::store(dst.add((me as u64 * n / L as u64 + i) as usize), v, (me + k) % world);
        }
        i += stride;
    }
}
"#,
    ),
];

fn unit(name: &str, src: &str) -> Unit {
    let file: syn::File = match syn::parse_str(src) {
        Ok(f) => f,
        Err(e) => panic!("{name}: {e}"),
    };
    // Every `fn` is a kernel; `#[instances(..)]` lists a generic kernel's instances.
    let items: Vec<SourceFn> = file
        .items
        .into_iter()
        .filter_map(|i| match i {
            syn::Item::Fn(mut f) => {
                let list = f
                    .attrs
                    .iter()
                    .position(|a| a.path().is_ident("instances"))
                    .map(|pos| match f.attrs.remove(pos).meta {
                        syn::Meta::List(l) => InstanceList::parse(l.tokens).expect("instances"),
                        _ => panic!("{name}: #[instances(..)] takes a list"),
                    });
                let mut source = SourceFn::new(f, true);
                source.instances = list;
                Some(source)
            }
            _ => None,
        })
        .collect();
    build_unit_from(name, &items).unwrap_or_else(|e| {
        panic!(
            "{name}: {}",
            e.iter()
                .map(|e| e.message.clone())
                .collect::<Vec<_>>()
                .join("; ")
        )
    })
}

/// Times of one compilation: lower, LLVM, package.
fn compile_once(unit: &Unit, target: Target) -> [Duration; 3] {
    let t0 = Instant::now();
    let ir = llvm::lower_unit(unit, target).expect("lower");
    let t1 = Instant::now();
    let emitted = llvm::codegen(&ir, target, &unit.name, None).expect("codegen");
    let t2 = Instant::now();
    let object = code_object::package(target, &emitted).expect("package");
    let t3 = Instant::now();
    assert!(!object.is_empty());
    [t1 - t0, t2 - t1, t3 - t2]
}

/// Lowers for every target, then runs LLVM and the linker of each target in a thread.
fn compile_parallel(unit: &Unit) -> Duration {
    let t = Instant::now();
    let irs: Vec<String> = targets()
        .iter()
        .map(|&target| llvm::lower_unit(unit, target).expect("lower"))
        .collect();
    std::thread::scope(|s| {
        for (&target, ir) in targets().iter().zip(&irs) {
            s.spawn(move || {
                let emitted = llvm::codegen(ir, target, "unit", None).expect("codegen");
                code_object::package(target, &emitted).expect("package")
            });
        }
    });
    t.elapsed()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The 1-minute load average (the machine may be shared: read the numbers with it).
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "unknown".into())
}

/// The targets the build's LLVM compiles (all but gfx950 with LLVM 19).
fn targets() -> Vec<Target> {
    buildable(&ALL_TARGETS)
}

fn main() {
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    println!("{cores} cores, load average {} at start", load_average());
    let units: Vec<Unit> = KERNELS.iter().map(|(n, s)| unit(n, s)).collect();
    // The first compilation of the process, which also initialises LLVM's targets.
    let cold = compile_once(&units[0], Target::Gfx942);
    println!(
        "first compilation in the process ({} for gfx942): {:.1} ms (lower {:.2}, LLVM {:.1}, link {:.1})\n",
        units[0].name,
        ms(cold[0] + cold[1] + cold[2]),
        ms(cold[0]),
        ms(cold[1]),
        ms(cold[2])
    );
    println!("median of {RUNS} runs, ms per kernel and target: total (lower / LLVM / link)\n");
    let mut header = format!("{:<16}", "kernel");
    for t in targets() {
        header.push_str(&format!(" | {:>24}", t.name()));
    }
    println!("{header}");
    println!("{}", "-".repeat(header.len()));
    let mut worst: f64 = 0.0;
    for unit in &units {
        let mut row = format!("{:<16}", unit.name);
        for target in targets() {
            let runs: Vec<[Duration; 3]> = (0..RUNS).map(|_| compile_once(unit, target)).collect();
            let stage = |k: usize| median(runs.iter().map(|r| ms(r[k])).collect());
            let total = median(runs.iter().map(|r| ms(r[0] + r[1] + r[2])).collect());
            let kernels = unit.functions.iter().filter(|f| f.is_kernel).count().max(1);
            worst = worst.max(total / kernels as f64);
            row.push_str(&format!(
                " | {:>6.1} ({:.2}/{:>4.1}/{:>4.1})",
                total,
                stage(0),
                stage(1),
                stage(2)
            ));
        }
        println!("{row}");
    }
    println!(
        "\nslowest kernel/target median, per kernel of its unit: {worst:.1} ms (goal: under 50 ms)"
    );
    // A whole unit for every target: one after the other, and with LLVM and the linker of
    // each target in its own thread (lowering stays serial: the IR's spans are not `Sync`).
    for unit in &units {
        let serial = median(
            (0..RUNS)
                .map(|_| {
                    let t = Instant::now();
                    for target in targets() {
                        compile_once(unit, target);
                    }
                    ms(t.elapsed())
                })
                .collect(),
        );
        let parallel = median((0..RUNS).map(|_| ms(compile_parallel(unit))).collect());
        let kernels = unit.functions.iter().filter(|f| f.is_kernel).count();
        println!(
            "{:<16} all {} targets, {kernels} kernel(s): {serial:.1} ms one after the other, {parallel:.1} ms with a thread per target",
            unit.name,
            targets().len()
        );
    }
    println!("load average {} at the end", load_average());
}
