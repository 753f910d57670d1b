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
    assert!(err("fn k<T>(x: *mut T) {}").contains("bounded by the prelude's traits: `Element`"));
    assert!(err("fn k<T: MmaElement + AtomicValue>(x: *mut T) {}").contains("no type satisfies"));
    assert!(err("fn k<'a>(x: *mut u32) {}").contains("lifetime"));
    assert!(err("fn k() -> u32 { 0 }").contains("kernels return nothing"));
    assert!(err("fn k(p: *mut u32) { println!(\"x\"); }").contains("cannot print"));
    assert!(err("fn k(p: *mut u32) { let x = 1; x = 2; }").contains("not declared `mut`"));
    assert!(err("fn k(p: *const u32) { unsafe { *p = 1; } }").contains("*const"));
    assert!(err("fn k(p: *mut u32) { let v = p[0]; }").contains("raw pointers have no `[]`"));
    assert!(
        err("fn k(p: *mut u32) { match (1u32, 2u32) { (1, _) => {} _ => {} } }")
            .contains("`match` arm")
    );
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
    assert!(
        err("fn k(p: *mut u32) { let s = shared_array::<f32, 0>(); }")
            .contains("1 to 232448 bytes")
    );
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
    assert!(!u.functions[1].inline_always);
    let inlined: syn::ItemFn =
        syn::parse_str("#[inline(always)] fn twice(x: f32) -> f32 { x * 2.0 }").unwrap();
    let u = build_unit("m", &[(k.clone(), true), (inlined, false)]).unwrap();
    assert!(u.functions[1].inline_always);
    let ir = super::super::llvm::lower_unit(&u, super::super::Target::Sm90).unwrap();
    let twice = ir
        .lines()
        .find(|l| l.starts_with("define internal float"))
        .unwrap();
    let attrs = twice.rsplit(' ').nth(1).unwrap();
    assert!(
        ir.contains(&format!("attributes {attrs} = {{ alwaysinline")),
        "{twice}\n{ir}"
    );
    let hinted: syn::ItemFn =
        syn::parse_str("#[inline] fn twice(x: f32) -> f32 { x * 2.0 }").unwrap();
    let u = build_unit("m", &[(k.clone(), true), (hinted, false)]).unwrap();
    assert!(!u.functions[1].inline_always, "only `always` forces it");
    let bad: syn::ItemFn = syn::parse_str("fn twice(x: f32) -> f32 { x }").unwrap();
    let e = build_unit("m", &[(k, true), (bad.clone(), false), (bad, false)]).unwrap_err();
    assert!(e[0].message.contains("defined twice"));
    let k: syn::ItemFn = syn::parse_str("fn k(p: *mut f32) { tile(p); }").unwrap();
    let h: syn::ItemFn =
        syn::parse_str("fn tile(p: *mut f32) { let s = shared_array::<f32, 4>(); }").unwrap();
    let e = build_unit("m", &[(k, true), (h, false)]).unwrap_err();
    assert!(e[0].message.contains("kernels only"), "{}", e[0].message);
}

fn build_sources(sources: Vec<super::SourceFn>) -> Result<super::super::kernel_ir::Unit, String> {
    super::build_unit_from("g", &sources).map_err(|e| {
        e.iter()
            .map(|e| e.message.clone())
            .collect::<Vec<_>>()
            .join("\n")
    })
}

fn source(src: &str, is_kernel: bool) -> super::SourceFn {
    super::SourceFn::new(syn::parse_str(src).unwrap(), is_kernel)
}

fn instances(list: proc_macro2::TokenStream) -> Option<super::InstanceList> {
    Some(super::InstanceList::parse(list).unwrap())
}

#[test]
fn a_generic_kernel_is_built_once_per_element_type_by_default() {
    let u = build_sources(vec![source(
        "fn scale<T: Element>(x: *mut T, k: T) { unsafe { *x = *x * k + T::ONE; } }",
        true,
    )])
    .unwrap();
    let names: Vec<&str> = u.functions.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names.len(), 12, "{names:?}");
    assert!(
        names.contains(&"scale__bf16") && names.contains(&"scale__u8"),
        "{names:?}"
    );
    let f = u.functions.iter().find(|f| f.name == "scale__f16").unwrap();
    assert_eq!(f.locals[1].ty, Type::Scalar(Scalar::F16));
    let of = f.instance_of.as_ref().unwrap();
    assert_eq!(of.generic, "scale");
}

