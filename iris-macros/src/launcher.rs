//! The typed launcher: `name::launch(&iris, config, args..)`.

use iris_device::compiler::kernel_ir::{GenericArg, Scalar, Type};
use iris_device::compiler::CompiledUnit;
use proc_macro2::{Literal, TokenStream};
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

/// The kernels `func` compiled to, as indices among the unit's kernels: one for a plain
/// kernel, one per instance for a generic one (with its arguments).
pub fn kernels_of(
    func: &syn::ItemFn,
    unit: &CompiledUnit,
) -> Vec<(usize, Option<Vec<GenericArg>>)> {
    let name = func.sig.ident.to_string();
    unit.ir
        .functions
        .iter()
        .filter(|f| f.is_kernel)
        .enumerate()
        .filter_map(|(index, f)| match &f.instance_of {
            Some(of) if of.generic == name => Some((index, Some(of.args.clone()))),
            None if f.name == name => Some((index, None)),
            _ => None,
        })
        .collect()
}

/// The Rust type naming a concrete type argument.
fn type_tokens(ty: &Type) -> TokenStream {
    let krate = crate::paths::krate();
    let name = format_ident!("{}", ty.to_string());
    match ty {
        Type::Scalar(Scalar::F16 | Scalar::BF16) | Type::Vector(_) => {
            quote!(#krate::prelude::#name)
        }
        _ => quote!(#name),
    }
}

/// The marker type of a const parameter of type `ty` (`iris::ConstUsize<N>`).
fn const_marker(declared: &syn::Type) -> syn::Ident {
    let name = match declared {
        syn::Type::Path(p) => p
            .path
            .segments
            .last()
            .map(|s| s.ident.to_string())
            .unwrap_or_default(),
        _ => String::new(),
    };
    let mut chars = name.chars();
    let camel: String = chars
        .next()
        .map(|c| c.to_ascii_uppercase())
        .into_iter()
        .chain(chars)
        .collect();
    format_ident!("Const{}", camel)
}

/// The launcher module of kernel `func`, compiled to `kernels` (indices among the
/// unit's kernels, with the arguments of each instance of a generic kernel).
/// `unit_item` defines or imports `UNIT` inside the module.
pub fn launcher_module(
    func: &syn::ItemFn,
    unit: &CompiledUnit,
    kernels: &[(usize, Option<Vec<GenericArg>>)],
    unit_item: TokenStream,
) -> TokenStream {
    let name = &func.sig.ident;
    let vis = &func.vis;
    let docs: Vec<_> = func
        .attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .collect();
    let Some(ir) = kernels
        .first()
        .and_then(|(index, _)| unit.ir.functions.iter().filter(|f| f.is_kernel).nth(*index))
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
    let mod_doc = if docs.is_empty() {
        let d =
            format!("Kernel `{name}`: its code objects (`UNIT`) and typed launcher (`launch`).");
        quote!(#[doc = #d])
    } else {
        quote!(#(#docs)*)
    };
    let generic = GenericLauncher::of(func, kernels);
    let doc_launch = format!(
        "Launches `{name}`{} on `{iris}`'s stream with the grid and block of `{config}` (asynchronous: \
         synchronize or read a buffer back to wait).\n\nErrors if an argument belongs to another \
         context, a symmetric buffer has an unreachable peer, the launch shape is invalid, or no \
         code object fits the device.",
        generic.as_ref().map(|g| g.doc_suffix.as_str()).unwrap_or("")
    );
    let (generics, where_clause, kernel_index, instance_items) = match &generic {
        None => {
            let index = kernels[0].0;
            (quote!(), quote!(), quote!(#index), quote!())
        }
        Some(g) => {
            let (gen, key, items) = (&g.generics, &g.key, &g.items);
            (
                quote!(<#gen>),
                quote!(where #key: Instance),
                quote!(<#key as Instance>::KERNEL),
                items.clone(),
            )
        }
    };
    quote! {
        #mod_doc
        #[allow(non_snake_case)]
        #vis mod #name {
            #[allow(unused_imports)]
            use super::*;
            /// The compiled code objects and parameter layout.
            #unit_item
            #instance_items
            #[doc = #doc_launch]
            #[allow(clippy::too_many_arguments, unused_mut)]
            pub fn launch #generics (
                #iris: &#krate::Iris,
                #config: impl ::core::convert::Into<#krate::LaunchConfig>,
                #(#params),*
            ) -> #krate::Result<()> #where_clause {
                let mut __args = #iris.args(&UNIT, #kernel_index);
                #(#pushes)*
                #iris.launch(#config.into(), __args)
            }
        }
    }
}

/// What a generic kernel's launcher adds: its generic parameters, the `Instance` trait
/// implemented for each argument list built, and the key type that selects one.
struct GenericLauncher {
    /// `T: Pod, const N: usize`.
    generics: TokenStream,
    /// `(T, iris::ConstUsize<N>)`.
    key: TokenStream,
    /// The trait and its impls.
    items: TokenStream,
    /// `::<T, N>` for the launcher's documentation, with the instances built.
    doc_suffix: String,
}

impl GenericLauncher {
    fn of(func: &syn::ItemFn, kernels: &[(usize, Option<Vec<GenericArg>>)]) -> Option<Self> {
        if func.sig.generics.params.is_empty() {
            return None;
        }
        let krate = crate::paths::krate();
        let name = &func.sig.ident;
        let mut generics = Vec::new();
        let mut key = Vec::new();
        let mut names = Vec::new();
        let mut markers = Vec::new();
        for p in &func.sig.generics.params {
            match p {
                syn::GenericParam::Type(t) => {
                    let ident = &t.ident;
                    generics.push(quote!(#ident: #krate::Pod));
                    key.push(quote!(#ident));
                    names.push(ident.to_string());
                    markers.push(None);
                }
                syn::GenericParam::Const(c) => {
                    let (ident, ty) = (&c.ident, &c.ty);
                    let marker = const_marker(ty);
                    generics.push(quote!(const #ident: #ty));
                    key.push(quote!(#krate::#marker<#ident>));
                    names.push(ident.to_string());
                    markers.push(Some(marker));
                }
                syn::GenericParam::Lifetime(_) => {}
            }
        }
        let mut impls = Vec::new();
        let mut built = Vec::new();
        for (index, args) in kernels {
            let Some(args) = args else { continue };
            let parts: Vec<TokenStream> = args
                .iter()
                .zip(&markers)
                .map(|(a, marker)| match (a, marker) {
                    (GenericArg::Type(t), _) => type_tokens(t),
                    (GenericArg::Const { value, .. }, Some(m)) => {
                        let lit = Literal::i128_unsuffixed(*value);
                        quote!(#krate::#m<{ #lit }>)
                    }
                    (GenericArg::Const { value, .. }, None) => {
                        let lit = Literal::i128_unsuffixed(*value);
                        quote!(#lit)
                    }
                })
                .collect();
            built.push(
                args.iter()
                    .map(|a| a.to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
            );
            impls.push(quote! {
                impl Instance for (#(#parts,)*) {
                    const KERNEL: usize = #index;
                }
            });
        }
        let built_list = built
            .iter()
            .map(|b| format!("<{b}>"))
            .collect::<Vec<_>>()
            .join(" ");
        let message = format!("kernel `{name}` was not built for these generic arguments");
        let label = format!("`{name}` was not built for this instance");
        let note = format!(
            "`{name}` was built for {built_list}; add the arguments to `instances(..)` on the kernel"
        );
        let trait_doc = format!(
            "The argument lists `{name}` was built for (each tuple in parameter order, a constant as its `Const*` marker): {built_list}."
        );
        let items = quote! {
            #[doc = #trait_doc]
            #[diagnostic::on_unimplemented(message = #message, label = #label, note = #note)]
            pub trait Instance {
                /// The instance's index among the unit's kernels.
                const KERNEL: usize;
            }
            #(#impls)*
        };
        Some(GenericLauncher {
            generics: quote!(#(#generics),*),
            key: quote!((#(#key,)*)),
            items,
            doc_suffix: format!("::<{}> (built for {built_list})", names.join(", ")),
        })
    }
}
