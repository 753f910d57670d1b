//! A flag bounced between two ranks, one thread each: the round trip.

use iris::World;

use crate::harness::*;
use crate::kernels::*;

/// Round-trip latency of a flag between two ranks (threads, each its own stream), at
/// system scope (the default for cross-rank flags) or device scope.
pub(crate) fn ping_pong_case(plan: &Plan, device_scope: bool) -> iris::Result<Row> {
    let (short, long) = plan.ping_rounds;
    let per_rank = World::threads(2).heap_bytes(16 * MIB).run(|iris| {
        let me = iris.rank() as u32;
        let flag = iris.symmetric::<u32>(64)?;
        let failed = iris.zeros::<u32>(1)?;
        let mut epoch = 0u32;
        let mut run = |rounds: u32| -> iris::Result<f64> {
            iris.barrier()?;
            let start = iris.record_event()?;
            if device_scope {
                ping_pong_device::launch(
                    iris,
                    (1, 1),
                    &flag,
                    rounds,
                    epoch,
                    me,
                    plan.spin_limit,
                    &failed,
                )?;
            } else {
                ping_pong::launch(
                    iris,
                    (1, 1),
                    &flag,
                    rounds,
                    epoch,
                    me,
                    plan.spin_limit,
                    &failed,
                )?;
            }
            let end = iris.record_event()?;
            let ms = f64::from(start.elapsed_ms(&end)?);
            epoch += 2 * rounds;
            Ok(ms)
        };
        for _ in 0..plan.warmup {
            run(short)?;
        }
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for _ in 0..plan.repeats.min(7) {
            a.push(run(short)?);
            b.push(run(long)?);
        }
        iris.barrier()?;
        Ok((median(&mut a), median(&mut b), failed.to_vec()?[0] == 0))
    })?;
    let (t_short, t_long, _) = per_rank[0];
    let ok = per_rank.iter().all(|r| r.2);
    let per_trip_us = (t_long - t_short) * 1e3 / f64::from(long - short);
    Ok(Row {
        case: "ping_pong".into(),
        kernel: if device_scope {
            "ping_pong_device (release/acquire, device scope)".into()
        } else {
            "ping_pong (release/acquire, system scope)".into()
        },
        ranks: 2,
        size_bytes: 4,
        ms: per_trip_us * 1e-3,
        launches: 1,
        correct: ok,
        extra: vec![
            ("us_per_round_trip".into(), per_trip_us),
            (
                "us_per_round_trip_long_only".into(),
                t_long * 1e3 / f64::from(long),
            ),
            ("rounds_short".into(), f64::from(short)),
            ("rounds_long".into(), f64::from(long)),
        ],
        ..Row::default()
    })
}

// ----- module load --------------------------------------------------------------------------
