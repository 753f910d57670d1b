//! Kernels built as IR by hand, shared by the tests.

use crate::common::ir::*;
use iris_device::compiler::kernel_ir::*;

/// The all-gather kernel of the design: each thread stores its element into every peer.
pub fn all_gather() -> Unit {
    let mut f = Func::kernel("all_gather");
    let input = f.param("input", t::ptr(t::f32()));
    let out = f.param("out", t::sym(t::f32()));
    let n = f.param("n", t::u64());
    let me = f.param("me", t::u32());
    let world = f.param("world", t::u32());
    let (i, iv) = f.local("i", t::u64());
    let (v, vv) = f.local("v", t::f32());
    let (peer, peerv) = f.local("peer", t::u32());
    let idx = bin(
        BinaryOp::Add,
        bin(BinaryOp::Mul, cast(me, t::u64()), n.clone()),
        iv.clone(),
    );
    let body = stmts(vec![
        let_(i, cast(global_id(), t::u64())),
        s(if_(
            bin(BinaryOp::Lt, iv.clone(), n),
            stmts(vec![
                let_(v, deref(ptr_add(input, iv))),
                s(for_range(
                    peer,
                    int(0, t::u32()),
                    world,
                    false,
                    stmts(vec![s(intr(
                        Op::RemoteStore,
                        vec![sym_add(out, idx), vv, peerv],
                        t::unit(),
                    ))]),
                )),
            ]),
            None,
        )),
    ]);
    unit("all_gather", vec![f.finish(body)])
}

/// `i = global id as u64; if i < n { body(i) }` as a kernel of one unit.
pub fn guarded_kernel(
    name: &str,
    params: &[(&str, Type)],
    body: impl FnOnce(&[Expr], Expr) -> Vec<Stmt>,
) -> Unit {
    let mut f = Func::kernel(name);
    let ps: Vec<Expr> = params.iter().map(|(n, t)| f.param(n, t.clone())).collect();
    let n = f.param("n", t::u64());
    let (i, iv) = f.local("i", t::u64());
    let inner = body(&ps, iv.clone());
    let body = stmts(vec![
        let_(i, cast(global_id(), t::u64())),
        s(if_(bin(BinaryOp::Lt, iv, n), stmts(inner), None)),
    ]);
    unit(name, vec![f.finish(body)])
}

/// `*dst.add(i) = *src.add(i)` on `f32x4`.
pub fn vector_copy() -> Unit {
    let v = t::vec("f32x4");
    guarded_kernel(
        "vector_copy",
        &[("src", t::ptr(v.clone())), ("dst", t::ptr(v))],
        |p, i| {
            vec![s(assign(
                Place::Deref(ptr_add(p[1].clone(), i.clone())),
                deref(ptr_add(p[0].clone(), i)),
            ))]
        },
    )
}

/// `store(dst.add(i), *src.add(i), peer)` on `f32x4`: a translated vector store.
pub fn vector_put() -> Unit {
    let v = t::vec("f32x4");
    guarded_kernel(
        "vector_put",
        &[
            ("src", t::ptr(v.clone())),
            ("dst", t::sym(v)),
            ("peer", t::u32()),
        ],
        |p, i| {
            vec![s(intr(
                Op::RemoteStore,
                vec![
                    sym_add(p[1].clone(), i.clone()),
                    deref(ptr_add(p[0].clone(), i)),
                    p[2].clone(),
                ],
                t::unit(),
            ))]
        },
    )
}

/// `*dst.add(i) = load(src.add(i), peer)` on `f32x4`: a translated vector load.
pub fn vector_get() -> Unit {
    let v = t::vec("f32x4");
    guarded_kernel(
        "vector_get",
        &[
            ("src", t::sym(v.clone())),
            ("dst", t::ptr(v.clone())),
            ("peer", t::u32()),
        ],
        |p, i| {
            vec![s(assign(
                Place::Deref(ptr_add(p[1].clone(), i.clone())),
                intr(
                    Op::RemoteLoad,
                    vec![sym_add(p[0].clone(), i), p[2].clone()],
                    v,
                ),
            ))]
        },
    )
}

/// `for i in 0..n { store(out.add(i), v, peer) }`: a translated store in a loop whose
/// peer does not change.
pub fn fill_peer() -> Unit {
    let mut f = Func::kernel("fill_peer");
    let out = f.param("out", t::sym(t::f32()));
    let n = f.param("n", t::u64());
    let peer = f.param("peer", t::u32());
    let v = f.param("v", t::f32());
    let (i, iv) = f.local("i", t::u64());
    let body = stmts(vec![s(for_range(
        i,
        int(0, t::u64()),
        n,
        false,
        stmts(vec![s(intr(
            Op::RemoteStore,
            vec![sym_add(out, iv), v, peer],
            t::unit(),
        ))]),
    ))]);
    unit("fill_peer", vec![f.finish(body)])
}
