//! The one place the generated code names the runtime: every path the macros emit starts
//! at [`krate`], the facade crate `iris` (which users depend on, and which names itself
//! `iris` inside too, for its own collectives).

use proc_macro2::TokenStream;
use quote::quote;

/// The crate every emitted path starts from.
pub(crate) fn krate() -> TokenStream {
    quote!(::iris)
}

/// `iris::abi`: what the macro emits a kernel unit as.
pub(crate) fn abi() -> TokenStream {
    let k = krate();
    quote!(#k::abi)
}
