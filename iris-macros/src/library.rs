//! Shared device libraries: `#[iris::device] pub mod name { pub fn f(..) .. }` and
//! `#[iris::kernels(uses(name))]`.
//!
//! A proc macro sees only the item it is on, so a library travels as tokens through a
//! callback `macro_rules!`: the library's attribute emits `__iris_device_<name>`
//! (`#[macro_export]`, so other crates reach it as `krate::__iris_device_<name>`, and so
//! two libraries of one name in a crate are an error), which appends the library's
//! functions to what it is given and calls the next library's macro, or, after the last,
//! the kernel attribute again with every library's functions in a hidden `__libraries(..)`
//! argument. The kernel attribute then compiles its own functions and the libraries'
//! together, as one unit.
//!
//! Naming a library in `uses(..)`: by its name alone or by a path starting with `crate`,
//! `self` or `super` for a library of this crate (defined earlier in the crate, in the
//! textual order `macro_rules!` follow: the same module, an enclosing one, or a module
//! declared with `#[macro_use]`), by `krate::path::name` for another crate's.

use iris_device::compiler::frontend::build_unit_from;
use iris_device::compiler::frontend::SourceFn;
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, ToTokens};
use syn::spanned::Spanned;

/// A library's functions, as the kernel attribute receives them.
#[derive(Clone, Debug)]
pub struct Library {
    /// The library's name.
    pub name: syn::Ident,
    /// Its functions.
    pub functions: Vec<syn::ItemFn>,
}

/// The callback macro of library `name`.
fn callback_name(name: &syn::Ident) -> syn::Ident {
    format_ident!("__iris_device_{}", name)
}

