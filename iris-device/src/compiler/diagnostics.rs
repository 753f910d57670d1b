//! Compile errors: a message at a span, reported by the macro as `compile_error!`.

use proc_macro2::Span;
use std::fmt;

/// An error in a kernel, at the offending tokens.
#[derive(Clone, Debug)]
pub struct CompileError {
    /// Where.
    pub span: Span,
    /// What is wrong and what is supported instead.
    pub message: String,
}

impl CompileError {
    /// An error at `span`.
    pub fn new(span: Span, message: impl Into<String>) -> Self {
        CompileError {
            span,
            message: message.into(),
        }
    }

    /// As a `syn::Error`, whose `to_compile_error` places it at the span.
    pub fn to_syn(&self) -> syn::Error {
        syn::Error::new(self.span, &self.message)
    }
}

impl fmt::Display for CompileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CompileError {}
