//! Opening a backend by kind or from `IRIS_BACKEND`, and choosing the code object a
//! device loads.

use std::sync::Arc;

use iris_device::abi::{CodeObject, KernelUnit, TargetKind};

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

/// Picks the code object of `unit` of family `kind` whose target `accepts` returns true
/// for, preferring later objects in the unit (the macro emits older targets first, so an
/// NVIDIA backend accepting every `sm_XY <= device` gets the newest). Errors with
/// [`Error::NoCodeObject`], naming the unit's targets.
pub fn select_code_object(
    unit: &'static KernelUnit,
    kind: TargetKind,
    device_target: &str,
    accepts: impl Fn(&str) -> bool,
) -> Result<&'static CodeObject> {
    unit.code_objects
        .iter()
        .rev()
        .find(|o| o.kind == kind && accepts(o.target))
        .ok_or_else(|| Error::NoCodeObject {
            unit: unit.id,
            kind,
            device_target: device_target.to_string(),
            available: unit.target_names(),
        })
}
