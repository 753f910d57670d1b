//! `iris_rs`: iris from Python. A `Context` (`context::PyContext`) is this process's rank (from the
//! launcher's environment, as `World::from_env` reads it); its symmetric buffers come from
//! iris's heap, IPC or SHMEM provider, or are adopted from PyTorch symmetric tensors (their
//! rendezvous handle's `buffer_ptrs`, through the external provider); the collectives of
//! `iris::ccl` and this crate's translate-then-store kernel run on them. Every failure is
//! an `iris_rs.IrisError`.
//!
//! Tensors are read by duck typing (`data_ptr()`, `numel()`, `dtype`, `device`, or the
//! array interfaces): nothing links PyTorch or NumPy.
#![warn(missing_docs)]

mod buffer;
mod context;
mod dtype;
mod error;
mod kernels;
mod rank;
mod tensor;

use pyo3::prelude::*;

/// The native module, `iris_rs._native` (re-exported by the `iris_rs` package).
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<context::PyContext>()?;
    m.add_class::<buffer::PySymmetric>()?;
    m.add("IrisError", m.py().get_type::<error::IrisError>())?;
    m.add("SUPPORTED_DTYPES", dtype::SUPPORTED)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
