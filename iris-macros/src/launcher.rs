//! The typed launcher: `name::launch(&iris, config, args..)`.

use iris_device::compiler::kernel_ir::Type;
use iris_device::compiler::CompiledUnit;
use proc_macro2::TokenStream;
use quote::{format_ident, quote};

/// The element type tokens of `*const T`, `*mut T` or `Symmetric<T>` as the user wrote it.
fn element_tokens(ty: &syn::Type) -> TokenStream {
    match ty {
        syn::Type::Ptr(p) => {
            let e = &p.elem;
            quote!(#e)
        }
        syn::Type::Paren(p) => element_tokens(&p.elem),
        syn::Type::Group(g) => element_tokens(&g.elem),
        syn::Type::Path(tp) => match tp.path.segments.last().map(|s| &s.arguments) {
            Some(syn::PathArguments::AngleBracketed(a)) => {
                let args = &a.args;
                quote!(#args)
            }
            _ => quote!(#ty),
        },
        other => quote!(#other),
    }
}

/// The launcher module of kernel `func`, the `kernel_index`-th kernel of `unit`.
/// `unit_item` defines or imports `UNIT` inside the module.
pub fn launcher_module(
    func: &syn::ItemFn,
    unit: &CompiledUnit,
    kernel_index: usize,
    unit_item: TokenStream,
) -> TokenStream {
    let name = &func.sig.ident;
    let vis = &func.vis;
    let docs: Vec<_> = func
        .attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .collect();
    let Some(ir) = unit
        .ir
        .functions
        .iter()
        .filter(|f| f.is_kernel)
        .nth(kernel_index)
    else {
        return quote!(::core::compile_error!("internal error: kernel missing from its unit"););
    };
    let taken = |n: &str| ir.params().iter().any(|p| p.name == n);
    let iris = if taken("iris") {
        format_ident!("__iris")
    } else {
        format_ident!("iris")
    };
    let config = if taken("config") {
        format_ident!("__config")
    } else {
        format_ident!("config")
    };
    let krate = crate::paths::krate();
    let mut params = Vec::new();
    let mut pushes = Vec::new();
    let syn_params = func.sig.inputs.iter().filter_map(|a| match a {
        syn::FnArg::Typed(pt) => Some(pt),
        syn::FnArg::Receiver(_) => None,
    });
    for (p, pt) in ir.params().iter().zip(syn_params) {
        let pname = format_ident!("{}", p.name);
        match &p.ty {
            Type::Ptr { .. } => {
                let elem = element_tokens(&pt.ty);
                params.push(quote!(#pname: &impl #krate::AsDevicePtr<#elem>));
                pushes.push(quote!(__args.pointer(#pname)?;));
            }
            Type::Symmetric(_) => {
                let elem = element_tokens(&pt.ty);
                params.push(quote!(#pname: &#krate::SymmetricBuffer<'_, #elem>));
                pushes.push(quote!(__args.symmetric(#pname)?;));
            }
            _ => {
                let ty = &pt.ty;
                params.push(quote!(#pname: #ty));
                pushes.push(quote!(__args.value(#pname);));
            }
        }
    }
    let doc_launch = format!(
        "Launches `{name}` on `{iris}`'s stream with the grid and block of `{config}` (asynchronous: \
         synchronize or read a buffer back to wait).\n\nErrors if an argument belongs to another \
         context, a symmetric buffer has an unreachable peer, the launch shape is invalid, or no \
         code object fits the device."
    );
    let mod_doc = if docs.is_empty() {
        let d =
            format!("Kernel `{name}`: its code objects (`UNIT`) and typed launcher (`launch`).");
        quote!(#[doc = #d])
    } else {
        quote!(#(#docs)*)
    };
    quote! {
        #mod_doc
        #[allow(non_snake_case)]
        #vis mod #name {
            #[allow(unused_imports)]
            use super::*;
            /// The compiled code objects and parameter layout.
            #unit_item
            #[doc = #doc_launch]
            #[allow(clippy::too_many_arguments, unused_mut)]
            pub fn launch(
                #iris: &#krate::Iris,
                #config: impl ::core::convert::Into<#krate::LaunchConfig>,
                #(#params),*
            ) -> #krate::Result<()> {
                let mut __args = #iris.args(&UNIT, #kernel_index);
                #(#pushes)*
                #iris.launch(#config.into(), __args)
            }
        }
    }
}
