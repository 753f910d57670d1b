//! Control flow that leaves unreachable code behind (`return`, `break`, `continue` in the
//! middle of blocks, `if` whose branches both diverge, `loop` without `break`) still
//! lowers to valid IR on every target, and runs right on the CPU.

use crate::common::cpu::*;
use crate::common::ir::*;
use crate::common::tools::*;
use iris_device::compiler::kernel_ir::*;
use iris_device::compiler::{buildable, Target, ALL_TARGETS};

fn store_at(out: &Expr, k: i128, v: Expr) -> Stmt {
    s(assign(
        Place::Deref(ptr_add(out.clone(), int(k, t::u64()))),
        v,
    ))
}

/// `dev_pick(x) -> u32`: `if x > 10 { return 1; 99 } else if x > 5 { return 2 } else { 3 }`
/// with dead code after each `return`.
fn dev_pick() -> Function {
    let mut f = Func::device("dev_pick", t::u32());
    let x = f.param("x", t::u32());
    let then_block = block(
        vec![s(ret(Some(int(1, t::u32()))))],
        Some(int(99, t::u32())),
    );
    let inner = if_(
        bin(BinaryOp::Gt, x.clone(), int(5, t::u32())),
        block(
            vec![
                s(ret(Some(int(2, t::u32())))),
                s(bin(BinaryOp::Add, x.clone(), int(1, t::u32()))),
            ],
            None,
        ),
        Some(block(vec![], Some(int(3, t::u32())))),
    );
    let mut inner = inner;
    inner.ty = t::u32();
    let mut outer = if_(
        bin(BinaryOp::Gt, x, int(10, t::u32())),
        then_block,
        Some(block(vec![], Some(inner))),
    );
    outer.ty = t::u32();
    f.finish(block(vec![], Some(outer)))
}

/// A kernel exercising diverging control flow; writes its results to `out`.
fn diverging() -> Unit {
    let mut f = Func::kernel("diverging");
    let out = f.param("out", t::ptr(t::u32()));
    let n = f.param("n", t::u32());
    let (i, iv) = f.local("i", t::u32());
    let (acc, accv) = f.local("acc", t::u32());
    let (j, jv) = f.local("j", t::u32());
    let acc_place = || Place::Local(acc);
    let body = stmts(vec![
        let_(acc, int(0, t::u32())),
        // for i in 0..n { if i == 2 { continue; acc += 100; } if i == 5 { break; acc += 1000 } acc += i }
        s(for_range(
            i,
            int(0, t::u32()),
            n.clone(),
            false,
            stmts(vec![
                s(if_(
                    bin(BinaryOp::Eq, iv.clone(), int(2, t::u32())),
                    stmts(vec![
                        s(cont()),
                        s(compound(acc_place(), BinaryOp::Add, int(100, t::u32()))),
                    ]),
                    None,
                )),
                s(if_(
                    bin(BinaryOp::Eq, iv.clone(), int(5, t::u32())),
                    stmts(vec![
                        s(brk()),
                        s(compound(acc_place(), BinaryOp::Add, int(1000, t::u32()))),
                    ]),
                    None,
                )),
                s(compound(acc_place(), BinaryOp::Add, iv.clone())),
            ]),
        )),
        store_at(&out, 0, accv.clone()),
        // let j = 0; loop { j += 1; if j >= n { break; } }  (break in a diverging if)
        let_(j, int(0, t::u32())),
        s(loop_(stmts(vec![
            s(compound(Place::Local(j), BinaryOp::Add, int(1, t::u32()))),
            s(if_(
                bin(BinaryOp::Ge, jv.clone(), n.clone()),
                stmts(vec![s(brk())]),
                Some(stmts(vec![s(cont())])),
            )),
            s(compound(
                Place::Local(j),
                BinaryOp::Add,
                int(1000, t::u32()),
            )),
        ]))),
        store_at(&out, 1, jv),
        store_at(&out, 2, call(0, vec![n.clone()], t::u32())),
        // inclusive range ending at the type's maximum: no overflow, 3 iterations
        s(for_range(
            i,
            int(u32::MAX as i128 - 2, t::u32()),
            int(u32::MAX as i128, t::u32()),
            true,
            stmts(vec![s(compound(
                acc_place(),
                BinaryOp::Add,
                int(1, t::u32()),
            ))]),
        )),
        store_at(&out, 3, accv),
        s(ret(None)),
        store_at(&out, 4, int(7, t::u32())),
    ]);
    unit("diverging", vec![dev_pick(), f.finish(body)])
}

/// A kernel whose body ends in a `loop` without `break` that returns from inside.
fn endless() -> Unit {
    let mut f = Func::kernel("endless");
    let out = f.param("out", t::ptr(t::u32()));
    let (k, kv) = f.local("k", t::u32());
    let mut l = loop_(stmts(vec![
        s(compound(Place::Local(k), BinaryOp::Add, int(3, t::u32()))),
        s(if_(
            bin(BinaryOp::Gt, kv.clone(), int(10, t::u32())),
            stmts(vec![store_at(&out, 0, kv.clone()), s(ret(None))]),
            None,
        )),
    ]));
    l.ty = Type::Never;
    let mut b = block(vec![let_(k, int(0, t::u32())), s(l)], None);
    b.ty = Type::Never;
    unit("endless", vec![f.finish(b)])
}

#[test]
fn diverging_control_flow_is_valid_everywhere() {
    for unit in [diverging(), endless()] {
        for &target in &buildable(&ALL_TARGETS) {
            compile(&unit, target);
        }
    }
}

#[test]
fn diverging_control_flow_runs_right() {
    let m = CpuModule::load(&compile(&diverging(), Target::Cpu).object);
    for n in [0u32, 3, 7, 12] {
        let mut out = vec![0u32; 5];
        let (mut op, mut n_) = (out.as_mut_ptr(), n);
        m.launch("diverging", 1, 1, 0, &[arg(&mut op), arg(&mut n_)]);
        let acc: u32 = (0..n.min(5)).filter(|&i| i != 2).sum();
        let j = n.max(1);
        let pick = if n > 10 {
            1
        } else if n > 5 {
            2
        } else {
            3
        };
        assert_eq!(out, [acc, j, pick, acc + 3, 0], "n={n}");
    }
    let m = CpuModule::load(&compile(&endless(), Target::Cpu).object);
    let mut out = 0u32;
    let mut op = &mut out as *mut u32;
    m.launch("endless", 1, 1, 0, &[arg(&mut op)]);
    assert_eq!(out, 12);
}
