//! Kernels written as Rust source, through the frontend.

use crate::common::tools::*;
use iris_device::compiler::frontend::{build_unit_from, InstanceList, SourceFn};
use iris_device::compiler::kernel_ir::Unit;

/// Builds a unit from Rust source: every `fn` is a kernel unless its name starts with
/// `dev_` (a device function); a generic kernel's `#[instances(T = [..])]` lists its
/// instances, and `#[max_threads(N)]` is a kernel's `max_threads = N`.
pub fn unit_from_source(name: &str, src: &str) -> Unit {
    let file: syn::File = syn::parse_str(src).unwrap_or_else(|e| panic!("parse: {e}"));
    let items: Vec<SourceFn> = file
        .items
        .into_iter()
        .filter_map(|i| match i {
            syn::Item::Fn(mut f) => {
                let kernel = !f.sig.ident.to_string().starts_with("dev_");
                let mut source = SourceFn::new(f.clone(), kernel);
                if let Some(pos) = f.attrs.iter().position(|a| a.path().is_ident("instances")) {
                    let attr = f.attrs.remove(pos);
                    let syn::Meta::List(list) = attr.meta else {
                        panic!("#[instances(..)] takes a list")
                    };
                    source.instances = Some(InstanceList::parse(list.tokens).unwrap());
                }
                if let Some(pos) = f
                    .attrs
                    .iter()
                    .position(|a| a.path().is_ident("max_threads"))
                {
                    let attr = f.attrs.remove(pos);
                    let n: syn::LitInt = attr.parse_args().expect("#[max_threads(N)]");
                    source.max_threads = Some(n.base10_parse().unwrap());
                }
                // Without the attributes read above.
                source.item = f;
                Some(source)
            }
            _ => None,
        })
        .collect();
    build_unit_from(name, &items).unwrap_or_else(|errs| {
        panic!(
            "frontend rejected {name}: {}",
            errs.iter()
                .map(|e| e.message.clone())
                .collect::<Vec<_>>()
                .join("; ")
        )
    })
}

pub const ALL_GATHER: &str = r#"
pub fn all_gather(input: *const f32, out: Symmetric<f32>, n: u64, me: u32, world: u32) {
    let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as u64;
    if i < n {
        let v = unsafe { *input.add(i as usize) };
        for peer in 0..world {
            iris::store(out.add((me as u64 * n + i) as usize), v, peer);
        }
    }
}
"#;

#[test]
fn all_gather_from_source_compiles_for_every_target() {
    let unit = unit_from_source("all_gather_src", ALL_GATHER);
    for out in compile_all(&unit) {
        assert!(!out.object.is_empty());
    }
}
