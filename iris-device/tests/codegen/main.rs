//! Codegen tests: kernels compiled for every target, read back with LLVM's tools.

mod abi;
mod arrays;
mod atomics;
mod bulk_copy;
mod common;
mod control;
mod cpu_run;
mod everywhere;
mod hoisting;
mod kernels;
mod matrix;
mod peer_checks;
mod semantics;
mod signals;
mod smoke;
mod source;
mod structs;
mod symmetric;
mod time;
mod trace;
mod vectors;
mod warp;