#[test]
fn instance_lists_choose_types_and_constants() {
    let mut k = source(
        "fn tile<T: Element, const N: usize>(x: *mut T) {
            let mut acc = [T::ZERO; N];
            for i in 0..N { acc[i] = unsafe { *x.add(i) }; }
            let mut s: Acc<T> = Acc::<T>::ZERO;
            for i in 0..N { s += widen(acc[i]); }
            unsafe { *x = narrow::<T>(s); }
        }",
        true,
    );
    k.instances = instances(quote::quote!(T = [f32, bf16], N = [4, 8]));
    let u = build_sources(vec![k]).unwrap();
    let names: Vec<&str> = u.functions.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "tile__f32__4",
            "tile__f32__8",
            "tile__bf16__4",
            "tile__bf16__8"
        ]
    );
    let f = &u.functions[3];
    let acc = f.locals.iter().find(|l| l.name == "acc").unwrap();
    assert_eq!(
        acc.ty,
        Type::Array {
            elem: Box::new(Type::Scalar(Scalar::BF16)),
            len: 8
        }
    );
    let s = f.locals.iter().find(|l| l.name == "s").unwrap();
    assert_eq!(s.ty, Type::Scalar(Scalar::F32));
}

#[test]
fn generic_kernel_errors_name_the_fix() {
    let e = build_sources(vec![source("fn k<const N: usize>(x: *mut u32) {}", true)]).unwrap_err();
    assert!(
        e.contains("needs its values: list them in the kernel's attribute, `instances(N = [..])`"),
        "{e}"
    );
    let mut k = source("fn k<T: Element>(x: *mut T) {}", true);
    k.instances = instances(quote::quote!(T = [bool]));
    let e = build_sources(vec![k]).unwrap_err();
    assert!(e.contains("`bool` does not satisfy `T: Element`"), "{e}");
    let mut k = source("fn k<T: Element>(x: *mut T) {}", true);
    k.instances = instances(quote::quote!(U = [f32]));
    let e = build_sources(vec![k]).unwrap_err();
    assert!(e.contains("has no generic parameter `U`"), "{e}");
    let mut k = source("fn k(x: *mut u32) {}", true);
    k.instances = instances(quote::quote!(T = [f32]));
    let e = build_sources(vec![k]).unwrap_err();
    assert!(e.contains("has no generic parameters"), "{e}");
}

#[test]
fn generic_device_functions_are_instantiated_per_call() {
    let u = build_sources(vec![
        source(
            "fn k(x: *mut f32, y: *mut u64) {
                unsafe {
                    *x = twice(*x);
                    *y = twice(*y) + twice::<u64>(1);
                    let a = [1.0f32, 2.0, 3.0];
                    *x = sum(a);
                }
            }",
            true,
        ),
        source("fn twice<T: Element>(v: T) -> T { v + v }", false),
        source(
            "fn sum<T: Element, const N: usize>(a: [T; N]) -> T {
                let mut s = T::ZERO;
                for i in 0..N { s += a[i]; }
                s
            }",
            false,
        ),
    ])
    .unwrap();
    let names: Vec<&str> = u.functions.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["k", "twice__f32", "twice__u64", "sum__f32__3"]);
    let e = build_sources(vec![
        source("fn k(x: *mut f32) { unsafe { *x = twice(1.0) } }", true),
        source("fn twice<T: Element>(v: T) -> T { v + v }", false),
    ])
    .unwrap_err();
    assert!(e.contains("cannot tell `T` of `twice`"), "{e}");
}

#[test]
fn recursion_through_device_functions_is_an_error() {
    let e = build_sources(vec![
        source("fn k(x: *mut u32) { unsafe { *x = f(*x); } }", true),
        source(
            "fn f(v: u32) -> u32 { if v == 0 { 0 } else { g(v - 1) } }",
            false,
        ),
        source("fn g(v: u32) -> u32 { f(v) }", false),
    ])
    .unwrap_err();
    assert!(
        e.contains("recursion is not supported in kernels: f -> g -> f"),
        "{e}"
    );
}

#[test]
fn array_indices_are_static_and_in_bounds() {
    let u = build(
        "fn k(x: *mut f32) {
            let mut acc = [0.0f32; 8];
            for i in 0..8 { acc[i] += 1.0; }
            let mut m = [[0u32; 4]; 2];
            for r in 0..2 { for c in 0..4 { m[r][c] = (r * 4 + c) as u32; } }
            unsafe { *x = acc[7] + m[1][3] as f32; }
        }",
    )
    .unwrap();
    let m = u.functions[0]
        .locals
        .iter()
        .find(|l| l.name == "m")
        .unwrap();
    assert_eq!(m.ty.to_string(), "[[u32; 4]; 2]");
    assert!(
        err("fn k(x: *mut f32) { let a = [0.0f32; 4]; unsafe { *x = a[4]; } }")
            .contains("index 4 is out of bounds for an array of 4")
    );
    assert!(err(
        "fn k(x: *mut f32) { let a = [0.0f32; 4]; for i in 0..5 { unsafe { *x = a[i]; } } }"
    )
    .contains("out of bounds for an array of 4 when i = 4"));
    assert!(
        err("fn k(x: *mut f32, n: usize) { let a = [0.0f32; 4]; unsafe { *x = a[n]; } }")
            .contains("must be known at compile time")
    );
    assert!(err("fn k(x: *mut f32, n: usize) { let a = [0.0f32; 4]; for i in 0..n { unsafe { *x = a[i]; } } }")
        .contains("must be known at compile time"));
    assert!(
        err("fn k(x: *mut f32) { let a = [0.0f32; 4]; a[0] = 1.0; }")
            .contains("not declared `mut`")
    );
    assert!(err("fn k(x: [f32; 4]) {}").contains("kernels take arrays through pointers"));
    assert!(err("fn k(x: *mut f32) { let a = [0.0f32; 8192]; }").contains("at most 16384"));
}

