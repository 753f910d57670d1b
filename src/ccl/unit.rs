//! `ccl_unit!`: one kernel unit of a collective for one element type.
//!
//! Every collective kernel has the same parameters and the same frame: a device-side
//! barrier on entry (slot = block index, epoch `epoch`: thread 0 signals, every thread
//! waits), the collective's body (a device function of the unit, called by every thread
//! unless the barrier gave up), and a barrier on exit (epoch `epoch + 1`, signalled and
//! awaited by the block's last thread to finish). The body's device function takes
//! `(input, output, n, arg, me, world)`. No block barrier: on the CPU backend such
//! kernels run a block's threads as plain calls, not as one OS thread each.
//!
//! `macro_rules!` output reaches `#[iris::kernels]` fully expanded, so this macro writes
//! the kernels out whole (a kernel body cannot invoke a macro).

/// `ccl_unit! { module, T; [reduce(Acc, |x| { to }, |a| { from }) [vector(V, lanes, [0, 1, ..]) | scalar];] { device fns } kernel => body_fn, ... }`
macro_rules! ccl_unit {
    // With the reduction helpers `ccl_to_acc`, `ccl_from_acc` and `ccl_combine`, and for a
    // type with a 16-byte vector `ccl_combine_v` and `ccl_reduce_v` too.
    (
        $m:ident, $t:ident;
        reduce($acc:ident, |$x:ident| { $($to:tt)* }, |$y:ident| { $($from:tt)* }) [$($vspec:tt)*];
        { $($fns:tt)* }
        $($kernel:ident => $body:ident),* $(,)?
    ) => {
        ccl_unit! {
            @vector [$($vspec)*]
            $m, $t;
            {
                fn ccl_to_acc($x: $t) -> $acc {
                    $($to)*
                }

                fn ccl_from_acc($y: $acc) -> $t {
                    $($from)*
                }

                fn ccl_combine(a: $acc, b: $acc, op: u32) -> $acc {
                    if op == 0 {
                        a + b
                    } else if op == 1 {
                        a.min(b)
                    } else {
                        a.max(b)
                    }
                }

                /// `src` on every rank, combined in rank order.
                fn ccl_reduce(src: Symmetric<$t>, op: u32, world: u32) -> $t {
                    let mut acc = ccl_to_acc(load(src, 0));
                    for peer in 1..world {
                        acc = ccl_combine(acc, ccl_to_acc(load(src, peer)), op);
                    }
                    ccl_from_acc(acc)
                }

                $($fns)*
            }
            $($kernel => $body),*
        }
    };
    (
        @vector [vector($v:ident, $lanes:tt, [$($l:tt),*])]
        $m:ident, $t:ident;
        { $($fns:tt)* }
        $($kernel:ident => $body:ident),*
    ) => {
        ccl_unit! {
            $m, $t;
            {
                fn ccl_combine_v(a: $v, b: $v, op: u32) -> $v {
                    if op == 0 {
                        a + b
                    } else if op == 1 {
                        $v::new([$(a.get($l).min(b.get($l))),*])
                    } else {
                        $v::new([$(a.get($l).max(b.get($l))),*])
                    }
                }

                /// The 16 bytes at `src` on every rank, combined lane by lane in rank order.
                fn ccl_reduce_v(src: Symmetric<$v>, op: u32, world: u32) -> $v {
                    let mut acc = load(src, 0);
                    for peer in 1..world {
                        acc = ccl_combine_v(acc, load(src, peer), op);
                    }
                    acc
                }

                $($fns)*
            }
            $($kernel => $body),*
        }
    };
    (
        @vector [scalar]
        $m:ident, $t:ident;
        { $($fns:tt)* }
        $($kernel:ident => $body:ident),*
    ) => {
        ccl_unit! {
            $m, $t;
            { $($fns)* }
            $($kernel => $body),*
        }
    };
    (
        $m:ident, $t:ident;
        { $($fns:tt)* }
        $($kernel:ident => $body:ident),* $(,)?
    ) => {
        #[allow(clippy::too_many_arguments)]
        #[iris::kernels(uses(crate::ccl::barrier))]
        pub(crate) mod $m {
                use iris::prelude::*;

                $($fns)*

                $(
                    #[kernel]
                    pub fn $kernel(
                        input: Symmetric<$t>,
                        output: Symmetric<$t>,
                        signals: Symmetric<u64>,
                        n: u64,
                        arg: u32,
                        me: u32,
                        world: u32,
                        epoch: u64,
                        timeout_ns: u64,
                    ) {
                        // Entry: every rank's earlier work (which wrote the inputs and
                        // last read the outputs) has finished.
                        let slot = block_idx_x();
                        if thread_idx_x() == 0 {
                            ccl_signal(signals, slot, epoch, me, world);
                        }
                        if ccl_wait(signals, slot, epoch, me, world, timeout_ns) == 0 {
                            $body(input, output, n, arg, me, world);
                            // Exit: the block's last thread publishes the block's reads and
                            // writes and waits until every rank's matching block did.
                            if ccl_block_done(signals, slot, me) {
                                ccl_barrier(signals, slot, epoch + 1, me, world, timeout_ns);
                            }
                        }
                    }
                )*
            }
    };
}
