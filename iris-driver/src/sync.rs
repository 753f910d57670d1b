//! Lock and wait helpers that never panic: a poisoned lock is still usable here, because
//! every critical section of the runtime leaves its data consistent before anything that
//! can panic.

use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Locks `mutex`, ignoring poisoning.
pub fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Waits on `cv` until `done` holds or `deadline` passes; returns the guard and whether
/// `done` holds.
pub fn wait_until<'a, T>(
    cv: &Condvar,
    mut guard: MutexGuard<'a, T>,
    deadline: Instant,
    mut done: impl FnMut(&mut T) -> bool,
) -> (MutexGuard<'a, T>, bool) {
    loop {
        if done(&mut guard) {
            return (guard, true);
        }
        let now = Instant::now();
        if now >= deadline {
            return (guard, false);
        }
        guard = match cv.wait_timeout(guard, deadline - now) {
            Ok((g, _)) => g,
            Err(poisoned) => poisoned.into_inner().0,
        };
    }
}

/// `now + timeout`, saturating far in the future instead of overflowing.
pub fn deadline(timeout: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(timeout)
        .unwrap_or_else(|| now + Duration::from_secs(60 * 60 * 24 * 365))
}
