//! Device time on the CPU backend: what `global_timer_ns()`, `clock64()` and
//! `nanosleep()` call in a CPU code object (through its launch context).

/// Nanoseconds of `CLOCK_MONOTONIC`: one clock for every thread and process of the
/// machine, so ranks as processes read the same time.
pub(super) unsafe extern "C" fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid out-pointer; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    (ts.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(ts.tv_nsec as u64)
}

/// Suspends the calling thread for about `ns` nanoseconds (at least a scheduler tick's
/// worth for any `ns > 0`: the core goes to other threads, which is the point of
/// sleeping in a wait loop); `0` only yields.
pub(super) unsafe extern "C" fn sleep_ns(ns: u64) {
    if ns == 0 {
        std::thread::yield_now();
    } else {
        std::thread::sleep(std::time::Duration::from_nanos(ns));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clock_moves_forward_across_a_sleep() {
        // SAFETY: plain functions of this module.
        let (before, after) = unsafe {
            let before = now_ns();
            sleep_ns(2_000_000);
            (before, now_ns())
        };
        assert!(after - before >= 2_000_000, "{before} -> {after}");
    }
}
