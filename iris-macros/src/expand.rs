//! The two attributes' expansion: parse, re-emit for rustc, compile, emit launchers.

use crate::launcher::{kernels_of, launcher_module};
use crate::library;
use crate::options;
use crate::unit_tokens::unit_static;
use iris_device::compiler::frontend::SourceFn;
use iris_device::compiler::{self, CompileError, CompiledUnit, Target};
use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote, ToTokens};
use syn::spanned::Spanned;

thread_local! {
    /// Targets to compile for instead of `IRIS_TARGETS` (the crate's own tests use it).
    pub static TARGETS_OVERRIDE: std::cell::RefCell<Option<Vec<Target>>> = const { std::cell::RefCell::new(None) };
}

/// Runs an expansion, turning a panic (a compiler bug) into a compile error.
pub fn guarded(f: impl FnOnce() -> TokenStream) -> TokenStream {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(tokens) => tokens,
        Err(payload) => {
            let msg = payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "unknown panic".into());
            let text =
                format!("internal error in the iris kernel compiler (please report it): {msg}");
            quote!(::core::compile_error!(#text);)
        }
    }
}

fn errors_to_tokens(errors: &[CompileError]) -> TokenStream {
    errors
        .iter()
        .map(|e| e.to_syn().to_compile_error())
        .collect()
}

/// What the build environment asks of every kernel.
struct Settings {
    /// `IRIS_TARGETS`.
    targets: Vec<Target>,
    /// `IRIS_DUMP`.
    dump: Option<std::path::PathBuf>,
    /// `IRIS_PEER_CHECKS`.
    peer_checks: bool,
    /// Tokens that make cargo rebuild the kernels when any of the variables changes.
    track: TokenStream,
}

/// The build settings from the environment.
fn build_settings(span: Span) -> Result<Settings, CompileError> {
    let targets = compiler::targets_from_env().map_err(|e| CompileError::new(span, e))?;
    let dump = compiler::dump_dir_from_env();
    let peer_checks = compiler::peer_checks_from_env().map_err(|e| CompileError::new(span, e))?;
    let track = quote! {
        const _: ::core::option::Option<&str> = ::core::option_env!("IRIS_TARGETS");
        const _: ::core::option::Option<&str> = ::core::option_env!("IRIS_DUMP");
        const _: ::core::option::Option<&str> = ::core::option_env!("IRIS_PEER_CHECKS");
    };
    Ok(Settings {
        targets,
        dump,
        peer_checks,
        track,
    })
}

/// Builds and compiles a unit, with peer checks when the attribute or the environment
/// asks for them.
fn compile(
    name: &str,
    items: &[SourceFn],
    consts: &[syn::ItemConst],
    structs: &[syn::ItemStruct],
    settings: &Settings,
    peer_checks: bool,
) -> Result<CompiledUnit, Vec<CompileError>> {
    let mut ir = compiler::frontend::build_unit_in_module(name, items, consts, structs)?;
    ir.peer_checks = peer_checks || settings.peer_checks;
    ir.trace_events = crate::TRACE_EVENTS;
    compiler::compile_ir(ir, &settings.targets, settings.dump.clone()).map_err(|e| vec![e])
}

/// The never-called copy of a function that rustc type-checks against the prelude.
fn check_shim(item: &syn::ItemFn, rename: Option<syn::Ident>) -> TokenStream {
    let mut f = item.clone();
    f.attrs
        .retain(|a| !a.path().is_ident("kernel") && !a.path().is_ident("doc"));
    if let Some(name) = rename {
        f.sig.ident = name;
        f.vis = syn::Visibility::Inherited;
    }
    quote! {
        #[doc(hidden)]
        #[allow(dead_code, unused_variables, unused_mut, unused_unsafe, unused_parens, clippy::all, clippy::undocumented_unsafe_blocks)]
        #f
    }
}

fn shim_name(kernel: &syn::Ident) -> syn::Ident {
    format_ident!("__iris_kernel_{}", kernel)
}

