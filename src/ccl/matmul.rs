//! GEMMs fused with their communication, as tensor-parallel layers use them:
//! [`all_gather_matmul`] (each rank's GEMM reads every rank's rows of A where they are,
//! with no gathered copy), [`matmul_reduce_scatter`] (each rank's GEMM stores each block
//! of its partial product straight into the rank that owns those rows, which adds them
//! in rank order) and [`matmul_all_reduce`] (that, then an all-gather of the rows).
//!
//! The GEMM is `staged_128` (`mma` on the matrix units: `mma.sync` on NVIDIA, MFMA on AMD,
//! exact emulation on the CPU backend; 128 x 128 tiles, k in steps of 64, three stages of
//! 105 KiB of dynamic shared memory): `bf16` or `f16` in, `f32` accumulated and out.
//! Shapes are whole tiles: rows of each GEMM a multiple of 128, `n` of 128, `k` of 64;
//! others are refused before anything runs (there are no masked edges). A device that
//! cannot give a block 105 KiB of shared memory (AMD's gfx90a and gfx942) refuses the
//! module load, naming the sizes.

use super::gemm_kernels::staged_kernels::staged_128;
use super::{all_gather, check_len, AllGatherAlgo, Ccl, LocalArray};
use crate::prelude::{bf16, f16};
use crate::{DevicePtr, Error, LaunchConfig, Pod, Result, SymmetricBuffer};

/// The kernel that adds the parts a rank received, in rank order.
#[iris::kernels]
pub(crate) mod kernels {
    use iris::prelude::*;