/// `#[iris::device] mod name { .. }`.
pub fn device(attr: TokenStream, item: TokenStream) -> TokenStream {
    if !attr.is_empty() {
        return syn::Error::new(attr.span(), "#[iris::device] takes no arguments")
            .to_compile_error();
    }
    let module: syn::ItemMod = match syn::parse2(item) {
        Ok(m) => m,
        Err(_) => {
            return syn::Error::new(
                Span::call_site(),
                "#[iris::device] goes on an inline module of device functions: `pub mod name { pub fn f(..) { .. } }`",
            )
            .to_compile_error()
        }
    };
    let Some((_, items)) = &module.content else {
        return syn::Error::new(
            module.span(),
            "#[iris::device] needs the module's body inline",
        )
        .to_compile_error();
    };
    let mut functions = Vec::new();
    let mut kept = Vec::new();
    let mut errors = TokenStream::new();
    for item in items {
        match item {
            syn::Item::Fn(f) => {
                if let Some(a) = f.attrs.iter().find(|a| a.path().is_ident("kernel")) {
                    errors.extend(
                        syn::Error::new(a.span(), "a device library holds device functions; kernels go in #[iris::kernels] modules that `uses(..)` it").to_compile_error(),
                    );
                }
                functions.push(f.clone());
            }
            syn::Item::Use(_) => kept.push(item.to_token_stream()),
            other => errors.extend(
                syn::Error::new(
                    other.span(),
                    "a #[iris::device] module holds functions and `use` items only",
                )
                .to_compile_error(),
            ),
        }
    }
    if functions.is_empty() {
        errors.extend(
            syn::Error::new(
                module.ident.span(),
                "a device library needs at least one function",
            )
            .to_compile_error(),
        );
    }
    errors.extend(check_library(&module.ident, &functions));
    let name = &module.ident;
    let callback = callback_name(name);
    let attrs = &module.attrs;
    let vis = &module.vis;
    let shims = functions.iter().map(|f| {
        quote! {
            #[allow(dead_code, unused_variables, unused_mut, unused_unsafe, unused_parens, clippy::all, clippy::undocumented_unsafe_blocks)]
            #f
        }
    });
    let doc = format!(
        "The source of device library `{name}`, for the kernel attributes that `uses({name})` (internal)."
    );
    quote! {
        #errors
        #(#attrs)*
        #vis mod #name {
            #(#kept)*
            #(#shims)*
        }
        #[doc = #doc]
        #[doc(hidden)]
        #[macro_export]
        macro_rules! #callback {
            (@iris_expand $which:ident [($($next:ident)::+) $($rest:tt)*] [$($libs:tt)*] [$($attr:tt)*] $($item:tt)*) => {
                $($next)::+! { @iris_expand $which [$($rest)*] [$($libs)* { #name: #(#functions)* }] [$($attr)*] $($item)* }
            };
            (@iris_expand $which:ident [] [$($libs:tt)*] [$($attr:tt)*] $($item:tt)*) => {
                #[::iris::$which(__libraries($($libs)* { #name: #(#functions)* }) $($attr)*)]
                $($item)*
            };
        }
    }
}

/// The library's subset errors, found now rather than in each unit that uses it (its
/// generic functions are checked where they are instantiated).
fn check_library(name: &syn::Ident, functions: &[syn::ItemFn]) -> TokenStream {
    let plain: Vec<SourceFn> = functions
        .iter()
        .filter(|f| f.sig.generics.params.is_empty())
        .map(|f| SourceFn::new(f.clone(), false))
        .collect();
    if plain.is_empty() {
        return TokenStream::new();
    }
    // A unit needs a kernel: check the functions beside an empty one.
    let probe: syn::ItemFn = syn::parse_quote!(
        fn __iris_library_probe() {}
    );
    let mut sources = plain;
    sources.push(SourceFn::new(probe, true));
    match build_unit_from(&name.to_string(), &sources) {
        Ok(_) => TokenStream::new(),
        Err(errors) => errors
            .iter()
            .map(|e| e.to_syn().to_compile_error())
            .collect(),
    }
}

/// The callback macro's path for a library named in `uses(..)`.
fn callback_path(path: &syn::Path) -> syn::Result<TokenStream> {
    let segments = callback_segments(path)?;
    Ok(quote!((#segments)))
}

fn callback_segments(path: &syn::Path) -> syn::Result<TokenStream> {
    let last = path
        .segments
        .last()
        .ok_or_else(|| syn::Error::new(path.span(), "empty library path"))?;
    let callback = callback_name(&last.ident);
    let first = &path.segments[0].ident;
    let local = path.segments.len() == 1 || first == "crate" || first == "self" || first == "super";
    if local {
        Ok(quote!(#callback))
    } else {
        Ok(quote!(#first :: #callback))
    }
}

/// The module path `use`d where a kernel's shim is, so that it sees a library's
/// functions: inside a `#[iris::kernels]` module (`in_child`) paths relative to the
/// attribute's place gain a `super::`.
pub fn import_path(path: &syn::Path, in_child: bool) -> TokenStream {
    let first = &path.segments[0].ident;
    let relative = path.segments.len() == 1 || first == "self" || first == "super";
    if !in_child || !relative {
        return quote!(#path);
    }
    if first == "self" {
        let rest = path.segments.iter().skip(1);
        quote!(super::#(#rest)::*)
    } else {
        quote!(super::#path)
    }
}

/// The item with `use <library>::*;` added where its shims need it: first in a
/// `#[iris::kernels]` module, first in a `#[iris::kernel]` function's body.
pub fn with_imports(item: TokenStream, uses: &[syn::Path], is_module: bool) -> TokenStream {
    let imports: Vec<syn::Stmt> = uses
        .iter()
        .map(|p| {
            let path = import_path(p, is_module);
            syn::parse_quote!(#[allow(unused_imports)] use #path::*;)
        })
        .collect();
    if is_module {
        let Ok(mut m) = syn::parse2::<syn::ItemMod>(item.clone()) else {
            return item;
        };
        if let Some((_, items)) = &mut m.content {
            for stmt in imports.into_iter().rev() {
                if let syn::Stmt::Item(i) = stmt {
                    items.insert(0, i);
                }
            }
        }
        m.into_token_stream()
    } else {
        let Ok(mut f) = syn::parse2::<syn::ItemFn>(item.clone()) else {
            return item;
        };
        for stmt in imports.into_iter().rev() {
            f.block.stmts.insert(0, stmt);
        }
        f.into_token_stream()
    }
}

/// Expands `#[iris::$which(uses(a, b), rest..)] item` into the first library's callback,
/// which collects every library's functions and calls the attribute again.
pub fn start_collecting(
    which: &str,
    uses: &[syn::Path],
    rest: TokenStream,
    item: TokenStream,
) -> TokenStream {
    let which = format_ident!("{}", which);
    let Some((first, others)) = uses.split_first() else {
        return syn::Error::new(Span::call_site(), "`uses(..)` names no library")
            .to_compile_error();
    };
    let first = match callback_segments(first) {
        Ok(t) => t,
        Err(e) => return e.to_compile_error(),
    };
    let mut rest_paths = Vec::new();
    for p in others {
        match callback_path(p) {
            Ok(t) => rest_paths.push(t),
            Err(e) => return e.to_compile_error(),
        }
    }
    quote! {
        #first! { @iris_expand #which [#(#rest_paths)*] [] [#rest] #item }
    }
}

/// Parses the hidden `__libraries({ name: fn.. } { name: fn.. })` argument.
pub fn parse_libraries(tokens: TokenStream) -> syn::Result<Vec<Library>> {
    let mut out = Vec::new();
    for tt in tokens {
        let proc_macro2::TokenTree::Group(g) = tt else {
            return Err(syn::Error::new(
                tt.span(),
                "internal: malformed library list",
            ));
        };
        let parsed: LibraryTokens = syn::parse2(g.stream())?;
        out.push(Library {
            name: parsed.name,
            functions: parsed.functions,
        });
    }
    Ok(out)
}

struct LibraryTokens {
    name: syn::Ident,
    functions: Vec<syn::ItemFn>,
}

impl syn::parse::Parse for LibraryTokens {
    fn parse(input: syn::parse::ParseStream) -> syn::Result<Self> {
        let name: syn::Ident = input.parse()?;
        input.parse::<syn::Token![:]>()?;
        let mut functions = Vec::new();
        while !input.is_empty() {
            functions.push(input.parse()?);
        }
        Ok(LibraryTokens { name, functions })
    }
}

/// The libraries' functions as device functions of a unit, with the error for a name
/// two of them (or a library and the unit) define.
pub fn library_functions(
    libraries: &[Library],
    unit_functions: &[SourceFn],
) -> Result<Vec<SourceFn>, syn::Error> {
    let mut seen: Vec<(String, String)> = unit_functions
        .iter()
        .map(|f| (f.item.sig.ident.to_string(), "this module".to_string()))
        .collect();
    let mut out = Vec::new();
    for lib in libraries {
        for f in &lib.functions {
            let name = f.sig.ident.to_string();
            if let Some((_, owner)) = seen.iter().find(|(n, _)| *n == name) {
                return Err(syn::Error::new(
                    f.sig.ident.span(),
                    format!(
                        "`{name}` is defined both by device library `{}` and by {owner}: rename one",
                        lib.name
                    ),
                ));
            }
            seen.push((name, format!("device library `{}`", lib.name)));
            out.push(SourceFn::new(f.clone(), false));
        }
    }
    Ok(out)
}
