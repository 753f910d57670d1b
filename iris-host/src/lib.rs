//! The iris runtime.
#![warn(missing_docs)]
