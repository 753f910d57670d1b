//! Checking a launch before it reaches the device: arguments against the kernel's
//! parameters, grid and block against the kernel's and the device's limits.

use iris_device::abi::{KernelSpec, ParamKind};

use super::args::SlotKind;
use super::{KernelArgs, LaunchConfig};
use iris_driver::DeviceInfo;
use iris_driver::{Error, Result};

/// Checks a launch with `args` (which name the kernel) and `config` on a device described
/// by `device`, from context `context`; returns the kernel's spec.
pub(crate) fn validate(
    args: &KernelArgs<'_>,
    config: &LaunchConfig,
    device: &DeviceInfo,
    context: u64,
) -> Result<&'static KernelSpec> {
    let (unit, kernel) = (args.unit(), args.kernel());
    let spec = unit.kernels.get(kernel).ok_or(Error::NoSuchKernel {
        unit: unit.id,
        index: kernel,
        count: unit.kernels.len(),
    })?;
    let invalid_args = |reason: String| Error::InvalidArguments {
        kernel: spec.name.to_string(),
        reason,
    };
    let owner = args.context_id();
    if owner != context {
        return Err(invalid_args(format!(
            "the arguments were bound with context {owner}, the launch is on context {context}"
        )));
    }
    if let Some(problem) = args.deferred_error() {
        return Err(invalid_args(problem.to_string()));
    }
    check_slots(spec, args).map_err(invalid_args)?;
    check_dims(spec, config, device).map_err(|reason| Error::InvalidLaunchConfig {
        kernel: spec.name.to_string(),
        reason,
    })?;
    Ok(spec)
}

/// The slot count against the spec, then the first slot that did not fit its parameter
/// (found while the slots were bound).
fn check_slots(spec: &KernelSpec, args: &KernelArgs<'_>) -> Result<(), String> {
    let bound = args.slot_count();
    if bound != spec.slot_count() {
        return Err(format!(
            "{bound} argument slot(s) bound, the kernel's parameters ({}) take {}",
            signature(spec),
            spec.slot_count()
        ));
    }
    let Some(m) = args.mismatch() else {
        return Ok(());
    };
    let Some(param) = spec.params.get(m.param) else {
        return Err(format!("parameter {} is not in the kernel's spec", m.param));
    };
    let describe = format!("parameter {} `{}: {}`", m.param, param.name, param.ty);
    Err(match (param.kind, m.got) {
        (ParamKind::Value { size, align }, SlotKind::Value(ty)) => format!(
            "{describe} takes a value of {size} bytes (align {align}), got `{ty}` of {} bytes (align {})",
            m.size, m.align
        ),
        (ParamKind::Value { .. }, got) => format!("{describe} takes a value, got {}", what(got)),
        (ParamKind::Pointer, got) => {
            format!("{describe} takes a device pointer, got {}", what(got))
        }
        (ParamKind::Symmetric, got) => {
            format!("{describe} takes a symmetric buffer, got {}", what(got))
        }
    })
}

fn check_dims(spec: &KernelSpec, config: &LaunchConfig, device: &DeviceInfo) -> Result<(), String> {
    let axes = ["x", "y", "z"];
    for (axis, (&g, &max)) in axes
        .iter()
        .zip(config.grid.iter().zip(&device.max_grid_dims))
    {
        if g == 0 {
            return Err(format!("grid dimension {axis} is 0"));
        }
        if g > max {
            return Err(format!(
                "grid dimension {axis} is {g}, the device allows at most {max}"
            ));
        }
    }
    for (axis, (&b, &max)) in axes
        .iter()
        .zip(config.block.iter().zip(&device.max_block_dims))
    {
        if b == 0 {
            return Err(format!("block dimension {axis} is 0"));
        }
        if b > max {
            return Err(format!(
                "block dimension {axis} is {b}, the device allows at most {max}"
            ));
        }
    }
    let threads = config.block_threads();
    if threads > u64::from(device.max_threads_per_block) {
        return Err(format!(
            "{threads} threads per block; the device allows at most {}",
            device.max_threads_per_block
        ));
    }
    if spec.max_block_threads > 0 && threads > u64::from(spec.max_block_threads) {
        return Err(format!(
            "{threads} threads per block; the kernel was built for at most {}",
            spec.max_block_threads
        ));
    }
    Ok(())
}

fn what(kind: SlotKind) -> String {
    match kind {
        SlotKind::Value(ty) => format!("a value of type `{ty}`"),
        SlotKind::Pointer => "a device pointer".into(),
        SlotKind::Symmetric(_) => "a symmetric buffer".into(),
    }
}

fn signature(spec: &KernelSpec) -> String {
    spec.params
        .iter()
        .map(|p| format!("{}: {}", p.name, p.ty))
        .collect::<Vec<_>>()
        .join(", ")
}
