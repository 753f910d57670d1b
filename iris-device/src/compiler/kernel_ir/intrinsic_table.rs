//! The intrinsic table: every device function a kernel may call (the prelude's free
//! functions), the family it belongs to, and for each family the frontend file that
//! checks its calls and the lowering file that turns its [`Intrinsic`]s into LLVM.
//!
//! The frontend looks a call's name up here ([`lookup`]) and hands it to its family's
//! check; the lowering asks an [`Intrinsic`] for its [`Family`] and hands it to the
//! family's lowering. A new intrinsic in an existing family is a row here, a variant of
//! [`Intrinsic`], one arm in the family's check and one in its lowering (and the prelude
//! function users see); the tests below fail when the table, the prelude and the
//! frontend disagree.

use super::intrinsics::Intrinsic;

/// A family of intrinsics: one frontend file checks its calls, one lowering file lowers
/// them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Family {
    /// Thread, block and grid coordinates (`thread_idx_x`, ..).
    Ids,
    /// The block: `sync_threads`, `fence`, `shared_array`, asynchronous copies into
    /// shared memory.
    Block,
    /// Clocks, sleeping and trace events: `global_timer_ns`, `clock64`, `nanosleep`,
    /// `trace_event`.
    Time,
    /// Remote memory: `load`, `store`, `get`, `put`, `copy`.
    Memory,
    /// Atomics on any rank's copy: `atomic_add`, .., `atomic_load`, `atomic_store`.
    Atomics,
    /// Signals: `signal`, `put_signal`, `signal_wait_until` and their block forms (calls
    /// of the built-in signal library), `world_aborted`, and the library's own
    /// intrinsics (`__iris_*`: header words and words at raw addresses).
    Signals,
    /// Warp operations: lane ids, shuffles, votes, reductions.
    Warp,
    /// Matrix units: fragments and `mma`.
    Matrix,
    /// Generic element conversions and math: `widen`, `narrow`, `min`, `max`.
    Element,
    /// Methods of values (not free functions): pointer and `Symmetric<T>` offsets,
    /// vector lanes, math methods (`x.sqrt()`).
    Values,
}

impl Family {
    /// Every family.
    pub const ALL: [Family; 10] = [
        Family::Ids,
        Family::Block,
        Family::Time,
        Family::Memory,
        Family::Atomics,
        Family::Signals,
        Family::Warp,
        Family::Matrix,
        Family::Element,
        Family::Values,
    ];

    /// What the family is, in a word or two (for error messages).
    pub const fn title(self) -> &'static str {
        match self {
            Family::Ids => "coordinates",
            Family::Block => "block",
            Family::Time => "time",
            Family::Memory => "remote memory",
            Family::Atomics => "atomics",
            Family::Signals => "signals",
            Family::Warp => "warp",
            Family::Matrix => "matrix units",
            Family::Element => "elements",
            Family::Values => "methods",
        }
    }

    /// The frontend file (under `compiler/frontend/`) that checks this family's calls,
    /// and the function there that does.
    pub const fn check(self) -> (&'static str, &'static str) {
        match self {
            Family::Ids => ("ids.rs", "fn id_call"),
            Family::Block => ("block.rs", "fn block_call"),
            Family::Time => ("time.rs", "fn time_call"),
            Family::Memory => ("memory.rs", "fn memory_call"),
            Family::Atomics => ("atomics.rs", "fn atomic_call"),
            Family::Signals => ("signals.rs", "fn signal_call"),
            Family::Warp => ("warp.rs", "fn warp_call"),
            Family::Matrix => ("matrix.rs", "fn matrix_call"),
            Family::Element => ("element.rs", "fn element_free_function"),
            Family::Values => ("methods.rs", "fn method_call"),
        }
    }

    /// The lowering file (under `compiler/llvm/lower/`) that lowers this family's
    /// intrinsics, and the function there that does.
    pub const fn lowering(self) -> (&'static str, &'static str) {
        match self {
            Family::Ids => ("ids.rs", "fn lower_ids"),
            Family::Block => ("shared.rs", "fn lower_block"),
            Family::Time => ("time.rs", "fn lower_time"),
            Family::Memory => ("memory.rs", "fn lower_memory"),
            Family::Atomics => ("atomics.rs", "fn lower_atomics"),
            Family::Signals => ("signals.rs", "fn lower_signals"),
            Family::Warp => ("warp.rs", "fn lower_warp"),
            Family::Matrix => ("matrix.rs", "fn lower_matrix"),
            // Conversions and math become casts and math intrinsics.
            Family::Element | Family::Values => ("intrinsics.rs", "fn lower_values"),
        }
    }
}

/// One device function of the prelude.
#[derive(Clone, Copy, Debug)]
pub struct Entry {
    /// Its name, as called in a kernel.
    pub name: &'static str,
    /// Its family.
    pub family: Family,
}

const fn e(name: &'static str, family: Family) -> Entry {
    Entry { name, family }
}

