//! Signal operations: `signal`, `put_signal`, `signal_wait_until` and the block forms
//! compile on every target to the orderings they promise (release signals, relaxed polls
//! at system scope and one acquire fence after them, a clock and a sleep in the wait); on the CPU a wait returns
//! the value it saw, and one that gives up (its limit passed, or the abort flag raised)
//! records why and what it waited for in the fault record.

use crate::common::cpu::*;
use crate::common::tools::*;
use crate::source::unit_from_source;
use iris_device::abi::peer_table::{self, WaitCmp, WaitFault};
use iris_device::abi::TargetKind;
use iris_device::compiler::{buildable, Target, ALL_TARGETS};
use std::ffi::c_void;

const SIGNALS: &str = r#"
pub fn send(src: *const u32, dst: Symmetric<u32>, n: u32, sig: Symmetric<u64>, peer: u32) {
    iris::put_signal(src, dst, n as usize, sig, 7, SignalOp::Set, peer);
    iris::signal(sig.add(1), 1, SignalOp::Add, peer);
}

pub fn send_block(src: *const u32, dst: Symmetric<u32>, n: u32, sig: Symmetric<u64>, peer: u32) {
    iris::put_signal_block(src, dst, n as usize, sig, 7, SignalOp::Add, peer);
    iris::signal_block(sig.add(1), 3, SignalOp::Set, peer);
}

pub fn wait(sig: Symmetric<u64>, want: u64, out: *mut u64) {
    let seen = iris::signal_wait_until(sig, Cmp::Ge, want);
    unsafe { *out = seen; }
    if iris::world_aborted(sig) {
        unsafe { *out.add(1) = 1; }
    }
}

pub fn wait_block(sig: Symmetric<u64>, want: u64, out: *mut u64) {
    let seen = iris::signal_wait_until_block(sig, Cmp::Eq, want);
    unsafe { *out.add(iris::thread_idx_x() as usize) = seen; }
}
"#;

#[test]
fn signals_are_release_waits_acquire_and_sleep_on_every_gpu_target() {
    let unit = unit_from_source("signals", SIGNALS);
    for &target in buildable(&ALL_TARGETS)
        .iter()
        .filter(|t| t.kind() != TargetKind::Cpu)
    {
        let out = compile(&unit, target);
        let name = target.name();
        let asm = &out.asm;
        let has = |needle: &str| asm.contains(needle);
        match target.kind() {
            TargetKind::Nvptx => {
                if nvptx_like_llvm22() {
                    assert!(has("st.release.sys.global.b64"), "{name}: no release store");
                    // The block form's threads read the signal once more (`Acquire`).
                    assert!(has("ld.acquire.sys.global.b64"), "{name}: no acquire read");
                    // The wait polls relaxed and fences once: no acquire load a poll.
                    let start = asm.find(".entry wait(").expect("the wait kernel");
                    let end = start + asm[start..].find("\n}").expect("its end");
                    let wait = &asm[start..end];
                    assert!(!wait.contains("ld.acquire"), "{name}: an acquire poll");
                    assert!(wait.contains("ld.relaxed.sys"), "{name}: no relaxed poll");
                    assert!(
                        wait.contains("fence.acq_rel.sys"),
                        "{name}: no acquire fence"
                    );
                } else {
                    // Relaxed accesses between fences (see `nvptx_like_llvm22`).
                    assert!(has("st.volatile.global.u64"), "{name}: no signal store");
                    assert!(has("fence.acq_rel.sys"), "{name}: no release/acquire fence");
                }
                assert!(
                    has("atom.release.sys.global.add.u64"),
                    "{name}: no release add"
                );
                // Relaxed volatile words (the abort flag, the record): `.volatile` is
                // `.relaxed.sys` on sm_70 and newer.
                assert!(
                    has("ld.volatile.global.b64") || has("ld.volatile.global.u64"),
                    "{name}: no abort-flag read"
                );
                assert!(has("nanosleep.u32"), "{name}: no back-off");
                assert!(has("%globaltimer"), "{name}: no clock");
                assert!(has("atom.relaxed.sys.global.cas.b64"), "{name}: no record");
                assert!(
                    has("fence.sc.sys"),
                    "{name}: the block forms fence before signalling"
                );
                assert!(has("bar.sync"), "{name}: the block forms meet at a barrier");
            }
            _ => {
                assert!(has("s_sleep"), "{name}: no back-off");
                assert!(has("s_memrealtime"), "{name}: no clock");
                assert!(
                    has("global_atomic_cmpswap_x2") || has("flat_atomic_cmpswap_x2"),
                    "{name}: no record"
                );
                assert!(
                    has("s_barrier"),
                    "{name}: the block forms meet at a barrier"
                );
                assert!(
                    has("buffer_wbl2")
                        || has("global_wb")
                        || has("buffer_wbinvl1")
                        || has("buffer_inv")
                        || has("global_inv"),
                    "{name}: no system-scope release or acquire"
                );
            }
        }
    }
}

/// One rank's table over `bases`, with the header words the signal operations read.
struct Table {
    words: Vec<u64>,
}

impl Table {
    fn new(bases: &[u64], me: u64, record: *mut u64, abort: *mut u64, limit_ns: u64) -> Self {
        let header = (peer_table::HEADER_BYTES / 8) as usize;
        let mut words = vec![0u64; header];
        let at = |i: i64| (header as i64 + i) as usize;
        words[at(peer_table::RANK_INDEX)] = me;
        words[at(peer_table::ABORT_FLAG_INDEX)] = abort as u64;
        words[at(peer_table::WAIT_LIMIT_INDEX)] = limit_ns;
        words[at(peer_table::ERROR_WORD_INDEX)] = record as u64;
        words[at(peer_table::WORLD_SIZE_INDEX)] = bases.len() as u64;
        words.extend_from_slice(bases);
        Table { words }
    }

