//! Peer checks: a unit built with them compares every translation's peer with the world
//! size in the table's header and records a bad peer with a compare-and-swap; without
//! them the code has neither. The parameter ABI is the same either way, and on the CPU a
//! bad peer touches no rank's data.

use crate::common::cpu::*;
use crate::common::tools::*;
use crate::source::unit_from_source;
use iris_device::abi::peer_table;
use iris_device::abi::TargetKind;
use iris_device::compiler::kernel_ir::Unit;
use iris_device::compiler::{buildable, Target, ALL_TARGETS};
use std::ffi::c_void;

const PUT: &str = r#"
pub fn put_one(src: *const u32, dst: Symmetric<u32>, peer: u32) {
    iris::put(src, dst, peer);
}
"#;

/// Every remote operation, each through `peer`.
const EVERY_OP: &str = r#"
pub fn every_op(a: Symmetric<u64>, b: Symmetric<u64>, local: *mut u64, peer: u32) {
    iris::store(a, 11, peer);
    unsafe { *local.add(1) = iris::load(a.add(1), peer); }
    iris::get(a.add(2), unsafe { local.add(2) }, peer);
    iris::put(local, b, peer);
    iris::copy(a.add(3), b.add(3), peer, peer);
    iris::atomic_add(b.add(4), 5, peer, Ordering::Relaxed, Scope::System);
    iris::atomic_cas(b.add(5), 1005, 6, peer, Ordering::AcqRel, Scope::System);
    iris::atomic_store(b.add(6), 42, peer, Ordering::Release, Scope::System);
    unsafe { *local.add(3) = iris::atomic_load(b.add(6), peer, Ordering::Acquire, Scope::System); }
    iris::atomic_xchg(b.add(7), 9, peer, Ordering::SeqCst, Scope::Device);
}
"#;

fn unit(name: &str, src: &str, peer_checks: bool) -> Unit {
    let mut unit = unit_from_source(name, src);
    unit.peer_checks = peer_checks;
    unit
}

/// The lines of an assembly listing that compare (AMD: `*_cmp_*`; PTX: `setp.*`).
fn compares(asm: &str, kind: TargetKind) -> Vec<&str> {
    let needle = match kind {
        TargetKind::Nvptx => "setp.",
        _ => "_cmp_",
    };
    asm.lines().filter(|l| l.contains(needle)).collect()
}

/// The compare-and-swap instructions of an assembly listing.
fn swaps(asm: &str, kind: TargetKind) -> Vec<&str> {
    let needle = match kind {
        TargetKind::Nvptx => "atom.relaxed.sys.global.cas.b64",
        _ => "atomic_cmpswap_x2",
    };
    asm.lines().filter(|l| l.contains(needle)).collect()
}

#[test]
fn checked_kernels_compare_and_record_on_every_gpu_target() {
    let on = unit("put_checked", PUT, true);
    let off = unit("put_plain", PUT, false);
    for &target in buildable(&ALL_TARGETS)
        .iter()
        .filter(|t| t.kind() != TargetKind::Cpu)
    {
        let name = target.name();
        let (checked, plain) = (compile(&on, target), compile(&off, target));
        for (out, what) in [(&checked, "checked"), (&plain, "plain")] {
            assert!(out.opt.contains("store i32"), "{name} {what}: no store");
        }
        assert!(checked.opt.contains("icmp ugt i64") || checked.opt.contains("icmp ult i64"));
        assert!(
            checked.opt.contains("i64 -32"),
            "{name}: no sink\n{}",
            checked.opt
        );
        let asm = |out: &Out| match target.kind() {
            TargetKind::Nvptx => ptx(out),
            _ => out.asm.clone(),
        };
        let (on_asm, off_asm) = (asm(&checked), asm(&plain));
        let kind = target.kind();
        assert!(
            !compares(&on_asm, kind).is_empty(),
            "{name}: no compare\n{on_asm}"
        );
        assert!(
            !swaps(&on_asm, kind).is_empty(),
            "{name}: no swap\n{on_asm}"
        );
        assert!(
            compares(&off_asm, kind).is_empty(),
            "{name}: plain compares\n{off_asm}"
        );
        assert!(
            swaps(&off_asm, kind).is_empty(),
            "{name}: plain swaps\n{off_asm}"
        );
        assert!(!plain.opt.contains("cmpxchg") && !plain.opt.contains(".cas."));
    }
}

#[test]
fn checks_leave_the_parameter_abi_unchanged() {
    let on = unit("abi_checked", PUT, true);
    let off = unit("abi_plain", PUT, false);
    for target in buildable(&[Target::Gfx90a, Target::Gfx942, Target::Gfx950]) {
        let sizes = |u: &Unit| amdgpu_arg_sizes(&notes(&compile(u, target).object), "put_one");
        let expected = vec![8, 8, 8, 8, 4];
        assert_eq!(sizes(&on), expected, "{}", target.name());
        assert_eq!(sizes(&off), expected, "{}", target.name());
    }
    for target in [Target::Sm80, Target::Sm90] {
        let params = |u: &Unit| ptx_params(&ptx(&compile(u, target)), "put_one");
        assert_eq!(params(&on), params(&off), "{}", target.name());
        assert_eq!(params(&on).len(), 5, "{}", target.name());
    }
}

/// One rank's table of an allocation: the header, then one entry per rank.
struct Table {
    words: Vec<u64>,
}

impl Table {
    fn new(bases: &[u64], error_word: *mut u64) -> Self {
        let header = (peer_table::HEADER_BYTES / 8) as usize;
        let mut words = vec![0; header];
        words[header - 2] = error_word as u64;
        words[header - 1] = bases.len() as u64;
        words.extend_from_slice(bases);
        Table { words }
    }