/// Every free device function a kernel may call.
pub const FREE_FUNCTIONS: &[Entry] = &[
    e("thread_idx_x", Family::Ids),
    e("thread_idx_y", Family::Ids),
    e("thread_idx_z", Family::Ids),
    e("block_idx_x", Family::Ids),
    e("block_idx_y", Family::Ids),
    e("block_idx_z", Family::Ids),
    e("block_dim_x", Family::Ids),
    e("block_dim_y", Family::Ids),
    e("block_dim_z", Family::Ids),
    e("grid_dim_x", Family::Ids),
    e("grid_dim_y", Family::Ids),
    e("grid_dim_z", Family::Ids),
    e("sync_threads", Family::Block),
    e("fence", Family::Block),
    e("shared_array", Family::Block),
    e("copy_async", Family::Block),
    e("copy_async_commit", Family::Block),
    e("copy_async_wait", Family::Block),
    e("bulk_barrier_init", Family::Block),
    e("bulk_expect", Family::Block),
    e("copy_bulk", Family::Block),
    e("bulk_wait", Family::Block),
    e("copy_tile", Family::Block),
    e("global_timer_ns", Family::Time),
    e("clock64", Family::Time),
    e("nanosleep", Family::Time),
    e("trace_event", Family::Time),
    e("load", Family::Memory),
    e("store", Family::Memory),
    e("get", Family::Memory),
    e("put", Family::Memory),
    e("copy", Family::Memory),
    e("atomic_add", Family::Atomics),
    e("atomic_sub", Family::Atomics),
    e("atomic_and", Family::Atomics),
    e("atomic_or", Family::Atomics),
    e("atomic_xor", Family::Atomics),
    e("atomic_min", Family::Atomics),
    e("atomic_max", Family::Atomics),
    e("atomic_xchg", Family::Atomics),
    e("atomic_cas", Family::Atomics),
    e("atomic_load", Family::Atomics),
    e("atomic_store", Family::Atomics),
    e("signal", Family::Signals),
    e("put_signal", Family::Signals),
    e("signal_wait_until", Family::Signals),
    e("signal_block", Family::Signals),
    e("put_signal_block", Family::Signals),
    e("signal_wait_until_block", Family::Signals),
    e("world_aborted", Family::Signals),
    e("lane_id", Family::Warp),
    e("warp_size", Family::Warp),
    e("warp_id", Family::Warp),
    e("shfl", Family::Warp),
    e("shfl_xor", Family::Warp),
    e("shfl_down", Family::Warp),
    e("shfl_up", Family::Warp),
    e("ballot", Family::Warp),
    e("any", Family::Warp),
    e("all", Family::Warp),
    e("warp_sync", Family::Warp),
    e("warp_reduce_add", Family::Warp),
    e("warp_reduce_min", Family::Warp),
    e("warp_reduce_max", Family::Warp),
    e("mma_load_a", Family::Matrix),
    e("mma_load_b", Family::Matrix),
    e("mma_zero", Family::Matrix),
    e("mma", Family::Matrix),
    e("mma_store", Family::Matrix),
    e("mma_store_peer", Family::Matrix),
    e("mma_add_peer", Family::Matrix),
    e("mma_load_a_swizzled", Family::Matrix),
    e("mma_load_b_swizzled", Family::Matrix),
    e("wg_zero", Family::Matrix),
    e("wg_mma", Family::Matrix),
    e("wg_commit", Family::Matrix),
    e("wg_wait", Family::Matrix),
    e("wg_store", Family::Matrix),
    e("wg_store_peer", Family::Matrix),
    e("widen", Family::Element),
    e("narrow", Family::Element),
    e("min", Family::Element),
    e("max", Family::Element),
];

/// The intrinsics only iris's built-in device library calls (see
/// `compiler/frontend/signal_library.rs`): not in the prelude, so a user's kernel, which
/// rustc type-checks against the prelude, cannot name them.
pub const INTERNAL_FUNCTIONS: &[Entry] = &[
    e("__iris_header", Family::Signals),
    e("__iris_word_load", Family::Signals),
    e("__iris_word_store", Family::Signals),
    e("__iris_word_cas", Family::Signals),
];

/// The free device function named `name` (an internal one's name starts with `__iris_`).
pub fn lookup(name: &str) -> Option<&'static Entry> {
    FREE_FUNCTIONS
        .iter()
        .chain(INTERNAL_FUNCTIONS)
        .find(|e| e.name == name)
}

/// The names of the free device functions by family, for error messages
/// (`coordinates: thread_idx_x/y/z, ..; block: sync_threads, ..`).
pub fn names() -> String {
    let families: Vec<String> = Family::ALL
        .iter()
        .filter_map(|f| {
            let mut names: Vec<String> = Vec::new();
            for e in FREE_FUNCTIONS.iter().filter(|e| e.family == *f) {
                // `thread_idx_x`, `_y`, `_z` as `thread_idx_x/y/z`.
                match (e.name.strip_suffix("_y"), e.name.strip_suffix("_z")) {
                    (Some(stem), _) | (_, Some(stem))
                        if names
                            .last()
                            .is_some_and(|l| l.starts_with(&format!("{stem}_x"))) =>
                    {
                        if let Some(last) = names.last_mut() {
                            last.push('/');
                            last.push_str(&e.name[stem.len() + 1..]);
                        }
                    }
                    _ => names.push(e.name.to_string()),
                }
            }
            (!names.is_empty()).then(|| format!("{}: {}", f.title(), names.join(", ")))
        })
        .collect();
    families.join("; ")
}

