//! The checked arguments of an intrinsic call, taken in order.

use super::super::kernel_ir::Expr;
use super::super::CompileError;
use proc_macro2::Span;

/// An intrinsic call's arguments, after checking how many there are.
pub struct Operands {
    args: std::vec::IntoIter<Expr>,
    span: Span,
}

impl Operands {
    /// `args` of the call of `name` at `span`, which takes `want` of them.
    pub fn new(name: &str, args: Vec<Expr>, want: usize, span: Span) -> Result<Self, CompileError> {
        if args.len() != want {
            return Err(CompileError::new(
                span,
                format!("`{name}` takes {want} argument(s), {} given", args.len()),
            ));
        }
        Ok(Self {
            args: args.into_iter(),
            span,
        })
    }

    /// The next argument.
    pub fn next(&mut self) -> Result<Box<Expr>, CompileError> {
        self.args
            .next()
            .map(Box::new)
            .ok_or_else(|| CompileError::new(self.span, "missing argument"))
    }
}
