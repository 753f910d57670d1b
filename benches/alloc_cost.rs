//! What a local buffer costs to make and drop, against the path it replaced, in one run.
//!
//! - `zeros + drop`: `Iris::zeros` then drop: memory from the device's own pool on a stream
//!   no kernel runs on, zeroed on the rank's stream, returned with a stream-ordered free
//!   (`cuMemFreeAsync`): no host wait, no wait for any kernel.
//! - `from_slice + drop`: the same with the data written on the staging stream.
//! - `alloc + sync + free (before)`: what drop did before: `cuMemAlloc`, a wait for the
//!   rank's stream, `cuMemFree` (which waits for the whole device).
//!
//! ```text
//! cargo bench --bench alloc_cost -- [--sizes 256,65536,16777216] [--iters 1000]
//! ```
//! Prints the median microseconds per make-and-drop over `--iters` in one world of one
//! rank (threads), on the backend `IRIS_BACKEND` names (default: the first found).

use std::time::Instant;

use iris::driver::MemoryKind;
use iris::{Iris, World};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn time(iters: usize, mut f: impl FnMut() -> iris::Result<()>) -> iris::Result<f64> {
    let mut samples = Vec::with_capacity(iters);
    for _ in 0..iters {
        let start = Instant::now();
        f()?;
        samples.push(start.elapsed().as_secs_f64() * 1e6);
    }
    Ok(median(samples))
}

fn arg(name: &str) -> Option<String> {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

fn run(iris: &Iris, sizes: &[usize], iters: usize) -> iris::Result<Vec<[String; 5]>> {
    let mut rows = Vec::new();
    for &bytes in sizes {
        let words = bytes / 4;
        let data = vec![1u32; words];
        // Warm the pool and the module cache.
        drop(iris.zeros::<u32>(words)?);
        let zeros = time(iters, || {
            drop(iris.zeros::<u32>(words)?);
            Ok(())
        })?;
        let from_slice = time(iters, || {
            drop(iris.from_slice(&data)?);
            Ok(())
        })?;
        let device = iris.device();
        let before = time(iters, || {
            // The old drop: a plain allocation, a wait for the stream, a plain free.
            let addr = device.alloc(bytes, MemoryKind::Symmetric)?;
            iris.synchronize()?;
            // SAFETY: just allocated, used by nothing.
            unsafe { device.free(addr) }
        })?;
        iris.synchronize()?;
        rows.push([
            bytes.to_string(),
            format!("{zeros:.2}"),
            format!("{from_slice:.2}"),
            format!("{before:.2}"),
            iris.device_info().name.clone(),
        ]);
    }
    Ok(rows)
}

fn main() {
    let sizes: Vec<usize> = arg("--sizes")
        .map(|s| {
            s.split(',')
                .map(|v| v.parse().expect("--sizes: numbers"))
                .collect()
        })
        .unwrap_or_else(|| vec![256, 65536, 16 << 20]);
    let iters: usize = arg("--iters").map_or(1000, |v| v.parse().expect("--iters: a number"));
    let rows = World::threads(1)
        .heap_bytes(1 << 20)
        .run(|iris| run(iris, &sizes, iters))
        .unwrap_or_else(|e| panic!("alloc_cost: {e}"));
    println!(
        "{:>10} {:>14} {:>18} {:>30}  device",
        "bytes", "zeros+drop us", "from_slice+drop us", "alloc+sync+free us (before)"
    );
    for [bytes, z, f, b, name] in &rows[0] {
        println!("{bytes:>10} {z:>14} {f:>18} {b:>30}  {name}");
    }
}
