//! Errors: every failure reaches Python as `iris_rs.IrisError` with its whole message.

use pyo3::create_exception;
use pyo3::exceptions::PyRuntimeError;
use pyo3::PyErr;

create_exception!(
    iris_rs,
    IrisError,
    PyRuntimeError,
    "An error of the iris runtime or a refused argument; the message says what and why."
);

/// `err` as an `IrisError`, with the messages of its sources that its own omits.
pub fn to_py(err: iris::Error) -> PyErr {
    let mut message = err.to_string();
    let mut source = std::error::Error::source(&err);
    while let Some(s) = source {
        let text = s.to_string();
        if !message.contains(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
        source = s.source();
    }
    IrisError::new_err(message)
}

/// A refused argument, as an `IrisError`.
pub fn usage(message: impl Into<String>) -> PyErr {
    IrisError::new_err(message.into())
}
