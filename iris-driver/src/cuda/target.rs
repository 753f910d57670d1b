//! Which PTX code object of a kernel unit a CUDA device loads.

use iris_device::abi::{CodeObject, KernelUnit, TargetKind};

use crate::error::{Error, Result};

/// The `sm_` number of a PTX target name: `sm_90` -> (90, false), `sm_90a` -> (90, true).
/// The second value says the target is architecture-specific (runs on that exact device).
fn sm_number(target: &str) -> Option<(u32, bool)> {
    let rest = target.strip_prefix("sm_")?;
    let (digits, specific) = match rest.strip_suffix('a') {
        Some(d) => (d, true),
        None => (rest, false),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok().map(|n| (n, specific))
}

/// The target name of a device of compute capability `major.minor`: `sm_90`.
pub fn device_target(major: u32, minor: u32) -> String {
    format!("sm_{}", major * 10 + minor)
}

/// The PTX a device of compute capability `major.minor` loads: the highest `sm_XX` whose
/// number is at most the device's (`9.0` -> `sm_90`, `8.6` -> `sm_80` when that is the
/// best there is). An architecture-specific target (`sm_90a`) only fits its exact device.
/// Errors with [`Error::NoCodeObject`], naming the unit's targets, when none fits.
pub fn select_ptx(
    unit: &'static KernelUnit,
    major: u32,
    minor: u32,
) -> Result<&'static CodeObject> {
    let device = major * 10 + minor;
    unit.code_objects
        .iter()
        .filter(|o| o.kind == TargetKind::Nvptx)
        .filter_map(|o| sm_number(o.target).map(|(n, specific)| (o, n, specific)))
        .filter(|&(_, n, specific)| if specific { n == device } else { n <= device })
        .max_by_key(|&(_, n, specific)| (n, specific))
        .map(|(o, _, _)| o)
        .ok_or_else(|| Error::NoCodeObject {
            unit: unit.id,
            kind: TargetKind::Nvptx,
            device_target: device_target(major, minor),
            available: unit.target_names(),
            left_out: unit.left_out_reason(&device_target(major, minor)),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    const fn ptx(target: &'static str) -> CodeObject {
        CodeObject {
            target,
            kind: TargetKind::Nvptx,
            bytes: b"\0",
        }
    }

    const fn unit(code_objects: &'static [CodeObject]) -> KernelUnit {
        KernelUnit {
            id: "tests::unit",
            kernels: &[],
            code_objects,
            left_out: &[],
        }
    }

    static MIXED: KernelUnit = unit(&[
        ptx("sm_80"),
        ptx("sm_90"),
        CodeObject {
            target: "gfx942",
            kind: TargetKind::Amdgpu,
            bytes: b"",
        },
        CodeObject {
            target: "sm_100",
            kind: TargetKind::Amdgpu,
            bytes: b"",
        },
    ]);
    static AMD_ONLY: KernelUnit = unit(&[
        CodeObject {
            target: "gfx942",
            kind: TargetKind::Amdgpu,
            bytes: b"",
        },
        CodeObject {
            target: "sm_100",
            kind: TargetKind::Amdgpu,
            bytes: b"",
        },
    ]);
    static SPECIFIC: KernelUnit = unit(&[ptx("sm_80"), ptx("sm_90a")]);
    static BOTH: KernelUnit = unit(&[ptx("sm_90a"), ptx("sm_90")]);
    static ODD: KernelUnit = unit(&[ptx("sm_"), ptx("sm_x0"), ptx("compute_90"), ptx("sm_70")]);

    fn pick(unit: &'static KernelUnit, major: u32, minor: u32) -> Option<&'static str> {
        select_ptx(unit, major, minor).ok().map(|o| o.target)
    }

    #[test]
    fn hopper_takes_sm_90() {
        assert_eq!(pick(&MIXED, 9, 0), Some("sm_90"));
        assert_eq!(device_target(9, 0), "sm_90");
    }

    #[test]
    fn ampere_takes_sm_80() {
        assert_eq!(pick(&MIXED, 8, 0), Some("sm_80"));
        assert_eq!(pick(&MIXED, 8, 6), Some("sm_80"));
        assert_eq!(pick(&MIXED, 8, 9), Some("sm_80"));
    }

    #[test]
    fn newer_devices_take_the_highest() {
        assert_eq!(pick(&MIXED, 10, 0), Some("sm_90"));
        assert_eq!(pick(&MIXED, 12, 0), Some("sm_90"));
    }

    #[test]
    fn older_devices_find_none_and_hear_the_targets() {
        let err = select_ptx(&MIXED, 7, 5)
            .map(|o| o.target)
            .err()
            .map(|e| e.to_string());
        let err = err.unwrap_or_default();
        assert!(err.contains("sm_75"), "{err}");
        assert!(err.contains("sm_80, sm_90, gfx942, sm_100"), "{err}");
    }

    #[test]
    fn only_nvptx_objects_count() {
        assert_eq!(pick(&AMD_ONLY, 10, 0), None);
    }

    #[test]
    fn architecture_specific_fits_its_device_only() {
        assert_eq!(pick(&SPECIFIC, 9, 0), Some("sm_90a"));
        assert_eq!(pick(&SPECIFIC, 10, 0), Some("sm_80"));
        assert_eq!(pick(&BOTH, 9, 0), Some("sm_90a"));
    }

    #[test]
    fn odd_names_are_ignored() {
        assert_eq!(pick(&ODD, 9, 0), Some("sm_70"));
    }
}
