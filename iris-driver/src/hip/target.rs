//! Which HSA code object of a kernel unit an AMD device loads.

use iris_device::abi::{CodeObject, KernelUnit, TargetKind};

use crate::error::{Error, Result};

/// The processor of a `gcnArchName`, without its feature suffixes:
/// `gfx942:sramecc+:xnack-` -> `gfx942`.
pub fn processor(gcn_arch_name: &str) -> &str {
    let name = gcn_arch_name.trim_end_matches('\0').trim();
    name.split(':').next().unwrap_or(name)
}

/// The code object a device whose `gcnArchName` is `gcn_arch_name` loads: the AMD object
/// built for exactly its processor (HSA code objects do not run on other processors).
/// Errors with [`Error::NoCodeObject`], naming the unit's targets, when none fits.
pub fn select_hsaco(unit: &'static KernelUnit, gcn_arch_name: &str) -> Result<&'static CodeObject> {
    let wanted = processor(gcn_arch_name);
    unit.code_objects
        .iter()
        .find(|o| o.kind == TargetKind::Amdgpu && o.target == wanted)
        .ok_or_else(|| Error::NoCodeObject {
            unit: unit.id,
            kind: TargetKind::Amdgpu,
            device_target: wanted.to_string(),
            available: unit.target_names(),
            left_out: unit.left_out_reason(wanted),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    const fn amd(target: &'static str) -> CodeObject {
        CodeObject {
            target,
            kind: TargetKind::Amdgpu,
            bytes: b"\x7fELF",
        }
    }

    static UNIT: KernelUnit = KernelUnit {
        id: "tests::unit",
        kernels: &[],
        left_out: &[],
        code_objects: &[
            amd("gfx90a"),
            amd("gfx942"),
            amd("gfx950"),
            CodeObject {
                target: "sm_90",
                kind: TargetKind::Nvptx,
                bytes: b"\0",
            },
        ],
    };

    fn pick(name: &str) -> Result<&'static str> {
        select_hsaco(&UNIT, name).map(|o| o.target)
    }

    #[test]
    fn features_are_stripped() {
        assert_eq!(processor("gfx942:sramecc+:xnack-"), "gfx942");
        assert_eq!(processor("gfx90a"), "gfx90a");
        assert_eq!(processor("gfx950:sramecc+\0\0"), "gfx950");
        assert_eq!(pick("gfx942:sramecc+:xnack-").ok(), Some("gfx942"));
    }

    #[test]
    fn gfx90a_and_gfx950_match_exactly() {
        assert_eq!(pick("gfx90a:sramecc+:xnack-").ok(), Some("gfx90a"));
        assert_eq!(pick("gfx950").ok(), Some("gfx950"));
    }

    #[test]
    fn an_unknown_processor_hears_the_targets() {
        let err = pick("gfx1100")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("`gfx1100`"), "{err}");
        assert!(err.contains("tests::unit"), "{err}");
        assert!(err.contains("gfx90a, gfx942, gfx950, sm_90"), "{err}");
    }

    #[test]
    fn a_target_the_compiler_left_out_says_why() {
        static OLD_LLVM: KernelUnit = KernelUnit {
            id: "tests::old_llvm",
            kernels: &[],
            code_objects: &[amd("gfx90a"), amd("gfx942")],
            left_out: &[iris_device::abi::LeftOut {
                target: "gfx950",
                reason: "the kernel compiler's LLVM (19.1.7) cannot build gfx950",
            }],
        };
        let err = select_hsaco(&OLD_LLVM, "gfx950:sramecc+:xnack-")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("compiled for: gfx90a, gfx942"), "{err}");
        assert!(
            err.contains(
                "(gfx950 was left out: the kernel compiler's LLVM (19.1.7) cannot build gfx950)"
            ),
            "{err}"
        );
        let other = select_hsaco(&OLD_LLVM, "gfx1100")
            .err()
            .map(|e| e.to_string());
        assert!(!other.unwrap_or_default().contains("left out"));
    }

    #[test]
    fn nvptx_objects_never_match() {
        assert!(pick("sm_90").is_err());
    }
}
