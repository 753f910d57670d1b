use super::super::kernel_ir::{ExprKind, Intrinsic, Scalar, Stmt, Type};
use super::build_unit;

fn build(src: &str) -> Result<super::super::kernel_ir::Unit, String> {
    let item: syn::ItemFn = syn::parse_str(src).map_err(|e| e.to_string())?;
    build_unit("t", &[(item, true)]).map_err(|e| {
        e.iter()
            .map(|e| e.message.clone())
            .collect::<Vec<_>>()
            .join("\n")
    })
}

fn err(src: &str) -> String {
    match build(src) {
        Ok(_) => panic!("expected an error for:\n{src}"),
        Err(e) => e,
    }
}

#[test]
fn all_gather_builds() {
    let u = build(
        r#"pub fn all_gather(input: *const f32, out: Symmetric<f32>, n: u64, me: u32, world: u32) {
            let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as u64;
            if i < n {
                let v = unsafe { *input.add(i as usize) };
                for peer in 0..world {
                    iris::store(out.add((me as u64 * n + i) as usize), v, peer);
                }
            }
        }"#,
    )
    .unwrap();
    let f = &u.functions[0];
    assert_eq!(f.param_count, 5);
    assert_eq!(
        f.locals[1].ty,
        Type::Symmetric(Box::new(Type::Scalar(Scalar::F32)))
    );
    // The loop variable took the type of `world`.
    let peer = f.locals.iter().find(|l| l.name == "peer").unwrap();
    assert_eq!(peer.ty, Type::Scalar(Scalar::U32));
}

#[test]
fn literals_take_their_type_from_use() {
    let u = build(
        r#"fn k(p: *mut u64, n: u64) {
            let mut i = 0;
            while i < n { unsafe { *p.add(i as usize) = i * 2; } i += 1; }
            let f = 1.5;
            let g: f32 = f * 2.0;
            let h = 7;
        }"#,
    )
    .unwrap();
    let f = &u.functions[0];
    let ty = |n: &str| f.locals.iter().find(|l| l.name == n).unwrap().ty.clone();
    assert_eq!(ty("i"), Type::Scalar(Scalar::U64));
    assert_eq!(ty("f"), Type::Scalar(Scalar::F32));
    assert_eq!(ty("h"), Type::Scalar(Scalar::I32));
    // No inference variable survives resolution.
    assert!(format!("{:?}", u).find("IntVar").is_none());
    assert!(format!("{:?}", u).find("FloatVar").is_none());
}

#[test]
fn atomics_take_constant_orderings() {
    let u = build(
        r#"fn k(flag: Symmetric<u32>, peer: u32) {
            let old = iris::atomic_add(flag, 1, peer, Ordering::Release, Scope::System);
            while iris::atomic_load(flag, peer, Ordering::Acquire, Scope::System) == 0 {}
            fence(Ordering::SeqCst, Scope::Device);
        }"#,
    )
    .unwrap();
    let Stmt::Let { init: Some(e), .. } = &u.functions[0].body.stmts[0] else {
        panic!()
    };
    assert!(matches!(
        &e.kind,
        ExprKind::Intrinsic(Intrinsic::AtomicRmw { .. })
    ));
    assert_eq!(e.ty, Type::Scalar(Scalar::U32));
}

#[test]
fn the_subset_is_enforced_with_messages() {
    assert!(err("fn k(x: &u32) {}").contains("references"));
    assert!(err("fn k(x: Vec<u32>) {}").contains("no heap"));
    assert!(err("fn k<T>(x: *mut T) {}").contains("generic"));
    assert!(err("fn k() -> u32 { 0 }").contains("kernels return nothing"));
    assert!(err("fn k(p: *mut u32) { println!(\"x\"); }").contains("cannot print"));
    assert!(err("fn k(p: *mut u32) { let x = 1; x = 2; }").contains("not declared `mut`"));
    assert!(err("fn k(p: *const u32) { unsafe { *p = 1; } }").contains("*const"));
    assert!(err("fn k(p: *mut u32) { let v = p[0]; }").contains("indexing"));
    assert!(err("fn k(p: *mut u32) { match 1 { _ => {} } }").contains("match"));
    assert!(err("fn k(p: *mut u32) { iris::store(p, 1, 0); }").contains("Symmetric"));
    assert!(err(
        "fn k(p: Symmetric<f32>) { iris::atomic_or(p, 1.0, 0, Ordering::Relaxed, Scope::System); }"
    )
    .contains("i32, u32"));
    assert!(err(
        "fn k(p: Symmetric<u32>, o: u32) { iris::atomic_add(p, 1, 0, o, Scope::System); }"
    )
    .contains("ordering"));
    assert!(err(
        "fn k(p: Symmetric<u32>) { iris::atomic_load(p, 0, Ordering::Release, Scope::System); }"
    )
    .contains("cannot be `Release`"));
    assert!(err("fn k(p: *mut u32) { break; }").contains("outside of a loop"));
    assert!(err("fn k(p: *mut u32) { let x = undefined_name; }").contains("cannot find value"));
    assert!(err("fn k(p: *mut f32) { let x: u32 = 1.0; }").contains("mismatched types"));
    assert!(err("fn k(p: *mut u32) { foo(1); }").contains("cannot call `foo`"));
    assert!(err("fn k(p: *mut u32) { let s = shared_array::<f32, 0>(); }").contains("1 to 65536"));
    assert!(err("fn k(p: *mut u32) { 'a: loop { break 'a; } }").contains("labels"));
    assert!(err("fn k(p: *mut u32) { let c = |x: u32| x; }").contains("closures"));
}

#[test]
fn device_functions_are_called() {
    let k: syn::ItemFn =
        syn::parse_str("fn k(p: *mut f32) { unsafe { *p = twice(*p); } }").unwrap();
    let h: syn::ItemFn = syn::parse_str("fn twice(x: f32) -> f32 { x * 2.0 }").unwrap();
    let u = build_unit("m", &[(k.clone(), true), (h, false)]).unwrap();
    assert_eq!(u.functions.len(), 2);
    assert!(!u.functions[1].is_kernel);
    let bad: syn::ItemFn = syn::parse_str("fn twice(x: f32) -> f32 { x }").unwrap();
    let e = build_unit("m", &[(k, true), (bad.clone(), false), (bad, false)]).unwrap_err();
    assert!(e[0].message.contains("defined twice"));
    let k: syn::ItemFn = syn::parse_str("fn k(p: *mut f32) { tile(p); }").unwrap();
    let h: syn::ItemFn =
        syn::parse_str("fn tile(p: *mut f32) { let s = shared_array::<f32, 4>(); }").unwrap();
    let e = build_unit("m", &[(k, true), (h, false)]).unwrap_err();
    assert!(e[0].message.contains("kernels only"), "{}", e[0].message);
}
