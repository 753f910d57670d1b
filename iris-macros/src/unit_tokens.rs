//! The `KernelUnit` static: code objects and parameter layouts, as Rust tokens.

use iris_device::abi::TargetKind;
use iris_device::compiler::kernel_ir::{Function, Type};
use iris_device::compiler::{kernel_facts, CompiledUnit};
use proc_macro2::{Literal, TokenStream};
use quote::quote;

fn param_kind(ty: &Type) -> TokenStream {
    let abi = crate::paths::abi();
    match ty {
        Type::Ptr { .. } => quote!(#abi::ParamKind::Pointer),
        Type::Symmetric(_) => quote!(#abi::ParamKind::Symmetric),
        other => {
            let size = other.size().unwrap_or(0);
            let align = other.align().unwrap_or(1);
            quote!(#abi::ParamKind::Value { size: #size, align: #align })
        }
    }
}

fn kernel_spec(f: &Function, spins: bool, peer_checks: bool, trace_events: bool) -> TokenStream {
    let abi = crate::paths::abi();
    let name = &f.name;
    let params = f.params().iter().map(|p| {
        let pname = &p.name;
        let ty = p.ty.to_string();
        let kind = param_kind(&p.ty);
        quote!(#abi::ParamSpec { name: #pname, ty: #ty, kind: #kind })
    });
    let facts = kernel_facts(f);
    let (shared, max_threads) = (facts.shared_bytes, facts.max_block_threads);
    let concurrent = f.uses_block_barrier || f.uses_warp;
    let waits = f.waits_on_signals;
    quote! {
        #abi::KernelSpec {
            name: #name,
            params: &[#(#params),*],
            shared_bytes: #shared,
            concurrent_threads: #concurrent,
            max_block_threads: #max_threads,
            peer_checks: #peer_checks,
            signal_waits: #waits,
            spins: #spins,
            trace_events: #trace_events,
        }
    }
}

/// `pub static <name>: iris::abi::KernelUnit = ...;` for the compiled unit, registered in
/// `iris::abi::KERNEL_UNITS` (every unit of the program, preloaded by each context).
pub fn unit_static(unit: &CompiledUnit, id: &str, name: &str) -> TokenStream {
    // Whether the unit's kernels take the trace's hidden slots (a walk of the whole unit).
    let trace_events = unit.ir.trace_param();
    let abi = crate::paths::abi();
    let spinning = unit.ir.spinning();
    let kernels = unit
        .ir
        .functions
        .iter()
        .zip(spinning)
        .filter(|(f, _)| f.is_kernel)
        .map(|(f, spins)| kernel_spec(f, spins, unit.ir.peer_checks, trace_events));
    let objects = unit.objects.iter().map(|(target, bytes)| {
        let name = target.name();
        let kind = match target.kind() {
            TargetKind::Amdgpu => quote!(#abi::TargetKind::Amdgpu),
            TargetKind::Nvptx => quote!(#abi::TargetKind::Nvptx),
            TargetKind::Cpu => quote!(#abi::TargetKind::Cpu),
        };
        let lit = Literal::byte_string(bytes);
        quote!(#abi::CodeObject { target: #name, kind: #kind, bytes: #lit })
    });
    let left_out = unit.left_out.iter().map(|(target, reason)| {
        let target = target.name();
        quote!(#abi::LeftOut { target: #target, reason: #reason })
    });
    let name = proc_macro2::Ident::new(name, proc_macro2::Span::call_site());
    quote! {
        pub static #name: #abi::KernelUnit = #abi::KernelUnit {
            id: ::core::concat!(::core::module_path!(), "::", #id),
            kernels: &[#(#kernels),*],
            code_objects: &[#(#objects),*],
            left_out: &[#(#left_out),*],
        };
        #[#abi::__linkme::distributed_slice(#abi::KERNEL_UNITS)]
        #[linkme(crate = #abi::__linkme)]
        static __IRIS_UNIT_REGISTERED: &#abi::KernelUnit = &#name;
    }
}
