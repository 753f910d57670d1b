//! The block: `sync_threads()`, `fence(order, scope)`, `shared_array::<T, N>()`,
//! `copy_async(dst, src)` with `copy_async_commit()` and `copy_async_wait(n)`, and the
//! bulk copies: `bulk_barrier_init`, `bulk_expect`, `copy_bulk`, `bulk_wait`.

use super::super::kernel_ir::{Expr, ExprKind, Intrinsic, MemOrder, Scalar, SharedArray, Type};
use super::super::CompileError;
use super::atomics::{ordering_arg, scope_arg};
use super::builder::FnBuilder;
use super::types::{is_memory_type, parse_type};
use proc_macro2::Span;
use syn::spanned::Spanned;

/// The most bytes one shared array may hold: a block's most on Hopper (227 KiB). Arrays
/// over 48 KiB in total are dynamic shared memory (see `iris_device::abi::STATIC_SHARED_LIMIT`);
/// a device with less refuses to load the kernel, naming it.
const MAX_SHARED_BYTES: u64 = 227 * 1024;

impl FnBuilder<'_> {
    /// A block operation `name(..)`.
    pub fn block_call(
        &mut self,
        name: &str,
        generics: &syn::PathArguments,
        c: &syn::ExprCall,
        span: Span,
    ) -> Result<Expr, CompileError> {
        match name {
            "sync_threads" => {
                self.arity(c, name, 0)?;
                self.uses_block_barrier = true;
                Ok(self.expr(
                    ExprKind::Intrinsic(Intrinsic::SyncThreads),
                    Type::Unit,
                    span,
                ))
            }
            "fence" => {
                self.arity(c, name, 2)?;
                let order = ordering_arg(&c.args[0])?;
                let scope = scope_arg(&c.args[1])?;
                if order == MemOrder::Relaxed {
                    return Err(CompileError::new(
                        c.args[0].span(),
                        "a fence cannot be `Relaxed`: use Acquire, Release, AcqRel or SeqCst",
                    ));
                }
                Ok(self.expr(
                    ExprKind::Intrinsic(Intrinsic::Fence { order, scope }),
                    Type::Unit,
                    span,
                ))
            }
            "shared_array" => self.shared_array(generics, c, span),
            "copy_async" => self.copy_async(c, span),
            "copy_async_commit" => {
                self.arity(c, name, 0)?;
                let op = Intrinsic::CopyAsyncCommit;
                Ok(self.expr(ExprKind::Intrinsic(op), Type::Unit, span))
            }
            "copy_async_wait" => {
                self.arity(c, name, 1)?;
                let pending = match strip_block(&c.args[0]) {
                    syn::Expr::Lit(syn::ExprLit {
                        lit: syn::Lit::Int(i),
                        ..
                    }) => i.base10_parse::<u32>().ok().filter(|n| *n <= 7),
                    _ => None,
                }
                .ok_or_else(|| {
                    CompileError::new(
                        c.args[0].span(),
                        "`copy_async_wait` takes the number of groups that may stay in flight as an integer literal from 0 to 7",
                    )
                })?;
                let op = Intrinsic::CopyAsyncWait { pending };
                Ok(self.expr(ExprKind::Intrinsic(op), Type::Unit, span))
            }
            "bulk_barrier_init" => {
                self.arity(c, name, 1)?;
                let args = self.args(c)?;
                self.barrier_arg(name, &args[0])?;
                let [barrier] = super::calls::operands(args);
                let op = Intrinsic::BulkBarrierInit { barrier };
                Ok(self.expr(ExprKind::Intrinsic(op), Type::Unit, span))
            }
            "bulk_expect" | "bulk_wait" => {
                self.arity(c, name, 2)?;
                let args = self.args(c)?;
                self.barrier_arg(name, &args[0])?;
                self.infer
                    .unify(&args[1].ty, &Type::Scalar(Scalar::U32), args[1].span)?;
                let [barrier, value] = super::calls::operands(args);
                let op = if name == "bulk_expect" {
                    Intrinsic::BulkExpect {
                        barrier,
                        bytes: value,
                    }
                } else {
                    // A block barrier where there is no copy engine: the CPU runs the
                    // block's threads together.
                    self.uses_block_barrier = true;
                    Intrinsic::BulkWait {
                        barrier,
                        parity: value,
                    }
                };
                Ok(self.expr(ExprKind::Intrinsic(op), Type::Unit, span))
            }
            "copy_bulk" => self.copy_bulk(c, span),
            "copy_tile" => self.copy_tile(c, span),
            _ => Err(super::calls::unknown_intrinsic(name, span)),
        }
    }

    /// The barrier argument of `name`: a `*mut u64`.
    fn barrier_arg(&mut self, name: &str, arg: &Expr) -> Result<(), CompileError> {
        let what = format!("`{name}` takes the barrier as a `*mut u64` in block-shared memory (`shared_array::<u64, N>()`)");
        self.words_arg(arg, true, &what)
    }

    /// An argument that must be a `*mut u64` (`mutable`) or `*const u64`: else an error
    /// at it, `what` it is, then what was found.
    fn words_arg(&mut self, arg: &Expr, mutable: bool, what: &str) -> Result<(), CompileError> {
        let want = Type::Ptr {
            pointee: Box::new(Type::Scalar(Scalar::U64)),
            mutable,
        };
        if self.infer.unify(&arg.ty, &want, arg.span).is_err() {
            return Err(CompileError::new(
                arg.span,
                format!("{what}, found `{}`", self.infer.describe(&arg.ty)),
            ));
        }
        Ok(())
    }

    /// `copy_tile(dst, map, col, row, barrier)`: a `*mut T`, the tile map (`*const u64`),
    /// two `u32` and the barrier.
    fn copy_tile(&mut self, c: &syn::ExprCall, span: Span) -> Result<Expr, CompileError> {
        self.arity(c, "copy_tile", 5)?;
        let args = self.args(c)?;
        if !matches!(
            self.infer.shallow(&args[0].ty),
            Type::Ptr { mutable: true, .. }
        ) {
            return Err(CompileError::new(
                args[0].span,
                format!(
                    "`copy_tile` copies into a `*mut T` in block-shared memory, found `{}`",
                    self.infer.describe(&args[0].ty)
                ),
            ));
        }
        self.words_arg(
            &args[1],
            false,
            "`copy_tile` reads the tile map as a `*const u64` (a kernel parameter given `Iris::tile_map`'s buffer)",
        )?;
        for a in &args[2..4] {
            self.infer
                .unify(&a.ty, &Type::Scalar(Scalar::U32), a.span)?;
        }
        self.barrier_arg("copy_tile", &args[4])?;
        let [dst, map, col, row, barrier] = super::calls::operands(args);
        let op = Intrinsic::CopyTile {
            dst,
            map,
            col,
            row,
            barrier,
        };
        Ok(self.expr(ExprKind::Intrinsic(op), Type::Unit, span))
    }

    /// `copy_bulk(dst, src, barrier)`: pointers to one type of a multiple of 16 bytes.
    fn copy_bulk(&mut self, c: &syn::ExprCall, span: Span) -> Result<Expr, CompileError> {
        self.arity(c, "copy_bulk", 3)?;
        let args = self.args(c)?;
        let ty = self.copied_type("copy_bulk", &args[0], &args[1])?;
        self.barrier_arg("copy_bulk", &args[2])?;
        match ty.size() {
            Some(n) if n > 0 && n % 16 == 0 && n < (1 << 20) => {}
            _ => {
                return Err(CompileError::new(
                    span,
                    format!(
                        "`copy_bulk` moves a multiple of 16 bytes under 1 MiB (a row such as `[bf16; 64]`); `{}` is not",
                        self.infer.describe(&ty)
                    ),
                ))
            }
        }
        let [dst, src, barrier] = super::calls::operands(args);
        let op = Intrinsic::CopyBulk { dst, src, barrier };
        Ok(self.expr(ExprKind::Intrinsic(op), Type::Unit, span))
    }

    /// The type copy `name` moves from `src` (a `*const T` or `*mut T`) to `dst` (a
    /// `*mut T`).
    fn copied_type(&mut self, name: &str, dst: &Expr, src: &Expr) -> Result<Type, CompileError> {
        let pointee = |e: &Expr, want_mut: bool| -> Result<Type, CompileError> {
            match self.infer.shallow(&e.ty) {
                Type::Ptr { pointee, mutable } if mutable || !want_mut => {
                    Ok(self.infer.shallow(&pointee))
                }
                other => Err(CompileError::new(
                    e.span,
                    format!(
                        "`{name}` takes `{}` pointers, found `{}`",
                        if want_mut { "*mut T" } else { "*const T" },
                        self.infer.describe(&other)
                    ),
                )),
            }
        };
        let to = pointee(dst, true)?;
        let from = pointee(src, false)?;
        self.infer.unify(&from, &to, src.span)?;
        Ok(self.infer.shallow(&to))
    }

    /// `copy_async(dst, src)`: pointers to one type of 4, 8 or 16 bytes.
    fn copy_async(&mut self, c: &syn::ExprCall, span: Span) -> Result<Expr, CompileError> {
        self.arity(c, "copy_async", 2)?;
        let args = self.args(c)?;
        let ty = self.copied_type("copy_async", &args[0], &args[1])?;
        if !matches!(ty.size(), Some(4 | 8 | 16)) {
            return Err(CompileError::new(
                span,
                format!(
                    "`copy_async` moves 4, 8 or 16 bytes (`[bf16; 8]`, `f32x4`, `u32`, ..); `{}` is not one of them",
                    self.infer.describe(&ty)
                ),
            ));
        }
        let [dst, src] = super::calls::operands(args);
        let op = Intrinsic::CopyAsync { dst, src };
        Ok(self.expr(ExprKind::Intrinsic(op), Type::Unit, span))
    }

    fn shared_array(
        &mut self,
        generics: &syn::PathArguments,
        c: &syn::ExprCall,
        span: Span,
    ) -> Result<Expr, CompileError> {
        self.arity(c, "shared_array", 0)?;
        if !self.sig.is_kernel {
            return Err(CompileError::new(
                span,
                "`shared_array` is declared in kernels only: declare it in the kernel and pass the pointer to the device function",
            ));
        }
        let usage = "write `shared_array::<T, N>()` with an element type and a literal length";
        let syn::PathArguments::AngleBracketed(a) = generics else {
            return Err(CompileError::new(span, usage));
        };
        let mut it = a.args.iter();
        let (Some(syn::GenericArgument::Type(t)), Some(len), None) =
            (it.next(), it.next(), it.next())
        else {
            return Err(CompileError::new(a.span(), usage));
        };
        let elem = parse_type(t)?;
        if !is_memory_type(&elem) {
            return Err(CompileError::new(
                t.span(),
                "shared arrays hold scalars or 16-byte vectors",
            ));
        }
        let module_const = match len {
            syn::GenericArgument::Type(syn::Type::Path(p)) if p.path.segments.len() == 1 => self
                .unit
                .constant(&p.path.segments[0].ident.to_string())
                .map(|c| (*c.expr).clone()),
            _ => None,
        };
        let len_expr = match (len, &module_const) {
            (_, Some(e)) => e,
            (syn::GenericArgument::Const(e), None) => e,
            (syn::GenericArgument::Type(syn::Type::Path(p)), None) => {
                return Err(CompileError::new(
                    p.span(),
                    "the length of a shared array must be an integer literal, a const parameter of the kernel (`shared_array::<u32, N>()` with `const N: usize`) or a `const` item of the `#[iris::kernels]` module",
                ))
            }
            (other, None) => return Err(CompileError::new(other.span(), usage)),
        };
        let n = match strip_block(len_expr) {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Int(i),
                ..
            }) => i
                .base10_parse::<u64>()
                .map_err(|e| CompileError::new(i.span(), e.to_string()))?,
            other => {
                return Err(CompileError::new(
                    other.span(),
                    "the length of a shared array must be an integer literal or a const parameter of the kernel (`shared_array::<u32, N>()` with `const N: usize`)",
                ))
            }
        };
        let bytes = n.saturating_mul(elem.size().unwrap_or(1) as u64);
        if n == 0 || bytes > MAX_SHARED_BYTES {
            return Err(CompileError::new(
                len_expr.span(),
                format!(
                    "a shared array must hold 1 to {MAX_SHARED_BYTES} bytes (227 KiB, a Hopper block's most); this one is {bytes}"
                ),
            ));
        }
        let index = self.shared_arrays.len();
        self.shared_arrays.push(SharedArray {
            elem: elem.clone(),
            len: n,
        });
        let ty = Type::Ptr {
            pointee: Box::new(elem),
            mutable: true,
        };
        Ok(self.expr(
            ExprKind::Intrinsic(Intrinsic::SharedArray { index }),
            ty,
            span,
        ))
    }
}

fn strip_block(e: &syn::Expr) -> &syn::Expr {
    match e {
        syn::Expr::Block(b) if b.block.stmts.len() == 1 => match &b.block.stmts[0] {
            syn::Stmt::Expr(inner, None) => strip_block(inner),
            _ => e,
        },
        syn::Expr::Paren(p) => strip_block(&p.expr),
        other => other,
    }
}
