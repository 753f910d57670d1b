//! Signals: `signal`, `put_signal`, `signal_wait_until` and their block forms, written
//! once here in the kernel language itself and expanded at each call (the comparison and
//! the operation are constants, so each call gets the code of its own); `world_aborted`;
//! and the few intrinsics that expansion needs (`__iris_*`: header words of a peer table
//! and `u64` words at raw addresses), which only this file's expansions name.
//!
//! The wait (see `wait_tokens`): `Relaxed` polls of this rank's copy (the rank is the
//! table's header word), back to back for the first polls, then with `nanosleep` between
//! them, checking the world's abort flag (host memory: once a millisecond a thread), the
//! rank's fault record (once a wait or a peer check failed, later waits give up at once)
//! and the device clock against the wait limit (header words, see
//! [`crate::abi::peer_table`]); after the last poll one `Acquire`
//! fence (an acquire load a poll would invalidate NVIDIA's L1, or AMD's L2 with
//! `buffer_inv`, at every poll). A wait that gives up swaps its error code into the fault
//! record's error word and, if it was the first, writes what it waited for into the
//! record's other words, which the host reports.

use super::super::kernel_ir::{Expr, ExprKind, Intrinsic, Scalar, Type};
use super::super::CompileError;
use super::builder::FnBuilder;
use super::calls::operands;
use crate::abi::peer_table::{
    encode_wait_fault, WaitCmp, WaitFault, ABORT_FLAG_INDEX, ERROR_WORD_INDEX, FAULT_CMP,
    FAULT_EXPECTED, FAULT_SEEN, FAULT_SIGNAL, FAULT_THREAD, FAULT_WAITED, RANK_INDEX,
    WAIT_LIMIT_INDEX,
};
use proc_macro2::{Span, TokenStream};
use quote::quote_spanned;
use syn::spanned::Spanned;

/// Polls that go back to back before a wait starts to sleep between polls.
const EAGER_POLLS: u32 = 4096;
/// Elements a one-thread `put_signal` moves per step.
const UNROLL: usize = 8;
/// Nanoseconds a wait sleeps between later polls.
const BACKOFF_NS: u32 = 128;
/// Nanoseconds between a waiting thread's reads of the world's abort flag. The flag is
/// host memory, read across the bus: read at every poll by many waiting threads, those
/// reads slow the device (on an H100 a fused GEMM whose 128 waiting blocks did so took
/// 27 ms instead of 1: docs/performance.md); an abort is still seen within a millisecond.
const ABORT_CHECK_NS: u64 = 1_000_000;

