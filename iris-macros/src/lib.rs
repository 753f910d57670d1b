//! `#[iris::kernel]` and `#[iris::kernels]`: Rust functions compiled to AMD, NVIDIA and CPU
//! code objects at build time.
//!
//! For each kernel the macro
//! 1. re-emits the body in a never-called function so rustc type-checks it against the
//!    prelude (and rust-analyzer completes it),
//! 2. builds the kernel IR, checks the subset, and compiles it for every target in
//!    `IRIS_TARGETS` (default: all) through LLVM,
//! 3. embeds the code objects and emits `name::launch(&iris, config, args..)`, a typed
//!    launcher: a `Symmetric<T>` parameter takes a `&SymmetricBuffer<T>`, a raw pointer any
//!    `AsDevicePtr<T>`, a value its own type.
//!
//! Anything outside the kernel subset is a `compile_error!` at the offending tokens.
//!
//! `#[iris::kernel(peer_checks)]` / `#[iris::kernels(peer_checks)]` (or `IRIS_PEER_CHECKS=1`
//! at build time, for every kernel) build kernels whose remote operations check the peer
//! index against the world size; see `iris_device::abi::peer_table`.
//!
//! With the `trace-events` feature (the facade's `trace-events`), `trace_event(id, value)`
//! records an event in the rank's trace; without it the call compiles to nothing.
//!
//! Use the attributes through the facade crate, `iris::kernel` and `iris::kernels`. The
//! examples below are not compiled here (this crate cannot depend on the facade); the same
//! forms are compiled and run as doc tests of the facade, in `docs/guide/` (chapter 2,
//! "The kernel language").

mod expand;
#[cfg(test)]
mod fuzz;
mod launcher;
mod library;
mod options;
mod paths;
mod unit_tokens;

use proc_macro::TokenStream;

/// Whether `trace_event` is built into kernels (the `trace-events` feature).
const TRACE_EVENTS: bool = cfg!(feature = "trace-events");

/// Compiles one function into a kernel and generates its launcher, `name::launch`.
///
/// ```text
/// use iris::prelude::*;
///
/// #[iris::kernel]
/// pub fn scale(x: *mut f32, a: f32, n: u64) {
///     let i = (block_idx_x() * block_dim_x() + thread_idx_x()) as u64;
///     if i < n {
///         unsafe { *x.add(i as usize) = a * *x.add(i as usize) };
///     }
/// }
/// // host: scale::launch(&iris, (blocks, threads), &buffer, 2.0, n)?;
/// ```
///
/// `#[iris::kernel(peer_checks)]` builds it with peer checks: a remote operation with a
/// peer outside the world is recorded (the host's next synchronization returns
/// `Error::PeerOutOfRange`) and touches a scratch slot instead of any peer.
///
/// `#[iris::kernel(max_threads = 256)]` builds it for blocks of at most 256 threads (1 to
/// 1024; the default is 1024): the GPU compilers may then give each thread more registers
/// (NVIDIA's `.maxntid`, AMD's `amdgpu-flat-work-group-size`), and a launch with larger
/// blocks is refused with `Error::InvalidLaunchConfig`.
#[proc_macro_attribute]
pub fn kernel(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand::guarded(|| expand::kernel(attr.into(), item.into())).into()
}

/// Compiles a module's functions as one unit: functions marked `#[kernel]` are kernels
/// (each gets a launcher module of its name), the others are device functions the
/// kernels may call.
///
/// ```text
/// #[iris::kernels]
/// mod reduce {
///     use iris::prelude::*;
///     fn add(a: f32, b: f32) -> f32 { a + b }
///     #[kernel]
///     pub fn sum_into(x: *mut f32, y: *const f32) { unsafe { *x = add(*x, *y) } }
/// }
/// ```
///
/// `#[iris::kernels(peer_checks)]` builds every kernel of the module with peer checks.
/// The markers inside take `instances(..)` (generic kernels) and `max_threads = N` (as
/// `#[iris::kernel]`'s).
#[proc_macro_attribute]
pub fn kernels(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand::guarded(|| expand::kernels(attr.into(), item.into())).into()
}

/// A shared device library: the module's functions can be called by the kernels of any
/// `#[iris::kernels(uses(name))]` module or `#[iris::kernel(uses(name))]` function of the
/// crate (and of other crates, as `uses(krate::path::name)`), generic ones too.
///
/// ```text
/// #[iris::device]
/// pub mod my_math {
///     use iris::prelude::*;
///     pub fn twice<T: Element>(x: T) -> T { x + x }
/// }
///
/// #[iris::kernels(uses(my_math))]
/// mod k {
///     use iris::prelude::*;
///     #[kernel]
///     pub fn double(x: *mut f32) { unsafe { *x = twice(*x) } }
/// }
/// ```
///
/// A library of this crate is named by its name (or a `crate::`/`self::`/`super::` path)
/// and must come before its users in the crate's text, as `macro_rules!` do: in the same
/// module, an enclosing one, or a module declared with `#[macro_use]`. Library names are
/// unique in a crate; a function name defined by two libraries a unit uses (or by a
/// library and the unit) is an error.
#[proc_macro_attribute]
pub fn device(attr: TokenStream, item: TokenStream) -> TokenStream {
    expand::guarded(|| library::device(attr.into(), item.into())).into()
}
