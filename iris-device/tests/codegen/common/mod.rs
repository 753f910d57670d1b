//! Helpers shared by the codegen tests.

pub mod cpu;
pub mod ir;
pub mod loops;
pub mod tools;