impl FnBuilder<'_> {
    /// A signal operation `name(..)`.
    pub fn signal_call(
        &mut self,
        name: &str,
        c: &syn::ExprCall,
        span: Span,
    ) -> Result<Expr, CompileError> {
        let a: Vec<&syn::Expr> = c.args.iter().collect();
        let tokens = match name {
            "signal" | "signal_block" => {
                self.arity(c, name, 4)?;
                let op = op_arg(a[2])?;
                let (sig, value, peer) = (a[0], a[1], a[3]);
                let signal = signal_tokens(span, op);
                if name == "signal" {
                    quote_spanned! {span=> {
                        let __iris_sig: Symmetric<u64> = #sig;
                        let __iris_value: u64 = #value;
                        let __iris_peer: u32 = #peer;
                        #signal
                    }}
                } else {
                    let thread = thread_tokens(span);
                    quote_spanned! {span=> {
                        let __iris_sig: Symmetric<u64> = #sig;
                        let __iris_value: u64 = #value;
                        let __iris_peer: u32 = #peer;
                        iris::sync_threads();
                        if #thread == 0 {
                            iris::fence(Ordering::SeqCst, Scope::System);
                            #signal
                        }
                    }}
                }
            }
            "put_signal" | "put_signal_block" => {
                self.arity(c, name, 7)?;
                let op = op_arg(a[5])?;
                let (src, dst, n, sig, value, peer) = (a[0], a[1], a[2], a[3], a[4], a[6]);
                let signal = signal_tokens(span, op);
                let block = name == "put_signal_block";
                let (first, step) = if block {
                    let thread = thread_tokens(span);
                    (
                        quote_spanned! {span=> (#thread) as usize },
                        quote_spanned! {span=> (iris::block_dim_x() * iris::block_dim_y() * iris::block_dim_z()) as usize },
                    )
                } else {
                    (
                        quote_spanned! {span=> 0usize },
                        quote_spanned! {span=> 1usize },
                    )
                };
                let finish = if block {
                    let thread = thread_tokens(span);
                    quote_spanned! {span=>
                        iris::sync_threads();
                        if #thread == 0 {
                            iris::fence(Ordering::SeqCst, Scope::System);
                            #signal
                        }
                    }
                } else {
                    signal
                };
                // One thread: eight loads in flight before their eight remote stores (the
                // compiler cannot reorder a load past a store that may alias it).
                let unrolled = if block {
                    quote_spanned! {span=> }
                } else {
                    let lanes: Vec<proc_macro2::Ident> = (0..UNROLL)
                        .map(|k| proc_macro2::Ident::new(&format!("__iris_v{k}"), span))
                        .collect();
                    let offsets = 0..UNROLL;
                    let offsets2 = 0..UNROLL;
                    let lanes2 = lanes.clone();
                    quote_spanned! {span=>
                        while __iris_i + #UNROLL <= __iris_n {
                            #( let #lanes = unsafe { *__iris_src.add(__iris_i + #offsets) }; )*
                            #( iris::store(__iris_dst.add(__iris_i + #offsets2), #lanes2, __iris_peer); )*
                            __iris_i += #UNROLL;
                        }
                    }
                };
                quote_spanned! {span=> {
                    let __iris_src = #src;
                    let __iris_dst = #dst;
                    let __iris_n: usize = #n;
                    let __iris_sig: Symmetric<u64> = #sig;
                    let __iris_value: u64 = #value;
                    let __iris_peer: u32 = #peer;
                    let mut __iris_i: usize = #first;
                    #unrolled
                    while __iris_i < __iris_n {
                        iris::put(__iris_src.add(__iris_i), __iris_dst.add(__iris_i), __iris_peer);
                        __iris_i += #step;
                    }
                    #finish
                }}
            }
            "signal_wait_until" | "signal_wait_until_block" => {
                self.arity(c, name, 3)?;
                let cmp = cmp_arg(a[1])?;
                let (sig, value) = (a[0], a[2]);
                let wait = wait_tokens(span, cmp);
                self.waits_on_signals = true;
                let me = header(span, RANK_INDEX);
                if name == "signal_wait_until" {
                    quote_spanned! {span=> {
                        let __iris_sig: Symmetric<u64> = #sig;
                        let __iris_want: u64 = #value;
                        #wait
                    }}
                } else {
                    let thread = thread_tokens(span);
                    quote_spanned! {span=> {
                        let __iris_sig: Symmetric<u64> = #sig;
                        let __iris_want: u64 = #value;
                        if #thread == 0 {
                            #wait;
                        }
                        iris::sync_threads();
                        iris::atomic_load(__iris_sig, (#me) as u32, Ordering::Acquire, Scope::System)
                    }}
                }
            }
            _ => return self.signal_intrinsic(name, c, span),
        };
        let expr: syn::Expr = syn::parse2(tokens).map_err(|e| {
            CompileError::new(span, format!("internal error: expanding `{name}`: {e}"))
        })?;
        self.expr_tree(&expr)
    }

    /// `world_aborted` and the internal `__iris_*` intrinsics.
    fn signal_intrinsic(
        &mut self,
        name: &str,
        c: &syn::ExprCall,
        span: Span,
    ) -> Result<Expr, CompileError> {
        let u64t = Type::Scalar(Scalar::U64);
        match name {
            "world_aborted" => {
                self.arity(c, name, 1)?;
                let args = self.args(c)?;
                self.symmetric_elem(&args[0])?;
                let [sym] = operands(args);
                let op = Intrinsic::WorldAborted { sym };
                Ok(self.expr(ExprKind::Intrinsic(op), Type::Scalar(Scalar::Bool), span))
            }
            "__iris_header" => {
                self.arity(c, name, 2)?;
                let index = int_literal(&c.args[1])?;
                let sym = self.expr_tree(&c.args[0])?;
                self.symmetric_elem(&sym)?;
                let op = Intrinsic::HeaderWord {
                    sym: Box::new(sym),
                    index,
                };
                Ok(self.expr(ExprKind::Intrinsic(op), u64t, span))
            }
            "__iris_word_load" => {
                self.arity(c, name, 1)?;
                let args = self.args(c)?;
                self.expect(&args[0], &u64t)?;
                let [addr] = operands(args);
                Ok(self.expr(
                    ExprKind::Intrinsic(Intrinsic::WordLoad { addr }),
                    u64t,
                    span,
                ))
            }
            "__iris_word_store" => {
                self.arity(c, name, 2)?;
                let args = self.args(c)?;
                for a in &args {
                    self.expect(a, &u64t)?;
                }
                let [addr, value] = operands(args);
                let op = Intrinsic::WordStore { addr, value };
                Ok(self.expr(ExprKind::Intrinsic(op), Type::Unit, span))
            }
            "__iris_word_cas" => {
                self.arity(c, name, 3)?;
                let args = self.args(c)?;
                for a in &args {
                    self.expect(a, &u64t)?;
                }
                let [addr, current, new] = operands(args);
                let op = Intrinsic::WordCas { addr, current, new };
                Ok(self.expr(ExprKind::Intrinsic(op), u64t, span))
            }
            _ => Err(super::calls::unknown_intrinsic(name, span)),
        }
    }
}

