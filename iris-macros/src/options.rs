//! The arguments of `#[iris::kernel(..)]` and `#[iris::kernels(..)]`.

use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;

pub use iris_device::compiler::frontend::InstanceList;

/// What an attribute's arguments ask for.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// `peer_checks`: check every remote operation's peer against the world size.
    pub peer_checks: bool,
    /// `instances(T = [..], N = [..])`: the instances of a generic kernel.
    pub instances: Option<InstanceList>,
    /// `max_threads = N`: the most threads per block the kernel is built for.
    pub max_threads: Option<u32>,
}

/// The argument names the attributes accept.
const ACCEPTED: &str =
    "`peer_checks`, `instances(T = [..])`, `max_threads = N` and `uses(library, ..)`";

/// The largest `max_threads` (every target's most threads per block).
const MAX_THREADS: u32 = iris_device::compiler::MAX_BLOCK_THREADS;

/// Parses the arguments of attribute `attribute` (`#[iris::kernel]`, `#[iris::kernels]`):
/// nothing, `peer_checks`, `instances(..)` (for a generic kernel), or both. Anything else
/// is an error at its tokens naming what is accepted.
pub fn parse(attribute: &str, args: TokenStream) -> syn::Result<Options> {
    let mut options = Options::default();
    if args.is_empty() {
        return Ok(options);
    }
    let metas = Punctuated::<syn::Meta, syn::Token![,]>::parse_terminated
        .parse2(args.clone())
        .map_err(|_| {
            syn::Error::new(
                args.span(),
                format!("{attribute} takes no arguments, or {ACCEPTED}"),
            )
        })?;
    for meta in metas {
        match &meta {
            syn::Meta::Path(p) if p.is_ident("peer_checks") => options.peer_checks = true,
            syn::Meta::List(l) if l.path.is_ident("instances") => {
                if attribute == "#[iris::kernels]" {
                    return Err(syn::Error::new(
                        l.span(),
                        "`instances(..)` goes on the generic kernel's own marker: `#[kernel(instances(T = [..]))]`",
                    ));
                }
                if options.instances.is_some() {
                    return Err(syn::Error::new(l.span(), "`instances(..)` is given twice"));
                }
                options.instances = Some(InstanceList::parse(l.tokens.clone())?);
            }
            syn::Meta::NameValue(nv) if nv.path.is_ident("max_threads") => {
                if attribute == "#[iris::kernels]" {
                    return Err(syn::Error::new(
                        nv.span(),
                        "`max_threads = N` goes on each kernel's own marker: `#[kernel(max_threads = 256)]`",
                    ));
                }
                if options.max_threads.is_some() {
                    return Err(syn::Error::new(nv.span(), "`max_threads` is given twice"));
                }
                options.max_threads = Some(max_threads(&nv.value)?);
            }
            other => {
                let name = other
                    .path()
                    .get_ident()
                    .map(|i| i.to_string())
                    .unwrap_or_else(|| "this".into());
                return Err(syn::Error::new(
                    other.span(),
                    format!(
                        "unknown argument `{name}` of {attribute}; accepted: {ACCEPTED} (check every remote operation's peer against the world size; build a generic kernel for these arguments; build for blocks of at most N threads; compile with device libraries)"
                    ),
                ));
            }
        }
    }
    Ok(options)
}

/// The value of `max_threads = N`: an integer literal from 1 to `MAX_THREADS`.
fn max_threads(value: &syn::Expr) -> syn::Result<u32> {
    let usage = format!(
        "`max_threads` takes an integer literal from 1 to {MAX_THREADS} (the most threads per block a kernel can have on every target), e.g. `max_threads = 256`"
    );
    let syn::Expr::Lit(syn::ExprLit {
        lit: syn::Lit::Int(lit),
        ..
    }) = value
    else {
        return Err(syn::Error::new(value.span(), usage));
    };
    match lit.base10_parse::<u32>() {
        Ok(n) if (1..=MAX_THREADS).contains(&n) => Ok(n),
        _ => Err(syn::Error::new(lit.span(), usage)),
    }
}

/// The arguments that route device libraries, split from the rest: `uses(a, b::c)`, the
/// hidden `__libraries(..)` the libraries' callbacks add, and the other arguments as
/// written.
pub struct LibraryArgs {
    /// The libraries named by `uses(..)`.
    pub uses: Vec<syn::Path>,
    /// The libraries' functions, once collected.
    pub libraries: Option<TokenStream>,
    /// Every other argument.
    pub rest: TokenStream,
}