    /// `out[i] = parts[0][i] + parts[1][i] + ...` (`count` parts of `n` floats, one after
    /// another), four floats a thread.
    #[kernel]
    pub fn add_parts(parts: *const f32x4, out: *mut f32x4, n: u64, count: u32) {
        let stride = (grid_dim_x() * block_dim_x()) as u64;
        let mut i = (block_idx_x() * block_dim_x() + thread_idx_x()) as u64;
        while i < n / 4 {
            let mut acc = unsafe { *parts.add(i as usize) };
            for p in 1..count {
                acc = acc + unsafe { *parts.add((p as u64 * n / 4 + i) as usize) };
            }
            unsafe { *out.add(i as usize) = acc };
            i += stride;
        }
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::bf16 {}
    impl Sealed for super::f16 {}
}

/// An element type the fused GEMMs take: `bf16`, `f16`.
pub trait MatmulElement: Pod + sealed::Sealed {
    /// The GEMM's instance for this type.
    #[doc(hidden)]
    fn launch_gemm(iris: &crate::Iris, gemm: &Gemm<'_, '_, Self>) -> Result<()>
    where
        Self: Sized;
}

macro_rules! matmul_element {
    ($t:ty) => {
        impl MatmulElement for $t {
            fn launch_gemm(iris: &crate::Iris, g: &Gemm<'_, '_, Self>) -> Result<()> {
                staged_128::launch::<$t>(
                    iris, g.config, &g.a, &g.b, g.c, g.n, g.k, g.row0, g.store_to, 1, g.world,
                )
            }
        }
    };
}
matmul_element!(bf16);
matmul_element!(f16);

/// One launch of the GEMM: `rows` rows of A at `a` (`k` columns) times B (`k x n`) into
/// rows `row0..` of rank `store_to`'s `c` (`n` columns).
#[doc(hidden)]
pub struct Gemm<'a, 'ctx, T> {
    config: LaunchConfig,
    a: DevicePtr<T>,
    b: DevicePtr<T>,
    c: &'a SymmetricBuffer<'ctx, f32>,
    n: u32,
    k: u32,
    row0: u32,
    store_to: u32,
    world: u32,
}

/// A block per 128 x 128 tile of four warps (of 64 lanes on AMD, 32 elsewhere).
fn gemm_config(ccl: &Ccl<'_>, rows: usize, n: usize) -> LaunchConfig {
    let warp = if ccl.iris().backend_kind() == crate::BackendKind::Hip {
        64
    } else {
        32
    };
    LaunchConfig::linear((rows / 128 * (n / 128)) as u32, 4 * warp)
}

/// Whole tiles, and sizes the kernel's `u32` indices hold: `rows` of A per GEMM (a
/// multiple of 128), `n` (of 128), `k` (of 64).
fn check_tiles(what: &str, rows: usize, n: usize, k: usize) -> Result<()> {
    let fits = rows.checked_mul(k).is_some_and(|x| x <= u32::MAX as usize)
        && k.checked_mul(n).is_some_and(|x| x <= u32::MAX as usize)
        && rows.checked_mul(n).is_some_and(|x| x <= u32::MAX as usize);
    if rows == 0 || n == 0 || k == 0 || rows % 128 != 0 || n % 128 != 0 || k % 64 != 0 || !fits {
        return Err(Error::InvalidConfig(format!(
            "{what}: a GEMM of {rows} x {n} x {k} (rows x n x k) is not whole tiles: rows and n must be multiples of 128, k of 64 (there are no masked edges), and each matrix under 2^32 elements"
        )));
    }
    Ok(())
}

/// `a`'s copy on rank `peer`, as a pointer (the GEMM's tile copies read it directly).
fn peer_rows<T: Pod>(what: &str, a: &SymmetricBuffer<'_, T>, peer: usize) -> Result<DevicePtr<T>> {
    let addr = a.peer_addr(peer).ok_or_else(|| {
        Error::InvalidConfig(format!(
            "{what}: rank {peer}'s copy of A is not reachable from this rank (its provider gives no address)"
        ))
    })?;
    // SAFETY: the address of a peer's copy of a live symmetric allocation of this
    // context, mapped into this process for as long as `a` lives; the kernel reads only
    // `a.len()` elements from it, and the barriers around the launches keep the peer from
    // freeing or rewriting it meanwhile.
    Ok(unsafe { DevicePtr::from_raw(addr) })
}

/// All-gather then GEMM, fused: `c` (`W·m x n`, `f32`) = every rank's `a` (`m x k`, this
/// rank's rows, rank after rank) times this rank's `b` (`k x n`, row-major; each rank may
/// have its own, as a tensor-parallel layer's column shard).
///
/// Each rank's GEMM reads each peer's rows of A where they are (one launch per source
/// rank, own rows first), so no gathered copy of A is written or read; a device barrier
/// before (every rank's A is written) and after (no rank rewrites its A while a peer reads
/// it). Shapes: `m` a multiple of 128, `n` of 128, `k` of 64 (`a.len() == m·k`, `b.len()
/// == k·n`, `c.len() == W·m·n`), else refused before anything runs. Collective,
/// asynchronous: [`Ccl::synchronize`] waits.
pub fn all_gather_matmul<T: MatmulElement>(
    ccl: &Ccl<'_>,
    a: &SymmetricBuffer<'_, T>,
    b: &impl LocalArray<T>,
    c: &SymmetricBuffer<'_, f32>,
    k: usize,
) -> Result<()> {
    let what = "ccl::all_gather_matmul";
    let world = ccl.world_size();
    let (m, n) = shape_of(what, a.len(), b.len(), k)?;
    check_tiles(what, m, n, k)?;
    check_len(
        "ccl::all_gather_matmul c (world size x m x n)",
        world * m * n,
        c.len(),
    )?;
    let _span = ccl
        .iris()
        .trace_span(what, (world * m * k * std::mem::size_of::<T>()) as u64);
    ccl.barrier()?;
    let me = ccl.rank();
    for i in 0..world {
        let source = (me + i) % world;
        let gemm = Gemm {
            config: gemm_config(ccl, m, n),
            a: peer_rows(what, a, source)?,
            b: b.local_ptr(),
            c,
            n: n as u32,
            k: k as u32,
            row0: (source * m) as u32,
            store_to: me as u32,
            world: world as u32,
        };
        T::launch_gemm(ccl.iris(), &gemm)?;
    }
    ccl.barrier()
}

/// GEMM then reduce-scatter, fused: every rank's `a` (`M x k`: its share of the inner
/// dimension) times its `b` (`k x n`) is a partial `M x n` product; rank `r` gets rows
/// `r·M/W..` of their sum in `c` (`M/W x n`, `f32`), added in rank order (every rank's
/// partial is the same GEMM; the sum is the host's `Σ_s partial_s` in order).
///
/// Each rank's GEMM runs once per owner rank on the owner's rows of A and stores the tiles
/// straight into the owner's `staging` (`M x n` `f32` on every rank: one part per source
/// rank), which the owner adds after a device barrier. Shapes: `M/W` a multiple of 128,
/// `n` of 128, `k` of 64. Collective, asynchronous.
pub fn matmul_reduce_scatter<T: MatmulElement>(
    ccl: &Ccl<'_>,
    a: &impl LocalArray<T>,
    b: &impl LocalArray<T>,
    staging: &SymmetricBuffer<'_, f32>,
    c: &SymmetricBuffer<'_, f32>,
    k: usize,
) -> Result<()> {
    let what = "ccl::matmul_reduce_scatter";
    let world = ccl.world_size();
    let (rows, n) = shape_of(what, a.len(), b.len(), k)?;
    if rows % world != 0 {
        return Err(Error::InvalidConfig(format!(
            "{what}: {rows} rows of A do not split into {world} equal parts"
        )));
    }
    let part = rows / world;
    check_tiles(what, part, n, k)?;
    check_len(
        "ccl::matmul_reduce_scatter staging (M x n)",
        rows * n,
        staging.len(),
    )?;
    check_len("ccl::matmul_reduce_scatter c (M/W x n)", part * n, c.len())?;
    if staging.map().base() == c.map().base() {
        return Err(Error::InvalidConfig(format!(
            "{what}: staging and c are the same allocation; pass two"
        )));
    }
    let me = ccl.rank();
    let _span = ccl.iris().trace_span(what, (rows * n * 4) as u64);
    // Every rank has added its last parts: its staging may be written.
    ccl.barrier()?;
    for i in 0..world {
        let owner = (me + i) % world;
        let gemm = Gemm {
            config: gemm_config(ccl, part, n),
            a: a.local_ptr().add(owner * part * k),
            b: b.local_ptr(),
            c: staging,
            n: n as u32,
            k: k as u32,
            row0: (me * part) as u32,
            store_to: owner as u32,
            world: world as u32,
        };
        T::launch_gemm(ccl.iris(), &gemm)?;
    }
    // Every rank's tiles for this rank have landed.
    ccl.barrier()?;
    let quads = (part * n / 4) as u64;
    kernels::add_parts::launch(
        ccl.iris(),
        LaunchConfig::linear((quads.div_ceil(256)).clamp(1, 1 << 16) as u32, 256),
        &staging.local_ptr().cast::<crate::prelude::f32x4>(),
        &c.local_ptr().cast::<crate::prelude::f32x4>(),
        (part * n) as u64,
        world as u32,
    )
}

/// GEMM then all-reduce: [`matmul_reduce_scatter`] into `part` (`M/W x n`), then an
/// all-gather of the parts into `c` (`M x n`, `f32`) on every rank, bit-identical
/// everywhere. `staging` as for [`matmul_reduce_scatter`]. Collective, asynchronous.
pub fn matmul_all_reduce<T: MatmulElement>(
    ccl: &Ccl<'_>,
    a: &impl LocalArray<T>,
    b: &impl LocalArray<T>,
    staging: &SymmetricBuffer<'_, f32>,
    part: &SymmetricBuffer<'_, f32>,
    c: &SymmetricBuffer<'_, f32>,
    k: usize,
) -> Result<()> {
    matmul_reduce_scatter(ccl, a, b, staging, part, k)?;
    all_gather(ccl, part, c, AllGatherAlgo::Push)
}

/// `(rows, n)` of a GEMM whose A holds `a_len` and B `b_len` elements with inner size `k`.
fn shape_of(what: &str, a_len: usize, b_len: usize, k: usize) -> Result<(usize, usize)> {
    if k == 0 || a_len % k != 0 || b_len % k != 0 {
        return Err(Error::InvalidConfig(format!(
            "{what}: A ({a_len} elements) and B ({b_len}) are not whole rows of k = {k}"
        )));
    }
    Ok((a_len / k, b_len / k))
}
