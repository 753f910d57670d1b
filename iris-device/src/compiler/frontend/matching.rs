//! `match` on numbers and `bool`, written as the `if` chain it means: the scrutinee is held
//! once, each arm's pattern (literals, `a | b`, ranges, constants, `_`, a name binding the
//! value), and its guard, become a condition, and the last arm is the `else` (rustc checks
//! on the kernel's source that the arms cover every value).

use proc_macro2::TokenStream;
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;

use super::super::kernel_ir::Expr;
use super::super::CompileError;
use super::builder::FnBuilder;

/// The local holding the scrutinee (a name no Rust source can write: it starts with two
/// underscores and names iris).
const HELD: &str = "__iris_matched";

impl FnBuilder<'_> {
    /// `match x { 1 | 2 => a, 3..=9 => b, _ => c }`.
    pub fn match_expr(&mut self, m: &syn::ExprMatch) -> Result<Expr, CompileError> {
        let held = syn::Ident::new(HELD, m.expr.span());
        if m.arms.is_empty() {
            return Err(CompileError::new(
                m.span(),
                "a `match` in a kernel has at least one arm",
            ));
        }
        let mut chain: Option<TokenStream> = None;
        for arm in m.arms.iter().rev() {
            let (cond, binding) = condition(&arm.pat, &held)?;
            let body = &arm.body;
            let bind = binding.map(|name| quote!(let #name = #held;));
            let body = quote_spanned!(arm.body.span()=> { #bind #body });
            let cond = match (&arm.guard, cond) {
                (Some((_, guard)), Some(c)) => Some(quote!((#c) && { #bind #guard })),
                (Some((_, guard)), None) => Some(quote!({ #bind #guard })),
                (None, c) => c,
            };
            chain = Some(match (chain, cond) {
                // The last arm (the first seen here) is the `else`: rustc checked that the
                // arms cover every value.
                (None, _) => body,
                (Some(rest), Some(c)) => quote!(if #c #body else { #rest }),
                (Some(_), None) => {
                    return Err(CompileError::new(
                        arm.pat.span(),
                        "this arm matches every value: the arms after it are never reached (make it the last)",
                    ))
                }
            });
        }
        let scrutinee = &m.expr;
        let chain = chain.unwrap_or_default();
        let tokens = quote_spanned!(m.span()=> { let #held = #scrutinee; #chain });
        let desugared: syn::Expr = syn::parse2(tokens).map_err(|e| {
            CompileError::new(m.span(), format!("this `match` cannot be read: {e}"))
        })?;
        self.expr_tree(&desugared)
    }
}

/// The condition `pat` tests on `held` (`None`: every value), and the name it binds.
fn condition(
    pat: &syn::Pat,
    held: &syn::Ident,
) -> Result<(Option<TokenStream>, Option<syn::Ident>), CompileError> {
    let usage = "a `match` arm in a kernel tests literals, `a | b`, ranges `a..=b` and `a..b`, constants and `_`, or binds the value to a name";
    Ok(match pat {
        syn::Pat::Wild(_) => (None, None),
        syn::Pat::Ident(i) if i.by_ref.is_none() && i.subpat.is_none() => {
            // A name binds the value, unless it names a constant (upper case, as rustc
            // reads a path pattern).
            let name = i.ident.to_string();
            if name.chars().next().is_some_and(char::is_uppercase) {
                let ident = &i.ident;
                (Some(quote!(#held == #ident)), None)
            } else {
                (None, Some(i.ident.clone()))
            }
        }
        syn::Pat::Lit(l) => (Some(quote!(#held == #l)), None),
        syn::Pat::Path(p) => (Some(quote!(#held == #p)), None),
        syn::Pat::Paren(p) => condition(&p.pat, held)?,
        syn::Pat::Range(r) => {
            let mut parts = Vec::new();
            if let Some(start) = &r.start {
                parts.push(quote!(#held >= #start));
            }
            if let Some(end) = &r.end {
                parts.push(match r.limits {
                    syn::RangeLimits::Closed(_) => quote!(#held <= #end),
                    syn::RangeLimits::HalfOpen(_) => quote!(#held < #end),
                });
            }
            if parts.is_empty() {
                (None, None)
            } else {
                (Some(quote!(#(#parts)&&*)), None)
            }
        }
        syn::Pat::Or(or) => {
            let mut parts = Vec::new();
            for case in &or.cases {
                match condition(case, held)? {
                    (Some(c), None) => parts.push(quote!((#c))),
                    (None, None) => return Ok((None, None)),
                    (_, Some(name)) => {
                        return Err(CompileError::new(
                            name.span(),
                            "a name inside `a | b` is not supported in kernels: bind the value in its own arm",
                        ))
                    }
                }
            }
            (Some(quote!(#(#parts)||*)), None)
        }
        other => return Err(CompileError::new(other.span(), usage)),
    })
}
