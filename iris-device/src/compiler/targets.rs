//! The targets the compiler emits code for, and `IRIS_TARGETS`.

use crate::abi::TargetKind;

/// A compilation target.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Target {
    /// AMD MI200 (CDNA2).
    Gfx90a,
    /// AMD MI300X/MI300A (CDNA3).
    Gfx942,
    /// AMD MI350X/MI355X (CDNA4).
    Gfx950,
    /// NVIDIA Ampere (A100) and newer, through PTX.
    Sm80,
    /// NVIDIA Hopper (H100, H200), through PTX.
    Sm90,
    /// NVIDIA Hopper with its architecture-specific instructions (`wgmma`): what a unit
    /// that calls `wg_mma` is compiled for in place of [`Target::Sm90`] (see
    /// [`Target::for_unit`]). Its code runs on Hopper only; other NVIDIA GPUs take the
    /// unit's `sm_80` code.
    Sm90a,
    /// The host CPU (the machine the macro runs on).
    Cpu,
}

/// Every target, in the order code objects are emitted.
pub const ALL_TARGETS: [Target; 6] = [
    Target::Gfx90a,
    Target::Gfx942,
    Target::Gfx950,
    Target::Sm80,
    Target::Sm90,
    Target::Cpu,
];

impl Target {
    /// The name used in `IRIS_TARGETS`, code-object tables and messages.
    pub fn name(self) -> &'static str {
        match self {
            Target::Gfx90a => "gfx90a",
            Target::Gfx942 => "gfx942",
            Target::Gfx950 => "gfx950",
            Target::Sm80 => "sm_80",
            Target::Sm90 => "sm_90",
            Target::Sm90a => "sm_90a",
            Target::Cpu => host_triple(),
        }
    }

    /// The device family.
    pub fn kind(self) -> TargetKind {
        match self {
            Target::Gfx90a | Target::Gfx942 | Target::Gfx950 => TargetKind::Amdgpu,
            Target::Sm80 | Target::Sm90 | Target::Sm90a => TargetKind::Nvptx,
            Target::Cpu => TargetKind::Cpu,
        }
    }

    /// The LLVM target triple.
    pub fn triple(self) -> &'static str {
        match self.kind() {
            TargetKind::Amdgpu => "amdgcn-amd-amdhsa",
            TargetKind::Nvptx => "nvptx64-nvidia-cuda",
            TargetKind::Cpu => host_triple(),
        }
    }

    /// The LLVM processor name.
    pub fn cpu(self) -> &'static str {
        match self {
            Target::Gfx90a => "gfx90a",
            Target::Gfx942 => "gfx942",
            Target::Gfx950 => "gfx950",
            Target::Sm80 => "sm_80",
            Target::Sm90 => "sm_90",
            Target::Sm90a => "sm_90a",
            Target::Cpu => "x86-64-v2",
        }
    }

    /// The LLVM target features: PTX 8.0 for sm_90 (the bulk copies and their barriers
    /// need it; LLVM's default there is 7.8; sm_90a starts at 8.0). CUDA 12.0 and newer
    /// drivers load it.
    pub fn features(self) -> &'static str {
        match self {
            Target::Sm90 => "+ptx80",
            _ => "",
        }
    }

    /// The target a unit is compiled for when `self` is asked for: [`Target::Sm90a`] for
    /// [`Target::Sm90`] when the unit uses warpgroup matrix operations, else `self`.
    pub fn for_unit(self, uses_warpgroup_mma: bool) -> Target {
        match self {
            Target::Sm90 if uses_warpgroup_mma => Target::Sm90a,
            other => other,
        }
    }

    /// Why the LLVM the build found cannot compile for this target, if it cannot: gfx950
    /// needs LLVM 20 (LLVM 19 does not know the processor and aborts in instruction
    /// selection).
    pub fn left_out_by_llvm(self) -> Option<&'static str> {
        match self {
            Target::Gfx950 if crate::compiler::llvm::LLVM_MAJOR < 20 => Some(concat!(
                "the kernel compiler's LLVM (",
                env!("IRIS_LLVM_VERSION"),
                ") cannot build gfx950; LLVM 20 and newer can (rebuild with IRIS_LLVM_CONFIG \
                 naming one)"
            )),
            _ => None,
        }
    }

    /// Parses one target name.
    pub fn from_name(name: &str) -> Option<Target> {
        ALL_TARGETS
            .into_iter()
            .find(|t| t.name() == name || (name == "cpu" && *t == Target::Cpu))
    }
}

/// The targets of `targets` the LLVM the build found can compile (all but those
/// [`Target::left_out_by_llvm`] names), in order.
pub fn buildable(targets: &[Target]) -> Vec<Target> {
    targets
        .iter()
        .copied()
        .filter(|t| t.left_out_by_llvm().is_none())
        .collect()
}

/// The triple of the machine the compiler runs on, which the CPU backend runs on too.
pub fn host_triple() -> &'static str {
    if cfg!(all(target_arch = "x86_64", target_os = "linux")) {
        "x86_64-unknown-linux-gnu"
    } else if cfg!(all(target_arch = "aarch64", target_os = "linux")) {
        "aarch64-unknown-linux-gnu"
    } else {
        "unsupported-host"
    }
}

/// The targets named by `IRIS_TARGETS` (comma-separated names, or the groups `amd`,
/// `nvidia`, `cpu`, `all`); all targets when unset or empty.
pub fn targets_from_env() -> Result<Vec<Target>, String> {
    match std::env::var("IRIS_TARGETS") {
        Ok(v) if !v.trim().is_empty() => parse_targets(&v),
        _ => Ok(ALL_TARGETS.to_vec()),
    }
}

/// Parses an `IRIS_TARGETS` value.
pub fn parse_targets(list: &str) -> Result<Vec<Target>, String> {
    let mut out: Vec<Target> = Vec::new();
    for word in list.split(',').map(str::trim).filter(|w| !w.is_empty()) {
        let group: Vec<Target> = match word {
            "all" => ALL_TARGETS.to_vec(),
            "amd" => vec![Target::Gfx90a, Target::Gfx942, Target::Gfx950],
            "nvidia" => vec![Target::Sm80, Target::Sm90],
            other => match Target::from_name(other) {
                Some(t) => vec![t],
                None => {
                    return Err(format!(
                        "IRIS_TARGETS names unknown target `{other}`; known: gfx90a, gfx942, gfx950, sm_80, sm_90, cpu, and the groups amd, nvidia, all"
                    ))
                }
            },
        };
        for t in group {
            if !out.contains(&t) {
                out.push(t);
            }
        }
    }
    if out.is_empty() {
        return Err("IRIS_TARGETS names no target".into());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_names_and_groups() {
        assert_eq!(
            parse_targets("sm_90,cpu").unwrap(),
            vec![Target::Sm90, Target::Cpu]
        );
        assert_eq!(parse_targets("amd").unwrap().len(), 3);
        assert_eq!(parse_targets("all,sm_90").unwrap().len(), 6);
        assert!(parse_targets("gfx1100").unwrap_err().contains("gfx1100"));
        assert!(parse_targets(" , ").is_err());
    }
}
