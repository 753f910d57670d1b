//! Atomic operations on a peer's copy of a symmetric allocation.
//!
//! Each takes the ordering and the scope explicitly. Across ranks use `Scope::System`:
//! on NVIDIA it is `.sys`, on AMD the system scope (which needs fine-grained memory).

use super::{device_only, AtomicBits, AtomicValue, DeviceValue, Ordering, Scope, Symmetric};

macro_rules! rmw {
    ($($name:ident, $bound:ident, $doc:literal;)*) => {
        $(
            #[doc = $doc]
            ///
            /// Returns the value that was there before.
            #[inline(always)]
            pub fn $name<T: $bound>(p: Symmetric<T>, value: T, peer: u32, order: Ordering, scope: Scope) -> T {
                let _ = (p, value, peer, order, scope);
                device_only(stringify!($name))
            }
        )*
    };
}

rmw! {
    atomic_add, AtomicValue, "Atomically adds `value` to `peer`'s copy of `*p`.";
    atomic_sub, AtomicValue, "Atomically subtracts `value` from `peer`'s copy of `*p`.";
    atomic_and, AtomicBits, "Atomically ANDs `value` into `peer`'s copy of `*p`.";
    atomic_or, AtomicBits, "Atomically ORs `value` into `peer`'s copy of `*p`.";
    atomic_xor, AtomicBits, "Atomically XORs `value` into `peer`'s copy of `*p`.";
    atomic_min, AtomicBits, "Atomically stores the minimum of `value` and `peer`'s copy of `*p`.";
    atomic_max, AtomicBits, "Atomically stores the maximum of `value` and `peer`'s copy of `*p`.";
    atomic_xchg, AtomicBits, "Atomically replaces `peer`'s copy of `*p` with `value`.";
}

/// Atomically replaces `peer`'s copy of `*p` with `new` if it equals `current`.
///
/// Returns the value that was there before: the exchange happened if it equals `current`.
#[inline(always)]
pub fn atomic_cas<T: AtomicBits>(
    p: Symmetric<T>,
    current: T,
    new: T,
    peer: u32,
    order: Ordering,
    scope: Scope,
) -> T {
    let _ = (p, current, new, peer, order, scope);
    device_only("atomic_cas")
}

/// Atomically reads `peer`'s copy of `*p` (`Relaxed`, `Acquire` or `SeqCst`).
#[inline(always)]
pub fn atomic_load<T: DeviceValue>(p: Symmetric<T>, peer: u32, order: Ordering, scope: Scope) -> T {
    let _ = (p, peer, order, scope);
    device_only("atomic_load")
}

/// Atomically writes `value` into `peer`'s copy of `*p` (`Relaxed`, `Release` or `SeqCst`).
#[inline(always)]
pub fn atomic_store<T: DeviceValue>(
    p: Symmetric<T>,
    value: T,
    peer: u32,
    order: Ordering,
    scope: Scope,
) {
    let _ = (p, value, peer, order, scope);
    device_only("atomic_store")
}
