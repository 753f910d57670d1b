//! Opening a backend by kind or from `IRIS_BACKEND`.

use std::sync::Arc;

use crate::device::Backend;
use crate::error::{Error, Result};
use crate::kind::BackendKind;
use crate::{cpu, cuda, hip};

impl BackendKind {
    /// Parses an `IRIS_BACKEND` value (case-insensitive): `cuda`, `hip` or `cpu`.
    pub fn from_name(name: &str) -> Result<BackendKind> {
        let lower = name.trim().to_ascii_lowercase();
        BackendKind::ALL
            .into_iter()
            .find(|k| k.name() == lower)
            .ok_or_else(|| Error::UnknownBackend {
                name: name.to_string(),
            })
    }
}

/// Opens the backend `kind`, or says why it is unavailable.
pub fn open(kind: BackendKind) -> Result<Arc<dyn Backend>> {
    let _span = tracing::debug_span!("open_backend", backend = kind.name()).entered();
    match kind {
        BackendKind::Cuda => cuda::open(),
        BackendKind::Hip => hip::open(),
        BackendKind::Cpu => cpu::open(),
    }
}

/// Opens the backend named by `IRIS_BACKEND`, or else the first present of cuda, hip, cpu.
pub fn open_default() -> Result<Arc<dyn Backend>> {
    match std::env::var("IRIS_BACKEND") {
        Ok(name) if !name.trim().is_empty() => open(BackendKind::from_name(&name)?),
        _ => open_first_present(),
    }
}

fn open_first_present() -> Result<Arc<dyn Backend>> {
    let mut reasons = Vec::new();
    for kind in BackendKind::ALL {
        match open(kind) {
            Ok(backend) => return Ok(backend),
            Err(err) => {
                tracing::debug!(backend = kind.name(), %err, "backend not present");
                reasons.push(err.to_string());
            }
        }
    }
    Err(Error::NoBackend { reasons })
}
