//! Which share of a multiprocessor's on-chip memory iris asks a kernel to have as shared
//! memory (the rest is L1 cache), and `IRIS_SHARED_CARVEOUT`, which changes it.
//!
//! On NVIDIA GPUs since Volta, shared memory and the L1 cache are one array, split per
//! kernel: a kernel that takes most of it (the wgmma GEMMs' 192 KiB blocks) runs its
//! multiprocessors with the largest split, and a block of a kernel that asks for another
//! split may have to wait for a multiprocessor to drain before it starts there. The one-
//! thread kernels of a split barrier, queued while GEMM blocks fill the device, are such
//! blocks, and so are the blocks of a consumer kernel waiting for its producer: a waiting
//! block holds its multiprocessor at its own split for as long as it waits (with 128
//! waiting blocks beside 40 GEMMs on an H100 the GEMMs took 27.7 times as long).
//!
//! So iris asks the largest split of every kernel that may spin (`KernelSpec::spins`: a
//! loop that polls memory or sleeps) and leaves the others to the driver. The variable
//! changes that: a percent asks one split of every kernel iris loads
//! (`CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT`), `driver` asks none of any. AMD
//! GPUs keep the LDS apart from the caches: there none of this changes anything.
//!
//! Values: a percent of the largest shared-memory size, `0` to `100`, `max` (`100`) or
//! `min` (`0`), or `driver`. A hint: the driver still gives a kernel the shared memory it
//! needs.

use crate::error::{Error, Result};

/// The variable.
pub(crate) const VAR: &str = "IRIS_SHARED_CARVEOUT";

/// Which split iris asks of the kernels it loads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Carveout {
    /// The largest of every kernel that may spin; nothing of the others (the variable
    /// unset or empty).
    LargestForSpinners,
    /// This percent of every kernel.
    Every(u32),
    /// Nothing of any kernel (`driver`): the driver chooses per kernel.
    Driver,
}

impl Carveout {
    /// Whether `IRIS_SHARED_CARVEOUT` chose this (a driver that refuses the split then
    /// fails the load, naming the variable); iris's own choice is a hint it drops.
    pub(crate) fn asked_by_the_variable(self) -> bool {
        self != Carveout::LargestForSpinners
    }

    /// The percent to ask of a kernel, `None` for none; `spins`: whether it may spin.
    pub(crate) fn percent_for(self, spins: bool) -> Option<u32> {
        match self {
            Carveout::LargestForSpinners => spins.then_some(100),
            Carveout::Every(percent) => Some(percent),
            Carveout::Driver => None,
        }
    }
}

/// What `IRIS_SHARED_CARVEOUT` asks; a value that is not a percent, `max`, `min` or
/// `driver` is [`Error::InvalidEnv`].
pub(crate) fn from_env() -> Result<Carveout> {
    match std::env::var(VAR) {
        Ok(value) if !value.trim().is_empty() => parse(&value),
        _ => Ok(Carveout::LargestForSpinners),
    }
}

/// Parses a value of `IRIS_SHARED_CARVEOUT`.
pub(crate) fn parse(value: &str) -> Result<Carveout> {
    let carveout = match value.trim() {
        "max" => Some(Carveout::Every(100)),
        "min" => Some(Carveout::Every(0)),
        "driver" => Some(Carveout::Driver),
        number => number
            .parse::<u32>()
            .ok()
            .filter(|p| *p <= 100)
            .map(Carveout::Every),
    };
    carveout.ok_or_else(|| Error::InvalidEnv {
        var: VAR,
        value: value.to_string(),
        reason: "expected a percent of the largest shared memory, 0 to 100, `max`, `min` or \
                 `driver`"
            .to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_percents_and_the_three_names() {
        assert_eq!(parse("100").unwrap(), Carveout::Every(100));
        assert_eq!(parse(" 50 ").unwrap(), Carveout::Every(50));
        assert_eq!(parse("0").unwrap(), Carveout::Every(0));
        assert_eq!(parse("max").unwrap(), Carveout::Every(100));
        assert_eq!(parse("min").unwrap(), Carveout::Every(0));
        assert_eq!(parse("driver").unwrap(), Carveout::Driver);
    }

    #[test]
    fn unset_asks_the_largest_split_of_kernels_that_spin_only() {
        let unset = Carveout::LargestForSpinners;
        assert_eq!(unset.percent_for(true), Some(100));
        assert_eq!(unset.percent_for(false), None);
        assert_eq!(Carveout::Every(30).percent_for(true), Some(30));
        assert_eq!(Carveout::Every(30).percent_for(false), Some(30));
        assert_eq!(Carveout::Driver.percent_for(true), None);
        assert!(!unset.asked_by_the_variable());
        assert!(Carveout::Every(30).asked_by_the_variable());
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
