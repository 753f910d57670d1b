//! A kernel's first launch minus a steady one: what loading its code object costs.

use iris::prelude::*;
use iris::{DevicePtr, LaunchConfig, World};
use std::time::Instant;

use crate::harness::*;
use crate::kernels::*;

/// First launch (which loads the code object) minus a steady launch, host time including
/// the synchronize, for each kernel unit, in a fresh world.
pub(crate) fn module_load_case() -> iris::Result<Vec<Row>> {
    let rows = World::threads(1).heap_bytes(16 * MIB).run(|iris| {
        let n = 1024u64;
        let buf = iris.zeros::<f32x4>(n as usize)?;
        let buf_f32: DevicePtr<f32> = buf.device_ptr().cast();
        let sym = iris.symmetric::<f32>(4 * n as usize)?;
        let sym2 = iris.symmetric::<f32>(4 * n as usize)?;
        let flag = iris.symmetric::<u32>(64)?;
        let failed = iris.zeros::<u32>(1)?;
        let cfg = LaunchConfig::linear(4, BLOCK);
        // Warm the context with a kernel of another unit first.
        util::fill_hash::launch(iris, cfg, &buf, n, 1)?;
        iris.synchronize()?;
        type Op<'a> = Box<dyn Fn() -> iris::Result<()> + 'a>;
        let ops: [(&str, Op<'_>); 6] = [
            (
                "store_v4",
                Box::new(|| store_v4::launch(iris, cfg, &sym, n, 0, 3)) as Op<'_>,
            ),
            (
                "load_v4",
                Box::new(|| load_v4::launch(iris, cfg, &sym, &buf, n, 0)),
            ),
            (
                "copy_v4",
                Box::new(|| copy_v4::launch(iris, cfg, &sym, &sym2, n, 0, 0)),
            ),
            (
                "all_gather",
                Box::new(|| all_gather::launch(iris, cfg, &buf_f32, &sym, 4 * n, 0, 1)),
            ),
            (
                "all_gather_v4",
                Box::new(|| all_gather_v4::launch(iris, cfg, &buf, &sym, n, 0, 1)),
            ),
            (
                "ping_pong",
                Box::new(|| ping_pong::launch(iris, (1, 1), &flag, 0, 0, 0, 1, &failed)),
            ),
        ];
        let mut rows = Vec::new();
        for (name, op) in &ops {
            let t = Instant::now();
            op()?;
            iris.synchronize()?;
            let first = t.elapsed().as_secs_f64() * 1e3;
            let mut steady: Vec<f64> = Vec::new();
            for _ in 0..21 {
                let t = Instant::now();
                op()?;
                iris.synchronize()?;
                steady.push(t.elapsed().as_secs_f64() * 1e3);
            }
            let steady = median(&mut steady);
            rows.push(Row {
                case: "module_load".into(),
                kernel: (*name).into(),
                ranks: 1,
                ms: first - steady,
                launches: 1,
                correct: true,
                extra: vec![
                    ("first_launch_ms".into(), first),
                    ("steady_launch_ms".into(), steady),
                ],
                ..Row::default()
            });
        }
        Ok(rows)
    })?;
    Ok(rows.into_iter().next().unwrap_or_default())
}

// ----- output --------------------------------------------------------------------------------
