//! The cost of peer checks: the same all-gather kernel (every rank stores its elements into
//! every peer's copy, one `iris::store` per element and peer) built without and with
//! `peer_checks`, at 2 and 8 ranks (threads of this process), median device time over
//! repeats after warm-up. The unchecked kernel is the ceiling the checked one is measured
//! against; both results are checked.
//!
//! ```text
//! cargo bench --bench peer_checks            # the backend found (CPU: small sizes)
//! ```

use iris::prelude::*;
use iris::{BackendKind, Iris, LaunchConfig, World};

/// Every rank writes its `n` inputs into slot `me` of every peer's `out`.
#[iris::kernel]
pub fn gather_unchecked(input: *const f32, out: Symmetric<f32>, n: u64, me: u32, world: u32) {
    let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as u64;
    if i < n {
        let v = unsafe { *input.add(i as usize) };
        for peer in 0..world {
            iris::store(out.add((me as u64 * n + i) as usize), v, peer);
        }
    }
}

/// The same, with every peer index checked against the world size.
#[iris::kernel(peer_checks)]
pub fn gather_checked(input: *const f32, out: Symmetric<f32>, n: u64, me: u32, world: u32) {
    let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as u64;
    if i < n {
        let v = unsafe { *input.add(i as usize) };
        for peer in 0..world {
            iris::store(out.add((me as u64 * n + i) as usize), v, peer);
        }
    }
}

/// Median device time (ms) of `iters` launches of one variant, and whether it gathered
/// right.
fn time_variant(iris: &Iris, n: usize, checked: bool, iters: usize) -> iris::Result<(f32, bool)> {
    let (me, world) = (iris.rank(), iris.world_size());
    let input_host: Vec<f32> = (0..n).map(|i| (me * n + i) as f32).collect();
    let input = iris.from_slice(&input_host)?;
    let out = iris.symmetric_full::<f32>(n * world, f32::NAN)?;
    let config = LaunchConfig::for_elements(n as u64, 256);
    let launch = |iris: &Iris| {
        let args = (&input, &out, n as u64, me as u32, world as u32);
        if checked {
            gather_checked::launch(iris, config, args.0, args.1, args.2, args.3, args.4)
        } else {
            gather_unchecked::launch(iris, config, args.0, args.1, args.2, args.3, args.4)
        }
    };
    let mut times = Vec::with_capacity(iters);
    for i in 0..iters + 3 {
        iris.barrier()?;
        let start = iris.record_event()?;
        launch(iris)?;
        let end = iris.record_event()?;
        end.synchronize()?;
        if i >= 3 {
            times.push(start.elapsed_ms(&end)?);
        }
    }
    iris.synchronize()?;
    iris.barrier()?;
    let got = out.to_vec()?;
    let correct = got
        .iter()
        .enumerate()
        .all(|(j, &v)| v == ((j / n) * n + j % n) as f32);
    times.sort_by(f32::total_cmp);
    Ok((times[times.len() / 2], correct))
}

fn main() -> iris::Result<()> {
    let backend = World::default_backend()?;
    let (n, iters) = if backend == BackendKind::Cpu {
        (1 << 14, 5)
    } else {
        (1 << 24, 50)
    };
    println!(
        "{:>5}  {:>7}  {:>11}  {:>14}  {:>12}  {:>8}  correct",
        "ranks", "backend", "bytes/rank", "unchecked (ms)", "checked (ms)", "checked/"
    );
    for ranks in [2usize, 8] {
        let heap = (n * ranks * 4).next_multiple_of(1 << 20) + (4 << 20);
        let rows = World::threads(ranks).heap_bytes(heap).run(|iris| {
            let plain = time_variant(iris, n, false, iters)?;
            let checked = time_variant(iris, n, true, iters)?;
            let worst = |t: f32| {
                iris.all_gather(t)
                    .map(|v| v.into_iter().fold(0.0f32, f32::max))
            };
            let ok = iris.all_gather(u8::from(plain.1 && checked.1))?;
            Ok((
                worst(plain.0)?,
                worst(checked.0)?,
                ok.iter().all(|&o| o == 1),
            ))
        })?;
        let (plain, checked, ok) = rows[0];
        println!(
            "{ranks:>5}  {backend:>7}  {:>11}  {plain:>14.4}  {checked:>12.4}  {:>8.3}  {}",
            n * 4,
            checked / plain,
            if ok { "yes" } else { "NO" }
        );
        if !ok {
            return Err(iris::Error::InvalidConfig(
                "a variant gathered wrong data".into(),
            ));
        }
    }
    Ok(())
}
