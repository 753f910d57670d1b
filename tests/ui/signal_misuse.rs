use iris::prelude::*;

// A signal is a `Symmetric<u64>`: a local pointer cannot be signalled by a peer.
#[iris::kernel]
pub fn local_signal(flag: *mut u64) {
    signal_wait_until(flag, Cmp::Ge, 1);
}

// Signals are 64-bit.
#[iris::kernel]
pub fn narrow_signal(flag: Symmetric<u32>, peer: u32) {
    signal(flag, 1, SignalOp::Set, peer);
}

// The comparison is a `Cmp`, not a memory ordering.
#[iris::kernel]
pub fn ordering_as_comparison(flag: Symmetric<u64>) {
    signal_wait_until(flag, Ordering::Acquire, 1);
}

// The comparison and the operation are constants at the call.
#[iris::kernel]
pub fn comparison_in_a_variable(flag: Symmetric<u64>) {
    let cmp = Cmp::Ge;
    signal_wait_until(flag, cmp, 1);
}

fn main() {}
