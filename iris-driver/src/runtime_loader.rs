//! Loading a vendor runtime once per process: the vendors' bindings panic when a library or
//! a symbol is missing, so the first load runs under `catch_unwind`, and every later call
//! gets the same answer (the runtime, or why it is unavailable).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::OnceLock;

use crate::error::{Error, Result};
use crate::kind::BackendKind;

/// Runs `load` once per `cell`; a panic in it is a failure. Errors are
/// [`Error::BackendUnavailable`] for `kind`.
pub(crate) fn load_once<T>(
    cell: &'static OnceLock<std::result::Result<T, String>>,
    kind: BackendKind,
    load: fn() -> std::result::Result<T, String>,
) -> Result<&'static T> {
    cell.get_or_init(|| {
        catch_unwind(AssertUnwindSafe(load))
            .unwrap_or_else(|_| Err(format!("the {kind} runtime library panicked while loading")))
    })
    .as_ref()
    .map_err(|reason| Error::BackendUnavailable {
        kind,
        reason: reason.clone(),
    })
}