#[test]
fn a_kernel_inherits_the_barrier_and_warp_needs_of_its_device_functions() {
    let items: Vec<(syn::ItemFn, bool)> = [
        ("pub fn k(x: *mut f32) { unsafe { *x = outer(*x) }; }", true),
        ("fn outer(v: f32) -> f32 { inner(v) + 1.0 }", false),
        (
            "fn inner(v: f32) -> f32 { sync_threads(); warp_reduce_add(v) }",
            false,
        ),
        ("pub fn plain(x: *mut f32) { unsafe { *x = 1.0 }; }", true),
    ]
    .iter()
    .map(|(src, kernel)| (syn::parse_str(src).unwrap(), *kernel))
    .collect();
    let u = build_unit("t", &items)
        .map_err(|e| e[0].message.clone())
        .unwrap();
    let f = |name: &str| u.functions.iter().find(|f| f.name == name).unwrap();
    for name in ["k", "outer", "inner"] {
        assert!(f(name).uses_warp && f(name).uses_block_barrier, "{name}");
    }
    assert!(!f("plain").uses_warp && !f("plain").uses_block_barrier);
}

/// What the warp or the block agrees on, accepted: a branch on the warp's index (also a
/// global thread index divided by the warp size, or into 128-thread groups), a broadcast
/// from lane 0, a kernel's early return, loops with bounds the block agrees on, a lane's
/// value chosen under a branch and reduced outside it, a barrier in a loop over a value
/// loaded from one address.
#[test]
fn warp_operations_where_the_warp_agrees_build() {
    for src in [
        r#"fn k(p: *mut f32, n: u32) {
            if warp_id() == 0 { let v = warp_reduce_add(1.0f32); unsafe { *p = v }; }
        }"#,
        r#"fn k(p: *mut f32, n: u32) {
            let warp = (block_idx_x() * block_dim_x() + thread_idx_x()) / warp_size();
            if warp < n { let v = warp_reduce_add(1.0f32); unsafe { *p = v }; }
        }"#,
        r#"fn k(p: *mut f32, n: u32) {
            let group = thread_idx_x() / 128;
            if group == 1 { warp_sync(); }
            if thread_idx_x() >> 6 == 0 { warp_sync(); }
        }"#,
        r#"fn k(p: *mut u32, n: u32) {
            let mut claim = 0u32;
            if lane_id() == 0 { claim = unsafe { *p }; }
            claim = shfl(claim, 0);
            if claim == 1 { warp_sync(); }
        }"#,
        r#"fn k(p: *mut f32, n: u32) {
            if thread_idx_x() >= n { return; }
            let v = warp_reduce_add(1.0f32);
            unsafe { *p = v };
        }"#,
        r#"fn k(p: *mut f32, n: u32) {
            let t = thread_idx_x();
            let v = if t < n { unsafe { *p.add(t as usize) } } else { 0.0 };
            let mut s = warp_reduce_add(v);
            for _ in 0..n { s = shfl_xor(s, 1); }
            let mut step = n;
            while step > 0 { sync_threads(); step /= 2; }
            unsafe { *p = s };
        }"#,
        r#"fn k(flag: *mut u32, n: u32) {
            let mut done = 0u32;
            while done == 0 { sync_threads(); done = unsafe { *flag }; }
        }"#,
    ] {
        if let Err(e) = build(src) {
            panic!("rejected:\n{src}\n{e}");
        }
    }
}

