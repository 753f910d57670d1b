//! The kernel IR: a typed tree of one kernel unit, with the source span of every node.
//!
//! The frontend builds it from Rust tokens and checks its types; after checking every
//! `Type` is concrete (no `IntVar`/`FloatVar`). The LLVM stage lowers it per target.

mod intrinsic_table;
mod intrinsics;
mod nodes;
mod spins;
mod types;

pub use intrinsic_table::{lookup as lookup_intrinsic, names as intrinsic_names, Family};
pub use intrinsics::*;
pub use nodes::*;
pub use types::*;
