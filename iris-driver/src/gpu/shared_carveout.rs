//! `IRIS_SHARED_CARVEOUT`: the share of a multiprocessor's on-chip memory every kernel
//! asks to have as shared memory (the rest is L1 cache).
//!
//! On NVIDIA GPUs since Volta, shared memory and the L1 cache are one array, split per
//! kernel: a kernel that takes most of it (the wgmma GEMMs' 192 KiB blocks) runs its
//! multiprocessors with the largest split, and a block of a kernel that asks for another
//! split may have to wait for a multiprocessor to drain before it starts there. The one-
//! thread kernels of a split barrier, queued while GEMM blocks fill the device, are such
//! blocks. This setting asks one split of every kernel iris loads
//! (`CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT`), so such kernels can share a
//! multiprocessor; unset, the driver chooses per kernel. AMD GPUs keep the LDS apart from
//! the caches: there it changes nothing.
//!
//! Values: a percent of the largest shared-memory size, `0` to `100`, or `max` (`100`) or
//! `min` (`0`). A hint: the driver still gives a kernel the shared memory it needs.

use crate::error::{Error, Result};

/// The variable.
pub(crate) const VAR: &str = "IRIS_SHARED_CARVEOUT";

/// The percent `IRIS_SHARED_CARVEOUT` asks of every kernel, `None` when it is unset or
/// empty; a value that is not a percent, `max` or `min` is [`Error::InvalidEnv`].
pub(crate) fn from_env() -> Result<Option<u32>> {
    match std::env::var(VAR) {
        Ok(value) if !value.trim().is_empty() => parse(&value).map(Some),
        _ => Ok(None),
    }
}

/// Parses a value of `IRIS_SHARED_CARVEOUT`.
pub(crate) fn parse(value: &str) -> Result<u32> {
    let percent = match value.trim() {
        "max" => Some(100),
        "min" => Some(0),
        number => number.parse::<u32>().ok().filter(|p| *p <= 100),
    };
    percent.ok_or_else(|| Error::InvalidEnv {
        var: VAR,
        value: value.to_string(),
        reason: "expected a percent of the largest shared memory, 0 to 100, or `max` or `min`"
            .to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_percents_and_the_two_names() {
        assert_eq!(parse("100").unwrap(), 100);
        assert_eq!(parse(" 50 ").unwrap(), 50);
        assert_eq!(parse("0").unwrap(), 0);
        assert_eq!(parse("max").unwrap(), 100);
        assert_eq!(parse("min").unwrap(), 0);
    }

    #[test]
    fn refuses_what_is_not_a_percent_naming_the_variable() {
        for bad in ["101", "-1", "50%", "half", "1.5"] {
            let err = parse(bad).unwrap_err().to_string();
            assert!(err.contains("IRIS_SHARED_CARVEOUT"), "{bad}: {err}");
            assert!(err.contains("0 to 100"), "{bad}: {err}");
        }
    }
}