/// What a warp or a block may split on, refused with the operation named.
#[test]
fn warp_operations_in_a_split_warp_are_errors() {
    for (src, names) in [
        (
            r#"fn k(p: *mut f32) {
                if lane_id() < 16 { let v = warp_reduce_add(1.0f32); unsafe { *p = v }; }
            }"#,
            "a warp reduction",
        ),
        (
            r#"fn k(p: *mut f32, n: u32) {
                let t = thread_idx_x();
                let mut i = t;
                while i < n { let v = shfl_xor(1.0f32, 1); unsafe { *p = v }; i += 32; }
            }"#,
            "a warp shuffle",
        ),
        (
            r#"fn k(p: *mut f32) {
                if thread_idx_x() == 0 { sync_threads(); }
            }"#,
            "`sync_threads`",
        ),
        (
            r#"fn k(p: *mut f32) {
                if warp_id() == 0 { sync_threads(); }
            }"#,
            "`sync_threads`",
        ),
        (
            r#"fn k(p: *mut f32) {
                if thread_idx_x() / 32 == 0 { warp_sync(); }
            }"#,
            "`warp_sync`",
        ),
        (
            r#"fn k(p: *mut u32, n: u32) {
                for i in 0..n {
                    if unsafe { *p.add(thread_idx_x() as usize) } == i { break; }
                    warp_sync();
                }
            }"#,
            "`warp_sync`",
        ),
    ] {
        let e = err(src);
        assert!(e.contains(names) && e.contains("branch"), "{src}\n{e}");
    }
}

/// `T::from(x)` for Rust's lossless number conversions is a cast; others say what to write.
#[test]
fn lossless_from_conversions_build() {
    build(
        r#"fn k(p: *mut f64, a: u32, b: i16, c: f32, h: f16, t: bool) {
            let x = u64::from(a) + u64::from(t);
            let y = i64::from(b) + i64::from(a);
            let z = f64::from(c) + f64::from(a) + f64::from(h) + f64::from(f32::from(b));
            unsafe { *p = z + x as f64 + y as f64 };
        }"#,
    )
    .unwrap();
    let e = err(r#"fn k(p: *mut u32, a: u64) { unsafe { *p = u32::from(a) }; }"#);
    assert!(
        e.contains("`u32::from` takes a number it holds exactly, not `u64`"),
        "{e}"
    );
}

/// `match` on numbers and `bool` is the `if` chain it means.
#[test]
fn match_on_numbers_and_bools_builds() {
    build(
        r#"fn k(p: *mut u32, a: u32, b: bool) {
            let x = match a % 7 {
                0 => 10,
                1 | 2 => 20,
                3..=4 => 30,
                n if n == 5 => n * 100,
                _ => 40,
            };
            let y = match b { true => 1u32, false => 2 };
            match x { 10 => unsafe { *p = y }, other => unsafe { *p = other } }
        }"#,
    )
    .unwrap();
    let e = err(r#"fn k(p: *mut u32, a: u32) { let x = match a { _ => 1u32, 2 => 3 }; }"#);
    assert!(e.contains("make it the last"), "{e}");
}

/// A device function's result is at the level of what it returns: a word every thread
/// read from one shared address after a block barrier is agreed on (a branch on it may
/// hold warp operations and barriers); what a thread's own load, a lane or a branch on
/// the thread returned is not.
#[test]
fn a_call_is_agreed_on_when_what_its_function_returns_is() {
    let unit = |kernel: &str, helper: &str| {
        let items: Vec<(syn::ItemFn, bool)> = [(kernel, true), (helper, false)]
            .iter()
            .map(|(src, is_kernel)| (syn::parse_str(src).unwrap(), *is_kernel))
            .collect();
        build_unit("t", &items).map_err(|e| e[0].message.clone())
    };
    let kernel = r#"pub fn k(p: *mut u32, out: *mut f32) {
        let status = shared_array::<u32, 1>();
        if agreed(p, status) {
            let v = warp_reduce_add(1.0f32);
            sync_threads();
            unsafe { *out = v };
        }
    }"#;
    let shared = r#"fn agreed(p: *mut u32, status: *mut u32) -> bool {
        if thread_idx_x() == 0 { unsafe { *status = *p + global_timer_ns() as u32 }; }
        sync_threads();
        unsafe { *status == 0 }
    }"#;
    if let Err(e) = unit(kernel, shared) {
        panic!("rejected:\n{kernel}\n{shared}\n{e}");
    }
    for helper in [
        r#"fn agreed(p: *mut u32, status: *mut u32) -> bool {
            unsafe { *p.add(thread_idx_x() as usize) == 0 }
        }"#,
        r#"fn agreed(p: *mut u32, status: *mut u32) -> bool {
            if lane_id() == 3 { return false; }
            true
        }"#,
        r#"fn agreed(p: *mut u32, status: *mut u32) -> bool {
            global_timer_ns() % 2 == 0
        }"#,
    ] {
        match unit(kernel, helper) {
            Ok(_) => panic!("accepted:\n{helper}"),
            Err(e) => assert!(
                e.contains("a warp reduction") && e.contains("branch"),
                "{e}"
            ),
        }
    }
}
