//! Linking emitted objects into code objects.

use super::super::Target;
use super::lld::link_shared;
use crate::abi::TargetKind;

/// Turns what LLVM emitted for `target` into the code object the runtime loads.
///
/// - AMDGPU: the object linked by `ld.lld -shared` (an HSA code object).
/// - CPU: the object linked by `ld.lld -shared --no-undefined`: a shared object that needs
///   nothing from any library (the lowering defines what LLVM would call), loadable with
///   `dlopen`.
/// - NVPTX: the PTX text with a trailing NUL (`cuModuleLoadData` takes a C string).
pub fn package(target: Target, emitted: &[u8]) -> Result<Vec<u8>, String> {
    match target.kind() {
        TargetKind::Amdgpu => link_shared(emitted, &[]),
        TargetKind::Cpu => link_shared(
            emitted,
            &["--no-undefined", "--hash-style=both", "-z", "noexecstack"],
        ),
        TargetKind::Nvptx => {
            if emitted.contains(&0) {
                return Err("the PTX text contains a NUL byte".into());
            }
            let mut out = Vec::with_capacity(emitted.len() + 1);
            out.extend_from_slice(emitted);
            out.push(0);
            Ok(out)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ptx_gets_a_trailing_nul() {
        assert_eq!(
            package(Target::Sm90, b".version 7.8").unwrap(),
            b".version 7.8\0"
        );
        assert!(package(Target::Sm80, b"a\0b").is_err());
    }

    #[test]
    fn a_broken_object_is_a_link_error() {
        let err = package(Target::Gfx942, b"not an object").unwrap_err();
        assert!(err.contains("-shared failed"), "{err}");
    }
}
