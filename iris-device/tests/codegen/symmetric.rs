//! Symmetric memory on the CPU target: two ranks' copies of two allocations in one
//! process, each `Symmetric<T>` translated through its own table.

use crate::common::cpu::*;
use crate::cpu_run::cpu_module;
use std::ffi::c_void;

const SRC: &str = r#"
fn dev_read_second(p: Symmetric<u64>, peer: u32) -> u64 {
    iris::load(p.add(1), peer)
}

pub fn remote(a: Symmetric<u64>, b: Symmetric<u64>, local: *mut u64, peer: u32, me: u32) {
    // store / load through the peer's copy of `a`
    iris::store(a.add(me as usize), 100 + me as u64, peer);
    let seen = dev_read_second(a, peer);
    unsafe { *local.add(0) = seen; }
    // get: peer's a[3] -> local[1]; put: local[2] -> peer's b[0]
    iris::get(a.add(3), unsafe { local.add(1) }, peer);
    iris::put(unsafe { local.add(2) }, b, peer);
    // copy between two allocations: peer's a[4] -> my own b[5]
    iris::copy(a.add(4), b.add(5), peer, me);
    // atomics on the peer's b
    let old = iris::atomic_add(b.add(6), 5, peer, Ordering::Relaxed, Scope::System);
    unsafe { *local.add(3) = old; }
    let prev = iris::atomic_cas(b.add(7), 9, 10, peer, Ordering::AcqRel, Scope::System);
    unsafe { *local.add(4) = prev; }
    iris::atomic_max(b.add(8), 77, peer, Ordering::Relaxed, Scope::Device);
    iris::atomic_min(b.add(9), 3, peer, Ordering::Relaxed, Scope::Device);
    iris::atomic_xor(b.add(10), 0xff, peer, Ordering::Release, Scope::System);
    iris::atomic_store(b.add(11), 42, peer, Ordering::Release, Scope::System);
    let v = iris::atomic_load(b.add(11), peer, Ordering::Acquire, Scope::System);
    unsafe { *local.add(5) = v; }
    let x = iris::atomic_xchg(b.add(12), 1234, peer, Ordering::SeqCst, Scope::System);
    unsafe { *local.add(6) = x; }
    iris::atomic_sub(b.add(13), 1, peer, Ordering::SeqCst, Scope::Block);
    unsafe { *local.add(7) = *a.local(); }
}
"#;

#[test]
fn remote_operations_reach_the_peer() {
    let m = cpu_module("remote", SRC);
    // Two ranks, two allocations each of 16 u64.
    let mut a: Vec<Vec<u64>> = (0..2)
        .map(|r| (0..16).map(|i| r * 1000 + i).collect())
        .collect();
    let mut b: Vec<Vec<u64>> = (0..2)
        .map(|r| (0..16).map(|i| r * 2000 + i).collect())
        .collect();
    let a_bases: Vec<u64> = a.iter_mut().map(|v| v.as_mut_ptr() as u64).collect();
    let b_bases: Vec<u64> = b.iter_mut().map(|v| v.as_mut_ptr() as u64).collect();
    let mut local = vec![0u64; 8];
    local[2] = 555;
    // Rank 0 acts on rank 1.
    let (mut sa, mut ta) = SymSlots::new(&a_bases, 0);
    let (mut sb, mut tb) = SymSlots::new(&b_bases, 0);
    let (mut lp, mut peer, mut me) = (local.as_mut_ptr(), 1u32, 0u32);
    let mut args: Vec<*mut c_void> = Vec::new();
    sa.push(&mut ta, &mut args);
    sb.push(&mut tb, &mut args);
    args.extend([arg(&mut lp), arg(&mut peer), arg(&mut me)]);
    m.launch("remote", 1, 1, 0, &args);

    assert_eq!(a[1][0], 100, "store went to the peer's a[me]");
    assert_eq!(a[0][0], 0, "not to mine");
    assert_eq!(local[0], 1001, "load read the peer's a[1]");
    assert_eq!(local[1], 1003, "get read the peer's a[3]");
    assert_eq!(b[1][0], 555, "put wrote the peer's b[0]");
    assert_eq!(b[0][5], 1004, "copy: peer's a[4] into my b[5]");
    assert_eq!((local[3], b[1][6]), (2006, 2011), "atomic_add");
    assert_eq!(
        (local[4], b[1][7]),
        (2007, 2007),
        "atomic_cas failed: 2007 != 9"
    );
    assert_eq!(b[1][8], 2008, "atomic_max");
    assert_eq!(b[1][9], 3, "atomic_min");
    assert_eq!(b[1][10], 2010 ^ 0xff, "atomic_xor");
    assert_eq!((b[1][11], local[5]), (42, 42), "atomic_store / atomic_load");
    assert_eq!((local[6], b[1][12]), (2012, 1234), "atomic_xchg");
    assert_eq!(b[1][13], 2012, "atomic_sub");
    assert_eq!(local[7], 0, "local() is my own copy");
    assert_eq!(
        b[0][6..14],
        [6, 7, 8, 9, 10, 11, 12, 13],
        "my b untouched by atomics"
    );
}

const VECTORS: &str = r#"
pub fn vec_put(src: *const f32x4, dst: Symmetric<f32>, peer: u32) {
    let i = thread_idx_x() as usize;
    let v = unsafe { *src.add(i) };
    let w = v * f32x4::splat(2.0) + f32x4::new([1.0, 2.0, 3.0, 4.0]);
    iris::store(dst.cast::<f32x4>().add(i), w, peer);
    let back = iris::load(dst.cast::<f32x4>().add(i), peer);
    let lane = back.get(3);
    iris::store(dst.add(64 + i), lane, peer);
}
"#;

#[test]
fn vectors_through_a_peer() {
    let m = cpu_module("vec_put", VECTORS);
    #[repr(C, align(16))]
    struct Buf([f32; 128]);
    let src: Vec<[f32; 4]> = (0..8).map(|i| [i as f32, 1.0, 2.0, 3.0]).collect();
    let mut bufs = [Buf([0.0; 128]), Buf([0.0; 128])];
    let bases: Vec<u64> = bufs.iter_mut().map(|b| b.0.as_mut_ptr() as u64).collect();
    let (mut sym, mut table) = SymSlots::new(&bases, 0);
    let mut sp = src.as_ptr() as u64;
    let mut peer = 1u32;
    let mut args = vec![arg(&mut sp)];
    sym.push(&mut table, &mut args);
    args.push(arg(&mut peer));
    m.launch("vec_put", 1, 8, 0, &args);
    for i in 0..8 {
        let want = [i as f32 * 2.0 + 1.0, 4.0, 7.0, 10.0];
        assert_eq!(bufs[1].0[4 * i..4 * i + 4], want, "lane block {i}");
        assert_eq!(bufs[1].0[64 + i], 10.0);
    }
    assert!(bufs[0].0.iter().all(|&x| x == 0.0));
}
