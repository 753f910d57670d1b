//! Thread, block and grid coordinates: `thread_idx_x()` .. `grid_dim_z()`.

use super::super::kernel_ir::{Dim, Expr, ExprKind, Intrinsic, Scalar, Type};
use super::super::CompileError;
use super::builder::FnBuilder;
use proc_macro2::Span;

impl FnBuilder<'_> {
    /// A coordinate `name()` (`thread_idx_x`, .., `grid_dim_z`), a `u32`.
    pub fn id_call(
        &mut self,
        name: &str,
        c: &syn::ExprCall,
        span: Span,
    ) -> Result<Expr, CompileError> {
        let unknown = || super::calls::unknown_intrinsic(name, span);
        let (which, dim) = name.rsplit_once('_').ok_or_else(unknown)?;
        let d = match dim {
            "x" => Dim::X,
            "y" => Dim::Y,
            "z" => Dim::Z,
            _ => return Err(unknown()),
        };
        let op = match which {
            "thread_idx" => Intrinsic::ThreadIdx(d),
            "block_idx" => Intrinsic::BlockIdx(d),
            "block_dim" => Intrinsic::BlockDim(d),
            "grid_dim" => Intrinsic::GridDim(d),
            _ => return Err(unknown()),
        };
        self.arity(c, name, 0)?;
        Ok(self.expr(ExprKind::Intrinsic(op), Type::Scalar(Scalar::U32), span))
    }
}