    /// The slots of rank `me`'s `Symmetric<u64>` over this table.
    fn slots(&mut self, me: usize) -> [u64; 3] {
        let header = (peer_table::HEADER_BYTES / 8) as usize;
        let base = self.words[header + me];
        let entry0 = self.words[header..].as_mut_ptr() as u64;
        [base, base, entry0]
    }
}

/// What a run of `every_op` left.
struct AfterEveryOp {
    error_word: u64,
    /// Both ranks' copies of `a`.
    a: Vec<Vec<u64>>,
    /// Both ranks' copies of `b`.
    b: Vec<Vec<u64>>,
    /// Rank 0's local buffer.
    local: Vec<u64>,
}

/// Runs `every_op` as rank 0 of two ranks with `peer`.
fn run_every_op(m: &CpuModule, peer: u32) -> AfterEveryOp {
    let mut a: Vec<Vec<u64>> = (0..2)
        .map(|r| (0..8).map(|i| r * 100 + i).collect())
        .collect();
    let mut b: Vec<Vec<u64>> = (0..2)
        .map(|r| (0..8).map(|i| 1000 + r * 100 + i).collect())
        .collect();
    let mut error_word = 0u64;
    let a_bases: Vec<u64> = a.iter_mut().map(|v| v.as_mut_ptr() as u64).collect();
    let b_bases: Vec<u64> = b.iter_mut().map(|v| v.as_mut_ptr() as u64).collect();
    let mut ta = Table::new(&a_bases, &mut error_word);
    let mut tb = Table::new(&b_bases, &mut error_word);
    let mut local = vec![777u64, 0, 0, 0];
    let (mut sa, mut sb) = (ta.slots(0), tb.slots(0));
    let (mut lp, mut p) = (local.as_mut_ptr() as u64, peer);
    let mut args: Vec<*mut c_void> = Vec::new();
    for s in sa.iter_mut().chain(sb.iter_mut()) {
        args.push(arg(s));
    }
    args.extend([arg(&mut lp), arg(&mut p)]);
    m.launch("every_op", 1, 1, 0, &args);
    // The sinks took the stores, never an entry.
    let header = (peer_table::HEADER_BYTES / 8) as usize;
    assert_eq!(&ta.words[header..], &a_bases[..]);
    assert_eq!(&tb.words[header..], &b_bases[..]);
    AfterEveryOp {
        error_word,
        a,
        b,
        local,
    }
}

#[test]
fn a_bad_peer_is_recorded_and_touches_no_rank_on_the_cpu() {
    let on = unit("every_op_checked", EVERY_OP, true);
    let m = CpuModule::load(&compile(&on, Target::Cpu).object);
    // In range: every operation reaches rank 1, and nothing is recorded.
    let AfterEveryOp {
        error_word: word,
        a,
        b,
        local,
    } = run_every_op(&m, 1);
    assert_eq!(word, 0, "an in-range peer records nothing");
    assert_eq!(a[1][0], 11, "store");
    assert_eq!(local[1], 101, "load");
    assert_eq!(local[2], 102, "get");
    assert_eq!(b[1][0], 777, "put");
    assert_eq!(b[1][3], 103, "copy");
    assert_eq!(b[1][4], 1109, "atomic_add");
    assert_eq!(b[1][5], 1105, "atomic_cas (1105 != 1005: no swap)");
    assert_eq!((b[1][6], local[3]), (42, 42), "atomic_store / atomic_load");
    assert_eq!(b[1][7], 9, "atomic_xchg");
    // Out of range (the world size, and -1 as a u32): recorded, and no rank's data moves.
    for bad in [2u32, u32::MAX] {
        let AfterEveryOp {
            error_word, a, b, ..
        } = run_every_op(&m, bad);
        let decoded = peer_table::decode_error(error_word);
        assert_eq!(decoded, Some((bad, 2)), "peer {bad}");
        for r in 0..2u64 {
            let fresh_a: Vec<u64> = (0..8).map(|i| r * 100 + i).collect();
            let fresh_b: Vec<u64> = (0..8).map(|i| 1000 + r * 100 + i).collect();
            assert_eq!(a[r as usize], fresh_a, "peer {bad}: rank {r}'s a changed");
            assert_eq!(b[r as usize], fresh_b, "peer {bad}: rank {r}'s b changed");
        }
    }
}

#[test]
fn the_first_error_wins() {
    let on = unit("first_error", PUT, true);
    let m = CpuModule::load(&compile(&on, Target::Cpu).object);
    let mut copy = vec![5u32; 2];
    let mut error_word = 0u64;
    let bases = [copy.as_mut_ptr() as u64];
    let mut table = Table::new(&bases, &mut error_word);
    let header = (peer_table::HEADER_BYTES / 8) as usize;
    let mut src_value = 9u32;
    for peer in [3u32, 7] {
        let mut src = &mut src_value as *mut u32 as u64;
        let (mut ptr, mut base, mut t) = (
            bases[0],
            bases[0],
            table.words[header..].as_mut_ptr() as u64,
        );
        let mut p = peer;
        let args = [
            arg(&mut src),
            arg(&mut ptr),
            arg(&mut base),
            arg(&mut t),
            arg(&mut p),
        ];
        m.launch("put_one", 1, 1, 0, &args);
    }
    assert_eq!(peer_table::decode_error(error_word), Some((3, 1)));
    assert_eq!(copy, vec![5, 5], "the copy is untouched");
    let sink = (header as i64 + peer_table::SINK_INDEX) as usize;
    assert_eq!(table.words[sink] as u32, 9, "the store went to the sink");
}