/// `SignalOp::Set` / `SignalOp::Add` (any prefix): whether it adds.
fn op_arg(e: &syn::Expr) -> Result<bool, CompileError> {
    super::atomics::constant_arg(
        e,
        "SignalOp",
        &[("Set", false), ("Add", true)],
        "the signal operation must be written as a constant: `SignalOp::Set` or `SignalOp::Add`",
    )
}

/// `Cmp::Ge` (any prefix) as its code.
fn cmp_arg(e: &syn::Expr) -> Result<WaitCmp, CompileError> {
    super::atomics::constant_arg(
        e,
        "Cmp",
        &[
            ("Eq", WaitCmp::Eq),
            ("Ne", WaitCmp::Ne),
            ("Ge", WaitCmp::Ge),
            ("Gt", WaitCmp::Gt),
            ("Le", WaitCmp::Le),
            ("Lt", WaitCmp::Lt),
        ],
        "the comparison must be written as a constant: `Cmp::Eq`, `Ne`, `Ge`, `Gt`, `Le` or `Lt`",
    )
}

/// An integer literal, perhaps negated (`-8`).
fn int_literal(e: &syn::Expr) -> Result<i64, CompileError> {
    let (negative, lit) = match e {
        syn::Expr::Unary(u) if matches!(u.op, syn::UnOp::Neg(_)) => (true, &*u.expr),
        other => (false, other),
    };
    match lit {
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(i),
            ..
        }) => i
            .base10_parse::<i64>()
            .map(|v| if negative { -v } else { v })
            .map_err(|e| CompileError::new(i.span(), e.to_string())),
        other => Err(CompileError::new(
            other.span(),
            "the header index must be an integer literal",
        )),
    }
}