/// Splits `uses(..)` and `__libraries(..)` from an attribute's arguments.
pub fn split_library_args(args: TokenStream) -> syn::Result<LibraryArgs> {
    let mut out = LibraryArgs {
        uses: Vec::new(),
        libraries: None,
        rest: TokenStream::new(),
    };
    if args.is_empty() {
        return Ok(out);
    }
    let Ok(metas) = Punctuated::<syn::Meta, syn::Token![,]>::parse_terminated.parse2(args.clone())
    else {
        // Left to `parse` to report.
        out.rest = args;
        return Ok(out);
    };
    let mut rest = Punctuated::<syn::Meta, syn::Token![,]>::new();
    for meta in metas {
        match &meta {
            syn::Meta::List(l) if l.path.is_ident("uses") => {
                let paths = Punctuated::<syn::Path, syn::Token![,]>::parse_terminated
                    .parse2(l.tokens.clone())
                    .map_err(|_| syn::Error::new(l.tokens.span(), "write the libraries a module uses as `uses(my_math, other_crate::their_lib)`"))?;
                if paths.is_empty() {
                    return Err(syn::Error::new(l.span(), "`uses(..)` names no library"));
                }
                out.uses.extend(paths);
            }
            syn::Meta::List(l) if l.path.is_ident("__libraries") => {
                out.libraries = Some(l.tokens.clone());
            }
            _ => rest.push(meta),
        }
    }
    out.rest = rest.into_token_stream();
    Ok(out)
}

/// The options of a `#[kernel(..)]` marker inside an `#[iris::kernels]` module: it takes
/// `instances(..)` and `max_threads = N` (checks are chosen for the whole module, whose
/// kernels share device functions).
pub fn kernel_marker(attr: &syn::Attribute) -> syn::Result<Options> {
    let list = match &attr.meta {
        syn::Meta::Path(_) => return Ok(Options::default()),
        syn::Meta::List(list) => list,
        syn::Meta::NameValue(nv) => {
            return Err(syn::Error::new(nv.value.span(), MARKER_USAGE));
        }
    };
    let options = parse("#[kernel]", list.tokens.clone())
        .map_err(|e| syn::Error::new(e.span(), format!("{e}; {MARKER_USAGE}")))?;
    if options.peer_checks {
        return Err(syn::Error::new(list.tokens.span(), MARKER_USAGE));
    }
    Ok(options)
}

const MARKER_USAGE: &str = "`#[kernel]` inside an #[iris::kernels] module takes only `instances(..)` and `max_threads = N`: write `#[iris::kernels(peer_checks)]` on the module to check every kernel of it";

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    #[test]
    fn accepts_nothing_peer_checks_or_instances() {
        let none = parse("#[iris::kernel]", quote!()).unwrap();
        assert!(!none.peer_checks && none.instances.is_none());
        assert!(
            parse("#[iris::kernel]", quote!(peer_checks))
                .unwrap()
                .peer_checks
        );
        assert!(
            parse("#[iris::kernels]", quote!(peer_checks,))
                .unwrap()
                .peer_checks
        );
        let both = parse(
            "#[iris::kernel]",
            quote!(instances(T = [f32, bf16], N = [4]), peer_checks),
        )
        .unwrap();
        assert!(both.peer_checks);
        let list = both.instances.unwrap();
        assert_eq!(list.params.len(), 2);
        assert_eq!(list.params[0].1.len(), 2);
    }

    #[test]
    fn max_threads_is_a_literal_from_1_to_1024() {
        let o = parse("#[iris::kernel]", quote!(max_threads = 256, peer_checks)).unwrap();
        assert_eq!(o.max_threads, Some(256));
        assert!(o.peer_checks);
        assert_eq!(
            parse("#[iris::kernel]", quote!(max_threads = 1024))
                .unwrap()
                .max_threads,
            Some(1024)
        );
        for bad in [
            quote!(max_threads = 0),
            quote!(max_threads = 1025),
            quote!(max_threads = n),
        ] {
            let e = parse("#[iris::kernel]", bad).unwrap_err().to_string();
            assert!(e.contains("from 1 to 1024"), "{e}");
        }
        let e = parse(
            "#[iris::kernel]",
            quote!(max_threads = 64, max_threads = 64),
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("given twice"), "{e}");
    }

    #[test]
    fn anything_else_names_the_accepted_arguments() {
        let e = parse("#[iris::kernel]", quote!(bogus))
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown argument `bogus`"), "{e}");
        assert!(e.contains("`peer_checks`"), "{e}");
        let e = parse("#[iris::kernels]", quote!(peer_checks = true))
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown argument `peer_checks`"), "{e}");
        let e = parse("#[iris::kernels]", quote!(instances(T = [f32])))
            .unwrap_err()
            .to_string();
        assert!(e.contains("kernel's own marker"), "{e}");
        let e = parse("#[iris::kernel]", quote!(instances(T = f32)))
            .unwrap_err()
            .to_string();
        assert!(e.contains("write `instances(T = [f32, bf16]"), "{e}");
    }
}