/// The libraries an attribute's `__libraries(..)` carries, and its other arguments; or,
/// for an attribute with `uses(..)`, the expansion that collects the libraries first.
fn libraries_or_collect(
    which: &str,
    attr: TokenStream,
    item: &TokenStream,
) -> Result<(Vec<library::Library>, TokenStream), TokenStream> {
    let args = options::split_library_args(attr).map_err(|e| e.to_compile_error())?;
    if !args.uses.is_empty() {
        let item = library::with_imports(item.clone(), &args.uses, which == "kernels");
        return Err(library::start_collecting(
            which, &args.uses, args.rest, item,
        ));
    }
    let libraries = match args.libraries {
        Some(tokens) => library::parse_libraries(tokens).map_err(|e| e.to_compile_error())?,
        None => Vec::new(),
    };
    Ok((libraries, args.rest))
}

/// `#[iris::kernel] fn ...`
pub fn kernel(attr: TokenStream, item: TokenStream) -> TokenStream {
    let (libraries, attr) = match libraries_or_collect("kernel", attr, &item) {
        Ok(l) => l,
        Err(expansion) => return expansion,
    };
    let options = match options::parse("#[iris::kernel]", attr) {
        Ok(o) => o,
        Err(e) => return e.to_compile_error(),
    };
    let func: syn::ItemFn = match syn::parse2(item.clone()) {
        Ok(f) => f,
        Err(_) => {
            return syn::Error::new(
                Span::call_site(),
                "#[iris::kernel] goes on a function; for several kernels sharing device functions use #[iris::kernels] on a module",
            )
            .to_compile_error();
        }
    };
    let name = func.sig.ident.clone();
    let shim = check_shim(&func, Some(shim_name(&name)));
    let settings = match build_settings(name.span()) {
        Ok(s) => s,
        Err(e) => return errors_to_tokens(&[e]).into_iter().chain(shim).collect(),
    };
    let track = &settings.track;
    let mut sources = vec![SourceFn {
        item: func.clone(),
        is_kernel: true,
        instances: options.instances,
        max_threads: options.max_threads,
    }];
    match library::library_functions(&libraries, &sources) {
        Ok(fns) => sources.extend(fns),
        Err(e) => {
            let e = e.to_compile_error();
            return quote!(#e #shim);
        }
    }
    let compiled = compile(
        &name.to_string(),
        &sources,
        &[],
        &[],
        &settings,
        options.peer_checks,
    );
    match compiled {
        Err(errors) => {
            let errs = errors_to_tokens(&errors);
            quote!(#errs #shim)
        }
        Ok(unit) => {
            let unit_static = unit_static(&unit, &name.to_string(), "UNIT");
            let kernels = kernels_of(&func, &unit);
            let launcher = launcher_module(&func, &unit, &kernels, unit_static);
            quote!(#shim #launcher #track)
        }
    }
}

/// `#[iris::kernels] mod ... { ... }`
pub fn kernels(attr: TokenStream, item: TokenStream) -> TokenStream {
    let (libraries, attr) = match libraries_or_collect("kernels", attr, &item) {
        Ok(l) => l,
        Err(expansion) => return expansion,
    };
    let options = match options::parse("#[iris::kernels]", attr) {
        Ok(o) => o,
        Err(e) => return e.to_compile_error(),
    };
    let module: syn::ItemMod = match syn::parse2(item) {
        Ok(m) => m,
        Err(_) => {
            return syn::Error::new(
                Span::call_site(),
                "#[iris::kernels] goes on an inline module: `mod name { ... }`",
            )
            .to_compile_error();
        }
    };
    let Some((_, items)) = &module.content else {
        return syn::Error::new(
            module.span(),
            "#[iris::kernels] needs the module's body inline: `mod name { ... }`",
        )
        .to_compile_error();
    };
    let mut kept = Vec::new();
    let mut functions = Vec::new();
    let mut consts = Vec::new();
    let mut structs = Vec::new();
    let mut errors = Vec::new();
    for item in items {
        match item {
            syn::Item::Fn(f) => {
                let marker = f.attrs.iter().find(|a| a.path().is_ident("kernel"));
                let marked = match marker.map(options::kernel_marker) {
                    Some(Ok(options)) => options,
                    Some(Err(e)) => {
                        errors.push(CompileError::new(e.span(), e.to_string()));
                        options::Options::default()
                    }
                    None => options::Options::default(),
                };
                functions.push(SourceFn {
                    item: f.clone(),
                    is_kernel: marker.is_some(),
                    instances: marked.instances,
                    max_threads: marked.max_threads,
                });
            }
            syn::Item::Use(_) => kept.push(item.to_token_stream()),
            syn::Item::Const(c) => {
                consts.push(c.clone());
                kept.push(item.to_token_stream());
            }
            syn::Item::Struct(st) => {
                structs.push(st.clone());
                // The host sees the struct as the device lays it out.
                let repr_c = st.attrs.iter().any(|a| a.path().is_ident("repr"));
                let repr = (!repr_c).then(|| quote!(#[repr(C)]));
                kept.push(quote!(#repr #st));
            }
            other => errors.push(CompileError::new(
                other.span(),
                "a #[iris::kernels] module holds functions (kernels marked #[kernel], and device functions), `const`, `struct` and `use` items only",
            )),
        }
    }
    let mod_name = module.ident.clone();
    let mut shims = TokenStream::new();
    for f in &functions {
        let rename = f.is_kernel.then(|| shim_name(&f.item.sig.ident));
        shims.extend(check_shim(&f.item, rename));
    }
    match library::library_functions(&libraries, &functions) {
        Ok(fns) => functions.extend(fns),
        Err(e) => errors.push(CompileError::new(e.span(), e.to_string())),
    }
    let attrs = &module.attrs;
    let vis = &module.vis;
    if !errors.is_empty() {
        let errs = errors_to_tokens(&errors);
        return quote!(#errs #(#attrs)* #vis mod #mod_name { #(#kept)* #shims });
    }
    let body = match build_settings(mod_name.span()) {
        Err(e) => errors_to_tokens(&[e]),
        Ok(settings) => {
            let track = &settings.track;
            match compile(
                &mod_name.to_string(),
                &functions,
                &consts,
                &structs,
                &settings,
                options.peer_checks,
            ) {
                Err(errors) => errors_to_tokens(&errors),
                Ok(unit) => {
                    let unit_static = unit_static(&unit, &mod_name.to_string(), "__IRIS_UNIT");
                    let mut launchers = struct_parameters(&unit);
                    for f in functions.iter().filter(|f| f.is_kernel) {
                        let kernels = kernels_of(&f.item, &unit);
                        launchers.extend(launcher_module(
                            &f.item,
                            &unit,
                            &kernels,
                            quote!(
                                pub use super::__IRIS_UNIT as UNIT;
                            ),
                        ));
                    }
                    quote!(#[doc(hidden)] #unit_static #launchers #track)
                }
            }
        }
    };
    quote!(#(#attrs)* #vis mod #mod_name { #(#kept)* #shims #body })
}

/// For each struct a kernel of `unit` takes by value: `Pod` (the launcher passes its
/// bytes; the frontend checked it has no padding and only number and vector fields), and
/// a compile-time check that the host lays it out as the device does.
fn struct_parameters(unit: &CompiledUnit) -> TokenStream {
    let krate = crate::paths::krate();
    let mut seen = Vec::new();
    let mut out = TokenStream::new();
    for f in unit.ir.functions.iter().filter(|f| f.is_kernel) {
        for p in f.params() {
            let compiler::kernel_ir::Type::Struct(st) = &p.ty else {
                continue;
            };
            let Some(name) = &st.name else { continue };
            if seen.contains(name) {
                continue;
            }
            seen.push(name.clone());
            let ident = syn::Ident::new(name, proc_macro2::Span::call_site());
            let size = p.ty.size().unwrap_or(0) as usize;
            let align = p.ty.align().unwrap_or(1) as usize;
            let message = format!(
                "the host lays out `{name}` differently from the device ({size} bytes, {align}-byte aligned)"
            );
            out.extend(quote! {
                // SAFETY: `repr(C)`, `Copy`, every field a number or a vector (or such a
                // struct), no padding (checked by the kernel compiler and below).
                unsafe impl #krate::Pod for #ident {}
                const _: () = ::core::assert!(
                    ::core::mem::size_of::<#ident>() == #size
                        && ::core::mem::align_of::<#ident>() == #align,
                    #message
                );
            });
        }
    }
    out
}
