//! The `IRIS_DUMP` files: `<unit>.<target>.ll` (as lowered), `.opt.ll` (after
//! optimisation) and `.s` (assembly, PTX for NVIDIA).

use super::super::super::Target;
use std::path::{Path, PathBuf};

/// Writes a unit's intermediate files for one target.
pub(super) struct Dumper {
    dir: PathBuf,
    stem: String,
}

impl Dumper {
    /// Creates `dir` if needed; files will be `<dir>/<unit>.<target>.<ext>`.
    pub fn new(dir: &Path, unit: &str, target: Target) -> Result<Self, String> {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create dump directory {}: {e}", dir.display()))?;
        let unit: String = unit
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        Ok(Dumper {
            dir: dir.to_path_buf(),
            stem: format!("{unit}.{}", target.name()),
        })
    }

    /// Writes one file.
    pub fn write(&self, ext: &str, bytes: &[u8]) -> Result<(), String> {
        let path = self.dir.join(format!("{}.{ext}", self.stem));
        std::fs::write(&path, bytes).map_err(|e| format!("cannot write {}: {e}", path.display()))
    }
}