    fn slots(&mut self, me: usize) -> [u64; 3] {
        let header = (peer_table::HEADER_BYTES / 8) as usize;
        let base = self.words[header + me];
        [base, base, self.words[header..].as_mut_ptr() as u64]
    }
}

/// Runs `wait` as rank 0 over `sig` with `want`; returns (out, record, how long).
fn run_wait(
    m: &CpuModule,
    sig: &mut [u64],
    want: u64,
    abort: u64,
    limit_ns: u64,
) -> (
    [u64; 2],
    [u64; peer_table::FAULT_RECORD_WORDS],
    std::time::Duration,
) {
    let mut record = [0u64; peer_table::FAULT_RECORD_WORDS];
    let mut flag = abort;
    let bases = [sig.as_mut_ptr() as u64];
    let mut table = Table::new(&bases, 0, record.as_mut_ptr(), &mut flag, limit_ns);
    let mut s = table.slots(0);
    let mut out = [0u64; 2];
    let (mut w, mut o) = (want, out.as_mut_ptr() as u64);
    let args: Vec<*mut c_void> = s
        .iter_mut()
        .map(arg)
        .chain([arg(&mut w), arg(&mut o)])
        .collect();
    let start = std::time::Instant::now();
    m.launch("wait", 1, 1, 0, &args);
    (out, record, start.elapsed())
}

#[test]
fn a_wait_returns_what_it_saw_and_one_that_gives_up_says_why_on_the_cpu() {
    let unit = unit_from_source("signals_cpu", SIGNALS);
    let m = CpuModule::load(&compile(&unit, Target::Cpu).object);
    // Satisfied: returns at once with the value, records nothing.
    let mut sig = vec![5u64, 0];
    let (out, record, _) = run_wait(&m, &mut sig, 4, 0, 1_000_000_000);
    assert_eq!(out, [5, 0]);
    assert_eq!(record, [0; peer_table::FAULT_RECORD_WORDS]);
    // Never satisfied, 20 ms limit: gives up after it and records what it waited for.
    let (out, record, took) = run_wait(&m, &mut sig, 9, 0, 20_000_000);
    assert_eq!(out, [5, 0], "returns the value it saw last");
    assert!(
        took >= std::time::Duration::from_millis(20),
        "gave up after {took:?}"
    );
    assert!(
        took < std::time::Duration::from_secs(5),
        "gave up after {took:?}"
    );
    assert_eq!(
        peer_table::decode_wait_fault(record[0]),
        Some(WaitFault::TimedOut)
    );
    assert_eq!(record[peer_table::FAULT_SIGNAL], sig.as_ptr() as u64);
    assert_eq!(record[peer_table::FAULT_SEEN], 5);
    assert_eq!(record[peer_table::FAULT_EXPECTED], 9);
    assert_eq!(
        WaitCmp::from_code(record[peer_table::FAULT_CMP]),
        Some(WaitCmp::Ge)
    );
    assert!(record[peer_table::FAULT_WAITED] >= 20_000_000);
    // The world aborted: gives up at once though the limit is an hour away.
    let (out, record, took) = run_wait(&m, &mut sig, 9, 1, 3_600_000_000_000);
    assert_eq!(out, [5, 1], "world_aborted says so");
    assert!(
        took < std::time::Duration::from_secs(5),
        "gave up after {took:?}"
    );
    assert_eq!(
        peer_table::decode_wait_fault(record[0]),
        Some(WaitFault::Aborted)
    );
}

#[test]
fn put_signal_moves_the_data_then_signals_on_the_cpu() {
    let unit = unit_from_source("signals_put", SIGNALS);
    let m = CpuModule::load(&compile(&unit, Target::Cpu).object);
    let mut record = [0u64; peer_table::FAULT_RECORD_WORDS];
    let mut flag = 0u64;
    let src: Vec<u32> = (100..110).collect();
    let mut dst = [vec![0u32; 10], vec![0u32; 10]];
    let mut sig = [vec![0u64; 2], vec![0u64; 2]];
    let dst_bases: Vec<u64> = dst.iter_mut().map(|v| v.as_mut_ptr() as u64).collect();
    let sig_bases: Vec<u64> = sig.iter_mut().map(|v| v.as_mut_ptr() as u64).collect();
    let mut td = Table::new(&dst_bases, 0, record.as_mut_ptr(), &mut flag, 1_000_000_000);
    let mut ts = Table::new(&sig_bases, 0, record.as_mut_ptr(), &mut flag, 1_000_000_000);
    for (kernel, threads, sig_after) in [("send", 1, [7u64, 1]), ("send_block", 4, [14, 3])] {
        let (mut d, mut s) = (td.slots(0), ts.slots(0));
        let (mut sp, mut n, mut peer) = (src.as_ptr() as u64, 10u32, 1u32);
        let mut args: Vec<*mut c_void> = vec![arg(&mut sp)];
        args.extend(d.iter_mut().map(arg));
        args.push(arg(&mut n));
        args.extend(s.iter_mut().map(arg));
        args.push(arg(&mut peer));
        m.launch(kernel, 1, threads, 0, &args);
        assert_eq!(dst[1], src, "{kernel}: rank 1 got the data");
        assert_eq!(dst[0], vec![0; 10], "{kernel}: rank 0 untouched");
        assert_eq!(sig[1], sig_after, "{kernel}: rank 1's signals");
        dst[1].iter_mut().for_each(|x| *x = 0);
    }
    assert_eq!(record[0], 0);
}
