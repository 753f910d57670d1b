//! Which kernels may spin: wait in a loop for another thread, block, kernel or rank.
//!
//! A kernel that spins can keep its blocks resident for as long as it waits, and on NVIDIA
//! GPUs a resident block holds its multiprocessor at the shared-memory/L1 split its kernel
//! asked for: a kernel that needs a large split (a GEMM's 192 KiB blocks) then cannot start
//! there until the waiting block leaves. The runtime loads kernels that spin with the
//! largest split (see `abi::KernelSpec::spins`), so a consumer waiting beside its producer
//! never takes the producer's multiprocessors.
//!
//! A function spins when one of its loops polls memory (an atomic load or compare-and-swap,
//! a volatile word load, the world's abort flag), sleeps (`nanosleep`), or calls a function
//! that does any of these; or when it calls a function that spins. Every signal wait and
//! barrier wait is such a loop once expanded, and so is a wait written by hand.

use super::{Expr, ExprKind, FunctionId, Intrinsic, Unit};

impl Unit {
    /// For each function, whether it (or a device function it calls) may spin.
    pub fn spinning(&self) -> Vec<bool> {
        let callees: Vec<Vec<FunctionId>> = self.functions.iter().map(|f| f.callees()).collect();
        // Whether each function (or one it calls) polls memory or sleeps anywhere.
        let own_polls = self.functions.iter().map(|f| {
            let mut found = false;
            f.body.walk(&mut |e| found |= is_poll(e));
            found
        });
        let polls = inherited(own_polls.collect(), &callees);
        // Whether one of its own loops polls, sleeps or calls a function that does.
        let own_spins = self.functions.iter().map(|f| {
            let mut looped = false;
            f.body.walk(&mut |e| {
                if matches!(
                    e.kind,
                    ExprKind::While { .. } | ExprKind::Loop { .. } | ExprKind::ForRange { .. }
                ) {
                    e.walk(&mut |inner| {
                        looped |= is_poll(inner)
                            || matches!(&inner.kind, ExprKind::Call { func, .. } if polls[*func]);
                    });
                }
            });
            looped
        });
        inherited(own_spins.collect(), &callees)
    }
}

/// `own` with each function's flag also set when a function it calls (`callees`) has it.
/// The call graph has no cycles: a pass per level settles it.
fn inherited(mut flags: Vec<bool>, callees: &[Vec<FunctionId>]) -> Vec<bool> {
    let mut changed = true;
    while changed {
        changed = false;
        for (i, calls) in callees.iter().enumerate() {
            if !flags[i] && calls.iter().any(|&c| flags[c]) {
                flags[i] = true;
                changed = true;
            }
        }
    }
    flags
}

/// Whether `e` itself polls memory or sleeps.
fn is_poll(e: &Expr) -> bool {
    matches!(
        e.kind,
        ExprKind::Intrinsic(
            Intrinsic::AtomicLoad { .. }
                | Intrinsic::AtomicCas { .. }
                | Intrinsic::WordLoad { .. }
                | Intrinsic::WordCas { .. }
                | Intrinsic::WorldAborted { .. }
                | Intrinsic::Nanosleep { .. }
        )
    )
}

#[cfg(test)]
mod tests {
    use crate::compiler::frontend::build_unit;

    /// Whether each kernel of `src` (functions `k*` are kernels, others device
    /// functions) spins, by name.
    fn spinning(src: &str) -> Vec<(String, bool)> {
        let file: syn::File = syn::parse_str(src).unwrap();
        let items: Vec<(syn::ItemFn, bool)> = file
            .items
            .into_iter()
            .map(|item| match item {
                syn::Item::Fn(f) => {
                    let kernel = f.sig.ident.to_string().starts_with('k');
                    (f, kernel)
                }
                _ => panic!("functions only"),
            })
            .collect();
        let unit = build_unit("t", &items).unwrap_or_else(|e| panic!("{:?}", e[0].message));
        unit.functions
            .iter()
            .zip(unit.spinning())
            .filter(|(f, _)| f.is_kernel)
            .map(|(f, spins)| (f.name.clone(), spins))
            .collect()
    }

    fn spins(src: &str, kernel: &str) -> bool {
        let all = spinning(src);
        all.iter()
            .find(|(name, _)| name == kernel)
            .unwrap_or_else(|| panic!("no kernel {kernel} in {all:?}"))
            .1
    }

    #[test]
    fn a_signal_wait_spins() {
        let src = "fn k(s: Symmetric<u64>) { signal_wait_until(s, Cmp::Ge, 1); }";
        assert!(spins(src, "k"));
    }

    #[test]
    fn a_hand_written_wait_spins_whether_it_polls_in_the_condition_or_the_body() {
        let cond = "fn k(f: Symmetric<u32>, me: u32) {
            while atomic_load(f, me, Ordering::Acquire, Scope::System) == 0 {}
        }";
        assert!(spins(cond, "k"));
        let body = "fn k(f: Symmetric<u32>, me: u32) {
            loop {
                if atomic_load(f, me, Ordering::Acquire, Scope::System) != 0 { break; }
            }
        }";
        assert!(spins(body, "k"));
        let sleeps = "fn k(n: u32) { for _i in 0..n { nanosleep(100); } }";
        assert!(spins(sleeps, "k"));
    }

    #[test]
    fn a_poll_through_a_device_function_or_a_wait_in_one_spins() {
        let src = "
            fn ready(f: Symmetric<u32>, me: u32) -> bool {
                atomic_load(f, me, Ordering::Acquire, Scope::System) != 0
            }
            fn wait(f: Symmetric<u32>, me: u32) { while !ready(f, me) {} }
            fn k_polls(f: Symmetric<u32>, me: u32) { while !ready(f, me) {} }
            fn k_calls(f: Symmetric<u32>, me: u32) { wait(f, me); }
            fn k_once(f: Symmetric<u32>, me: u32, out: *mut bool) {
                unsafe { *out = ready(f, me); }
            }";
        let all = spinning(src);
        let get = |n: &str| all.iter().find(|(name, _)| name == n).unwrap().1;
        assert!(get("k_polls"), "{all:?}");
        assert!(get("k_calls"), "{all:?}");
        assert!(
            !get("k_once"),
            "one load outside a loop is no wait: {all:?}"
        );
    }

    #[test]
    fn loops_that_only_compute_store_or_add_do_not_spin() {
        let src = "fn k(p: *mut f32, c: Symmetric<u32>, n: u32, me: u32) {
            let mut i = 0u32;
            while i < n {
                unsafe { *p.add(i as usize) = 1.0; }
                atomic_add(c, 1, me, Ordering::Relaxed, Scope::Device);
                i += 1;
            }
            for j in 0..n { iris::store(c.add(j as usize), j, me); }
            let seen = atomic_load(c, me, Ordering::Acquire, Scope::System);
            unsafe { *p = seen as f32; }
        }";
        assert!(!spins(src, "k"));
    }
}