impl Intrinsic {
    /// The family whose lowering lowers this intrinsic (no wildcard: a new variant must
    /// be given one).
    pub fn family(&self) -> Family {
        use Intrinsic::*;
        match self {
            ThreadIdx(_) | BlockIdx(_) | BlockDim(_) | GridDim(_) => Family::Ids,
            SyncThreads
            | Fence { .. }
            | SharedArray { .. }
            | CopyAsync { .. }
            | CopyAsyncCommit
            | CopyAsyncWait { .. }
            | BulkBarrierInit { .. }
            | BulkExpect { .. }
            | CopyBulk { .. }
            | BulkWait { .. }
            | CopyTile { .. } => Family::Block,
            GlobalTimerNs | Clock64 | Nanosleep { .. } | TraceEvent { .. } => Family::Time,
            RemoteLoad { .. } | RemoteStore { .. } | Get { .. } | Put { .. } | Copy { .. } => {
                Family::Memory
            }
            AtomicRmw { .. } | AtomicCas { .. } | AtomicLoad { .. } | AtomicStore { .. } => {
                Family::Atomics
            }
            WorldAborted { .. }
            | HeaderWord { .. }
            | WordLoad { .. }
            | WordStore { .. }
            | WordCas { .. } => Family::Signals,
            LaneId
            | WarpSize
            | WarpId
            | Shuffle { .. }
            | Vote { .. }
            | WarpSync
            | WarpReduce { .. } => Family::Warp,
            MmaLoad { .. }
            | MmaLoadSwizzled { .. }
            | MmaZero
            | Mma { .. }
            | MmaStore { .. }
            | WgZero
            | WgMma { .. }
            | WgCommit
            | WgWait { .. }
            | WgStore { .. } => Family::Matrix,
            PtrOffset { .. }
            | SymOffset { .. }
            | SymLocal { .. }
            | SymPeerPtr { .. }
            | SymCast { .. }
            | VecNew { .. }
            | VecSplat { .. }
            | VecGet { .. }
            | Math { .. } => Family::Values,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use std::path::Path;

    fn compiler_dir() -> &'static Path {
        Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/src/compiler"))
    }

    #[test]
    fn the_names_are_listed_by_family() {
        let n = names();
        assert!(n.starts_with("coordinates: thread_idx_x/y/z, block_idx_x/y/z, block_dim_x/y/z, grid_dim_x/y/z; block: sync_threads"), "{n}");
        assert!(
            n.contains(
                "matrix units: mma_load_a, mma_load_b, mma_zero, mma, mma_store, mma_store_peer"
            ),
            "{n}"
        );
    }

    #[test]
    fn every_name_is_in_the_table_once() {
        let mut seen = HashSet::new();
        for e in FREE_FUNCTIONS {
            assert!(seen.insert(e.name), "`{}` is in the table twice", e.name);
        }
    }

    #[test]
    fn every_family_names_files_that_check_and_lower_it() {
        for f in Family::ALL {
            for (folder, (file, function)) in
                [("frontend", f.check()), ("llvm/lower", f.lowering())]
            {
                let path = compiler_dir().join(folder).join(file);
                let text = std::fs::read_to_string(&path)
                    .unwrap_or_else(|e| panic!("{f:?}: {}: {e}", path.display()));
                assert!(
                    text.contains(function),
                    "{f:?}: {} has no `{function}`",
                    path.display()
                );
            }
        }
    }

    /// Every `pub fn` at the start of a prelude line is in the table, and every name in
    /// the table is a word of the prelude.
    #[test]
    fn the_table_and_the_prelude_agree() {
        let prelude = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/src/prelude"));
        let mut text = String::new();
        let mut declared = HashSet::new();
        for entry in std::fs::read_dir(prelude).unwrap() {
            let file = std::fs::read_to_string(entry.unwrap().path()).unwrap();
            for line in file.lines() {
                if let Some(rest) = line.strip_prefix("pub fn ") {
                    let name: String = rest
                        .chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_')
                        .collect();
                    declared.insert(name);
                }
            }
            text.push_str(&file);
        }
        for name in &declared {
            assert!(
                lookup(name).is_some(),
                "the prelude declares `{name}`, the intrinsic table lacks it"
            );
        }
        for e in FREE_FUNCTIONS {
            let word = |t: &str| {
                t.match_indices(e.name).any(|(i, _)| {
                    let before = t[..i].chars().next_back();
                    let after = t[i + e.name.len()..].chars().next();
                    let ident =
                        |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
                    !ident(before) && !ident(after)
                })
            };
            // Functions made by the prelude's macros (`rmw! { atomic_add, .. }`) appear
            // as a word of their macro's list.
            assert!(
                declared.contains(e.name) || word(&text),
                "the intrinsic table has `{}`, the prelude does not declare it",
                e.name
            );
        }
    }
}
