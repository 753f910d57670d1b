//! The arguments of `#[iris::kernel(..)]` and `#[iris::kernels(..)]`.

use proc_macro2::TokenStream;
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;

/// What an attribute's arguments ask for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Options {
    /// `peer_checks`: check every remote operation's peer against the world size.
    pub peer_checks: bool,
}

/// The argument names the attributes accept.
const ACCEPTED: &str = "`peer_checks`";

/// Parses the arguments of attribute `attribute` (`#[iris::kernel]`, `#[iris::kernels]`):
/// nothing, or `peer_checks`. Anything else is an error at its tokens naming what is
/// accepted.
pub fn parse(attribute: &str, args: TokenStream) -> syn::Result<Options> {
    let mut options = Options::default();
    if args.is_empty() {
        return Ok(options);
    }
    let idents = Punctuated::<syn::Ident, syn::Token![,]>::parse_terminated
        .parse2(args.clone())
        .map_err(|_| {
            syn::Error::new(
                args.span(),
                format!("{attribute} takes no arguments or {ACCEPTED}"),
            )
        })?;
    for ident in idents {
        if ident == "peer_checks" {
            options.peer_checks = true;
        } else {
            return Err(syn::Error::new(
                ident.span(),
                format!(
                    "unknown argument `{ident}` of {attribute}; the one accepted is {ACCEPTED} (check every remote operation's peer against the world size)"
                ),
            ));
        }
    }
    Ok(options)
}

/// An error for a `#[kernel(..)]` marker with arguments inside an `#[iris::kernels]`
/// module (its kernels share device functions, so checks are chosen for the module).
pub fn kernel_marker_error(attr: &syn::Attribute) -> Option<syn::Error> {
    let arguments = match &attr.meta {
        syn::Meta::Path(_) => return None,
        syn::Meta::List(list) => list.tokens.span(),
        syn::Meta::NameValue(nv) => nv.value.span(),
    };
    let message = "`#[kernel]` inside an #[iris::kernels] module takes no arguments: write `#[iris::kernels(peer_checks)]` on the module to check every kernel of it";
    Some(syn::Error::new(arguments, message))
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    #[test]
    fn accepts_nothing_or_peer_checks() {
        assert_eq!(
            parse("#[iris::kernel]", quote!()).unwrap(),
            Options::default()
        );
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
    }

    #[test]
    fn anything_else_names_the_accepted_argument() {
        let e = parse("#[iris::kernel]", quote!(bogus))
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown argument `bogus`"), "{e}");
        assert!(e.contains("`peer_checks`"), "{e}");
        let e = parse("#[iris::kernels]", quote!(peer_checks = true))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("#[iris::kernels] takes no arguments or `peer_checks`"),
            "{e}"
        );
    }
}