/// `__iris_header(__iris_sig, index)`.
fn header(span: Span, index: i64) -> TokenStream {
    let index = proc_macro2::Literal::i64_unsuffixed(index);
    quote_spanned! {span=> iris::__iris_header(__iris_sig, #index) }
}

/// The block-linear index of the calling thread.
fn thread_tokens(span: Span) -> TokenStream {
    quote_spanned! {span=>
        (iris::thread_idx_x() + iris::thread_idx_y() * iris::block_dim_x()
            + iris::thread_idx_z() * iris::block_dim_x() * iris::block_dim_y())
    }
}

/// The signal itself, on `__iris_sig`, `__iris_value`, `__iris_peer`.
fn signal_tokens(span: Span, add: bool) -> TokenStream {
    if add {
        quote_spanned! {span=>
            iris::atomic_add(__iris_sig, __iris_value, __iris_peer, Ordering::Release, Scope::System);
        }
    } else {
        quote_spanned! {span=>
            iris::atomic_store(__iris_sig, __iris_value, __iris_peer, Ordering::Release, Scope::System);
        }
    }
}

/// The wait, on `__iris_sig` and `__iris_want`, as a block whose value is the value seen.
fn wait_tokens(span: Span, cmp: WaitCmp) -> TokenStream {
    let done = match cmp {
        WaitCmp::Eq => quote_spanned! {span=> __iris_seen == __iris_want },
        WaitCmp::Ne => quote_spanned! {span=> __iris_seen != __iris_want },
        WaitCmp::Ge => quote_spanned! {span=> __iris_seen >= __iris_want },
        WaitCmp::Gt => quote_spanned! {span=> __iris_seen > __iris_want },
        WaitCmp::Le => quote_spanned! {span=> __iris_seen <= __iris_want },
        WaitCmp::Lt => quote_spanned! {span=> __iris_seen < __iris_want },
    };
    let me = header(span, RANK_INDEX);
    let abort = header(span, ABORT_FLAG_INDEX);
    let limit = header(span, WAIT_LIMIT_INDEX);
    let record = header(span, ERROR_WORD_INDEX);
    let timed_out = encode_wait_fault(WaitFault::TimedOut);
    let aborted = encode_wait_fault(WaitFault::Aborted);
    let cmp_code = cmp as u64;
    let abort_every = ABORT_CHECK_NS;
    let word = |i: usize| (i * 8) as u64;
    let (w_signal, w_seen, w_expected, w_cmp, w_waited, w_thread) = (
        word(FAULT_SIGNAL),
        word(FAULT_SEEN),
        word(FAULT_EXPECTED),
        word(FAULT_CMP),
        word(FAULT_WAITED),
        word(FAULT_THREAD),
    );
    quote_spanned! {span=> {
        let __iris_me: u32 = (#me) as u32;
        let mut __iris_seen: u64 = iris::atomic_load(__iris_sig, __iris_me, Ordering::Relaxed, Scope::System);
        if !(#done) {
            let __iris_abort: u64 = #abort;
            let __iris_limit: u64 = #limit;
            let __iris_record: u64 = #record;
            let __iris_start: u64 = iris::global_timer_ns();
            let mut __iris_polls: u32 = 0u32;
            let mut __iris_abort_at: u64 = 0u64;
            loop {
                __iris_seen = iris::atomic_load(__iris_sig, __iris_me, Ordering::Relaxed, Scope::System);
                if #done {
                    break;
                }
                __iris_polls += 1u32;
                if __iris_polls > #EAGER_POLLS {
                    if iris::__iris_word_load(__iris_record) != 0u64 {
                        // An earlier wait (or a peer check) of this rank failed.
                        break;
                    }
                    let mut __iris_code: u64 = 0u64;
                    let __iris_waited: u64 = iris::global_timer_ns() - __iris_start;
                    // The abort flag (host memory) once every ABORT_CHECK_NS.
                    if __iris_abort != 0u64 && __iris_waited >= __iris_abort_at {
                        __iris_abort_at = __iris_waited + #abort_every;
                        if iris::__iris_word_load(__iris_abort) != 0u64 {
                            __iris_code = #aborted;
                        }
                    }
                    if __iris_code == 0u64 {
                        if __iris_waited >= __iris_limit {
                            __iris_code = #timed_out;
                        }
                    }
                    if __iris_code != 0u64 {
                        if iris::__iris_word_cas(__iris_record, 0u64, __iris_code) == 0u64 {
                            iris::__iris_word_store(__iris_record + #w_signal, __iris_sig.local() as u64);
                            iris::__iris_word_store(__iris_record + #w_seen, __iris_seen);
                            iris::__iris_word_store(__iris_record + #w_expected, __iris_want);
                            iris::__iris_word_store(__iris_record + #w_cmp, #cmp_code);
                            iris::__iris_word_store(__iris_record + #w_waited, __iris_waited);
                            iris::__iris_word_store(
                                __iris_record + #w_thread,
                                (iris::block_idx_x() as u64) | ((iris::thread_idx_x() as u64) << 32u64),
                            );
                        }
                        break;
                    }
                    iris::nanosleep(#BACKOFF_NS);
                }
            }
        }
        // The polls are relaxed; one acquire fence after them makes the last one an
        // acquire (an acquire load a poll would invalidate caches at every poll).
        iris::fence(Ordering::Acquire, Scope::System);
        __iris_seen
    }}
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The wait reads the world's abort flag (host memory) only when the clock says a
    /// check is due, once every `ABORT_CHECK_NS`, never at every poll: read at every poll
    /// by many waiting threads it slowed a GEMM beside them 25-30 times.
    #[test]
    fn the_wait_reads_the_abort_flag_once_every_check_interval() {
        for cmp in [WaitCmp::Eq, WaitCmp::Ge] {
            let code = wait_tokens(Span::call_site(), cmp).to_string();
            let read = "__iris_word_load (__iris_abort)";
            assert_eq!(code.matches(read).count(), 1, "one abort read:\n{code}");
            let gate = code
                .find("__iris_waited >= __iris_abort_at")
                .unwrap_or_else(|| panic!("no clock gate before the abort read:\n{code}"));
            let next = code
                .find(&format!(
                    "__iris_abort_at = __iris_waited + {ABORT_CHECK_NS}u64"
                ))
                .unwrap_or_else(|| panic!("the next check is not set:\n{code}"));
            let at = code.find(read).unwrap();
            assert!(
                gate < next && next < at,
                "the read is not behind the gate:\n{code}"
            );
        }
    }
}
