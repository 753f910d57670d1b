//! GEMMs fused with their communication, as tensor-parallel layers use them:
//! [`all_gather_matmul`] (each rank's GEMM reads the other ranks' rows of A from their
//! memory, with no gathered copy), [`matmul_reduce_scatter`] (each rank's GEMM stores
//! each tile of its partial product straight into the rank that owns those rows, which
//! adds the ranks' parts in rank order) and [`matmul_all_reduce`] (the same, each sum
//! written to every rank). Each runs its GEMM in two launches: the rows of this rank (its
//! own A, or its own rows of the product) need nothing from a peer and go first, between
//! the two halves of a split device barrier (this rank arrives before them and waits for
//! the others after them, so they fill the time in which the last rank arrives), then
//! the rest, then a barrier (then the sum; the all-gather GEMM ends without one where the
//! peers read a snapshot of A). Where the own rows of the ranks on a device are less
//! than a wave of tiles, a plain barrier comes first and the GEMM is one launch; the
//! reductions then, where every rank shares one device, run the GEMM and the library's
//! collective one after the other instead ([`MatmulReduceAlgo`]), which measured faster
//! there.
//!
//! On one device shared by the ranks the communication these save is local memory
//! traffic, a small part of the time: docs/performance.md has the measurements, and why
//! adding the tiles inside the GEMM (whichever rank's tile lands last) measured slower
//! than adding them after it. There, with A and B symmetric and B transposed, the
//! reductions need no partial products at all: each owner computes its rows of the sum
//! as one GEMM over every rank's A and Bᵀ, read where they are
//! ([`MatmulReduceAlgo::Pull`]).
//!
//! The GEMM follows B's layout ([`MatrixB`]): B as `k x n` runs `staged_128` (`mma` on
//! the matrix units: `mma.sync` on NVIDIA, MFMA on AMD, exact emulation on the CPU
//! backend; 128 x 128 tiles, 105 KiB of dynamic shared memory); B transposed (`n x k`,
//! a `torch.nn.Linear` weight) runs `warpgroup_256` (Hopper's `wgmma`, 128 x 256 tiles,
//! 192 KiB; other targets compute the same products without the matrix units, slower).
//! `bf16` or `f16` in, `f32` accumulated and out. Shapes are whole tiles: rows of each
//! GEMM (each rank's or each owner's) a multiple of 128, `n` of 128 (256 with Bᵀ), `k`
//! of 64; others are refused before anything runs (there are no masked edges). A device
//! that cannot give a block the kernel's shared memory (AMD's gfx90a and gfx942 give 64
//! KiB) refuses the module load, naming the sizes.

use std::marker::PhantomData;

/// The kernel that adds the parts a rank received, in rank order.
#[iris::kernels(uses(crate::ccl::barrier))]
pub(crate) mod kernels {
    use iris::prelude::*;

    /// `c[i] = staging[0][i] + staging[1][i] + ...` (`world` slots of `part` vectors, this
    /// rank's copy), into this rank's `c` at vector `at`, or every rank's when
    /// `everywhere` is non-zero; nothing where the communicator (`signals`) is broken (the
    /// barrier before it gave up).
    #[kernel]
    pub fn sum_parts(
        staging: *const f32x4,
        c: Symmetric<f32>,
        signals: Symmetric<u64>,
        part: u32,
        at: u32,
        me: u32,
        world: u32,
        everywhere: u32,
    ) {
        if ccl_broken(signals, me) {
            return;
        }
        let c = c.cast::<f32x4>();
        let stride = grid_dim_x() * block_dim_x();
        let mut i = block_idx_x() * block_dim_x() + thread_idx_x();
        while i < part {
            let mut acc = unsafe { *staging.add(i as usize) };
            for s in 1..world {
                acc = acc + unsafe { *staging.add((s * part + i) as usize) };
            }
            if everywhere != 0 {
                for p in 0..world {
                    let peer = (me + p) % world;
                    unsafe { *c.peer_ptr(peer).add((at + i) as usize) = acc };
                }
            } else {
                unsafe { *c.local().add((at + i) as usize) = acc };
            }
            i += stride;
        }
    }

    /// `dst[i] = src[i]` for `i < count` (16-byte vectors): a rank's A into its snapshot.
    #[kernel]
    pub fn copy_vectors(dst: *mut u32x4, src: *const u32x4, count: u32) {
        let stride = grid_dim_x() * block_dim_x();
        let mut i = block_idx_x() * block_dim_x() + thread_idx_x();
        while i < count {
            unsafe { *dst.add(i as usize) = *src.add(i as usize) };
            i += stride;
        }
    }
}

use super::gemm_kernels::{ahead, staged_kernels, transpose_kernels, warpgroup_kernels};
use super::matmul_workspace::{SnapshotSlot, WithHalf};
use super::{check_len, AllReduceAlgo, Ccl, LocalArray};
use crate::prelude::{bf16, f16};
use crate::{DevicePtr, Error, Iris, LaunchConfig, Pod, Result, SymmetricBuffer};

/// B of a fused GEMM and its layout. A `&Buffer` or `&SymmetricBuffer` converts into
/// [`MatrixB::k_by_n`].
pub struct MatrixB<'a, T: Pod> {
    ptr: DevicePtr<T>,
    len: usize,
    transposed: bool,
    /// B's allocation where it is a symmetric one ([`MatmulReduceAlgo::Pull`] reads it
    /// in the peers' memory).
    symmetric: Option<&'a SymmetricBuffer<'a, T>>,
    _borrow: PhantomData<&'a ()>,
}

impl<'a, T: Pod> MatrixB<'a, T> {
    /// B as `k x n`, row-major (`n` a multiple of 128): the GEMM is `staged_128` (MFMA on
    /// AMD, `mma.sync` on NVIDIA; the CPU runs it too), except on Hopper where `n` is a
    /// multiple of 256: there the call transposes B into the communicator's workspace
    /// first (one pass over B) and runs `warpgroup_256`, about twice as fast.
    pub fn k_by_n(b: &'a impl LocalArray<T>) -> Self {
        Self {
            ptr: b.local_ptr(),
            len: b.len(),
            transposed: false,
            symmetric: b.as_symmetric(),
            _borrow: PhantomData,
        }
    }

    /// B given transposed, `Bᵀ` as `n x k` row-major (a `torch.nn.Linear` weight; `n` a
    /// multiple of 256): the GEMM is `warpgroup_256`, Hopper's `wgmma` (on the H200
    /// about twice `staged_128`'s speed) on Hopper and on the CPU backend; on other GPUs
    /// the call transposes it into the communicator's workspace first and runs
    /// `staged_128` on their matrix units (except [`MatmulReduceAlgo::Pull`], which
    /// reads the peers' Bᵀ where it is).
    pub fn transposed(bt: &'a impl LocalArray<T>) -> Self {
        Self {
            ptr: bt.local_ptr(),
            len: bt.len(),
            transposed: true,
            symmetric: bt.as_symmetric(),
            _borrow: PhantomData,
        }
    }

    /// The width of the GEMM's tiles of C (`n` must be a multiple).
    fn tile_width(&self) -> usize {
        if self.transposed {
            256
        } else {
            128
        }
    }
}

impl<'a, T: Pod, L: LocalArray<T>> From<&'a L> for MatrixB<'a, T> {
    fn from(b: &'a L) -> Self {
        MatrixB::k_by_n(b)
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::bf16 {}
    impl Sealed for super::f16 {}
}

/// An element type the fused GEMMs take: `bf16`, `f16`.
pub trait MatmulElement: Pod + sealed::Sealed {
    /// Launches the fused GEMM's instance for this type.
    #[doc(hidden)]
    fn launch_fused(iris: &Iris, launch: &FusedLaunch<'_, '_, Self>) -> Result<()>
    where
        Self: Sized;

    /// Launches the transpose of `src` (`rows x cols`) into `dst` (`cols x rows`) for
    /// this type (`transpose_32`).
    #[doc(hidden)]
    fn launch_transpose(
        iris: &Iris,
        src: DevicePtr<Self>,
        dst: DevicePtr<Self>,
        rows: u32,
        cols: u32,
    ) -> Result<()>
    where
        Self: Sized;

    /// Calls `f` with this call's half of the communicator's snapshot workspace for this
    /// type (see [`AllGatherMatmulAlgo::Snapshot`]).
    #[doc(hidden)]
    fn with_snapshot(
        slot: &dyn SnapshotSlot,
        len: usize,
        before_freeing: &dyn Fn() -> Result<()>,
        f: &mut WithHalf<'_, Self>,
    ) -> Result<()>
    where
        Self: Sized;
}

macro_rules! matmul_element {
    ($t:ty, $with:ident) => {
        impl MatmulElement for $t {
            fn launch_transpose(
                iris: &Iris,
                src: DevicePtr<Self>,
                dst: DevicePtr<Self>,
                rows: u32,
                cols: u32,
            ) -> Result<()> {
                let blocks = (rows / 32) * (cols / 32);
                transpose_kernels::transpose_32::launch::<$t>(
                    iris,
                    LaunchConfig::linear(blocks, 256),
                    &src,
                    &dst,
                    rows,
                    cols,
                )
            }

            fn with_snapshot(
                slot: &dyn SnapshotSlot,
                len: usize,
                before_freeing: &dyn Fn() -> Result<()>,
                f: &mut WithHalf<'_, Self>,
            ) -> Result<()> {
                slot.$with(len, before_freeing, f)
            }

            fn launch_fused(iris: &Iris, l: &FusedLaunch<'_, '_, Self>) -> Result<()> {
                let (config, b) = (l.config, &l.b);
                // Each fused form in the `staged_128` kernel (B) or the wide one (Bᵀ).
                match &l.op {
                    &Fused::Gather {
                        a,
                        c,
                        m,
                        n,
                        k,
                        me,
                        world,
                        first,
                        split:
                            InGrid {
                                signals,
                                done,
                                timeout_ns,
                            },
                    } => {
                        if l.wide {
                            warpgroup_kernels::gather_wide::launch::<$t>(
                                iris, config, a, b, c, m, n, k, me, world, first, signals, done,
                                timeout_ns,
                            )
                        } else {
                            staged_kernels::gather_staged::launch::<$t>(
                                iris, config, a, b, c, m, n, k, me, world, first, signals, done,
                                timeout_ns,
                            )
                        }
                    }
                    &Fused::GatherAhead {
                        a,
                        gathered,
                        c,
                        work,
                        m,
                        n,
                        k,
                        me,
                        world,
                        epoch,
                    } => {
                        let g = &gathered;
                        if l.wide {
                            warpgroup_kernels::gather_ahead_wide::launch::<$t>(
                                iris, config, a, g, b, c, work, m, n, k, me, world, epoch,
                            )
                        } else {
                            staged_kernels::gather_ahead_staged::launch::<$t>(
                                iris, config, a, g, b, c, work, m, n, k, me, world, epoch,
                            )
                        }
                    }
                    &Fused::Plain {
                        a,
                        c,
                        n,
                        k,
                        me,
                        world,
                    } => {
                        if l.wide {
                            warpgroup_kernels::warpgroup_256::launch::<$t>(
                                iris, config, &a, b, c, n, k, 0, me, 1, world,
                            )
                        } else {
                            staged_kernels::staged_128::launch::<$t>(
                                iris, config, &a, b, c, n, k, 0, me, 1, world,
                            )
                        }
                    }
                    &Fused::Pulled {
                        a,
                        bt,
                        c,
                        signals,
                        part,
                        n,
                        k,
                        me,
                        world,
                        everywhere,
                    } => warpgroup_kernels::pulled_wide::launch::<$t>(
                        iris, config, a, bt, c, signals, part, n, k, me, world, everywhere,
                    ),
                    &Fused::Scatter {
                        a,
                        staging,
                        part,
                        n,
                        k,
                        me,
                        world,
                        first,
                        split:
                            InGrid {
                                signals,
                                done,
                                timeout_ns,
                            },
                    } => {
                        if l.wide {
                            warpgroup_kernels::scatter_wide::launch::<$t>(
                                iris, config, &a, b, staging, signals, part, n, k, me, world,
                                first, done, timeout_ns,
                            )
                        } else {
                            staged_kernels::scatter_staged::launch::<$t>(
                                iris, config, &a, b, staging, signals, part, n, k, me, world,
                                first, done, timeout_ns,
                            )
                        }
                    }
                }
            }
        }
    };
}
matmul_element!(bf16, with_bf16);
matmul_element!(f16, with_f16);

/// One launch of a fused GEMM: B (`k x n`, or `n x k` for the `wide` kernel) and what
/// the kernel does with A and C.
#[doc(hidden)]
pub struct FusedLaunch<'a, 'ctx, T: Pod> {
    config: LaunchConfig,
    wide: bool,
    b: DevicePtr<T>,
    op: Fused<'a, 'ctx, T>,
}

/// The GEMM kernels' forms (their arguments; see `gemm_kernels`): plain, and fused.
#[doc(hidden)]
pub enum Fused<'a, 'ctx, T: Pod> {
    /// `warpgroup_256` / `staged_128`: this rank's `a` into its own copy of `c`, from row 0.
    Plain {
        a: DevicePtr<T>,
        c: &'a SymmetricBuffer<'ctx, f32>,
        n: u32,
        k: u32,
        me: u32,
        world: u32,
    },
    /// `gather_*`: ranks' `m` rows of `a` into this rank's `c`, steps `first..` (step `i`
    /// rank `me + i`'s rows), with the split barrier inside it or not (`split`).
    Gather {
        a: &'a SymmetricBuffer<'ctx, T>,
        c: &'a SymmetricBuffer<'ctx, f32>,
        m: u32,
        n: u32,
        k: u32,
        me: u32,
        world: u32,
        first: u32,
        split: InGrid<'a, 'ctx>,
    },
    /// `gather_ahead_*`: as `Gather`, every rank's rows copied ahead into `gathered`
    /// (`W·m x k`, this rank's), with the task counter and flags in `work`.
    GatherAhead {
        a: &'a SymmetricBuffer<'ctx, T>,
        gathered: DevicePtr<T>,
        c: &'a SymmetricBuffer<'ctx, f32>,
        work: &'a SymmetricBuffer<'ctx, u64>,
        m: u32,
        n: u32,
        k: u32,
        me: u32,
        world: u32,
        epoch: u64,
    },
    /// `scatter_*`: this rank's partial product, each tile into slot `me` of its
    /// owner's `staging`, steps `first..` (step `i` owner `me + i`'s rows), unless the
    /// communicator (`split.signals`) is broken; with the split barrier inside it or not.
    Scatter {
        a: DevicePtr<T>,
        staging: &'a SymmetricBuffer<'ctx, f32>,
        part: u32,
        n: u32,
        k: u32,
        me: u32,
        world: u32,
        first: u32,
        split: InGrid<'a, 'ctx>,
    },
    /// `pulled_wide` (Bᵀ only): owner `me`'s rows of every rank's product, their A and
    /// Bᵀ read where they are, into this rank's `c` or (`everywhere`) every rank's.
    Pulled {
        a: &'a SymmetricBuffer<'ctx, T>,
        bt: &'a SymmetricBuffer<'ctx, T>,
        c: &'a SymmetricBuffer<'ctx, f32>,
        signals: &'a SymmetricBuffer<'ctx, u64>,
        part: u32,
        n: u32,
        k: u32,
        me: u32,
        world: u32,
        everywhere: u32,
    },
}

/// The split barrier inside a fused GEMM's launch (`ccl_grid_arrive`, `ccl_grid_wait`): the
/// communicator's `signals`, the word its blocks are counted in (`done`; 0: this launch
/// neither arrives nor waits) and the wait's bound.
#[doc(hidden)]
#[derive(Clone, Copy)]
pub struct InGrid<'a, 'ctx> {
    signals: &'a SymmetricBuffer<'ctx, u64>,
    done: u32,
    timeout_ns: u64,
}

impl<'a, 'ctx> InGrid<'a, 'ctx> {
    /// The launch that arrives first and waits last (`inside`), or neither, of `ccl`.
    fn of(ccl: &'a Ccl<'ctx>, inside: bool) -> Self {
        Self {
            signals: ccl.signals(),
            done: if inside { ccl.grid_done_word() } else { 0 },
            timeout_ns: ccl.wait_limit_ns(),
        }
    }
}

/// A block per tile of C (`128 x 128` with four warps, of 64 lanes on AMD and 32
/// elsewhere; `128 x 256` with 256 threads for the wide kernel) over `rows` rows.
fn gemm_config(ccl: &Ccl<'_>, wide: bool, rows: usize, n: usize) -> LaunchConfig {
    let width = if wide { 256 } else { 128 };
    LaunchConfig::linear((rows / 128 * (n / width)) as u32, gemm_threads(ccl, wide))
}

/// Launches `op`, a GEMM over `rows` rows of A with B `b` (`n` columns of C), a block per
/// tile.
fn launch_gemm<T: MatmulElement>(
    ccl: &Ccl<'_>,
    b: &MatrixB<'_, T>,
    rows: usize,
    n: usize,
    op: Fused<'_, '_, T>,
) -> Result<()> {
    let launch = FusedLaunch {
        config: gemm_config(ccl, b.transposed, rows, n),
        wide: b.transposed,
        b: b.ptr,
        op,
    };
    T::launch_fused(ccl.iris(), &launch)
}

/// Threads a block of the GEMM kernels: 256 for the wide kernel, else four warps (of 64
/// lanes on AMD, 32 elsewhere).
fn gemm_threads(ccl: &Ccl<'_>, wide: bool) -> u32 {
    let warp = if ccl.iris().backend_kind() == crate::BackendKind::Hip {
        64
    } else {
        32
    };
    if wide {
        256
    } else {
        4 * warp
    }
}

/// Whether the fused GEMM kernel for B on this device takes it transposed: Hopper's
/// (`sm_90`) `warpgroup_256` takes Bᵀ, and a B given as `k x n` goes to it too where `n`
/// is whole tiles of it (a multiple of 256); every other GPU's best kernel is
/// `staged_128` (MFMA on AMD, `mma.sync` on NVIDIA before Hopper), which takes `k x n`;
/// the CPU backend, which has no matrix units, runs the kernel of the layout given.
fn kernel_takes_bt(backend: crate::BackendKind, target: &str, given_bt: bool, n: usize) -> bool {
    match backend {
        crate::BackendKind::Cpu => given_bt,
        _ if target == "sm_90" => given_bt || n % 256 == 0,
        _ => false,
    }
}

/// [`kernel_takes_bt`] on `iris`'s device: whether the fused GEMMs run `warpgroup_256`
/// (Bᵀ) for a B given transposed or not (`given_bt`) with `n` columns, so that a bench's
/// unfused sequence can run the same kernel.
#[doc(hidden)]
pub fn fused_kernel_takes_bt(iris: &Iris, given_bt: bool, n: usize) -> bool {
    let info = iris.device_info();
    kernel_takes_bt(info.backend, &info.target, given_bt, n)
}

/// `b` (`k x n`, or given transposed) in the layout of this device's kernel
/// ([`kernel_takes_bt`]): itself, or transposed into the communicator's workspace (one
/// launch of `transpose_32` on this rank's stream, read by the call's launches after it).
/// Called once the call's shapes are checked.
fn in_kernel_layout<'b, T: MatmulElement>(
    ccl: &Ccl<'_>,
    b: MatrixB<'b, T>,
    k: usize,
    n: usize,
) -> Result<MatrixB<'b, T>> {
    let bt = fused_kernel_takes_bt(ccl.iris(), b.transposed, n);
    if bt == b.transposed {
        return Ok(b);
    }
    let ptr = ccl
        .b_layout()
        .bytes(k * n * std::mem::size_of::<T>())?
        .cast::<T>();
    let (rows, cols) = if b.transposed { (n, k) } else { (k, n) };
    T::launch_transpose(ccl.iris(), b.ptr, ptr, rows as u32, cols as u32)?;
    Ok(MatrixB {
        ptr,
        len: b.len,
        transposed: bt,
        symmetric: None,
        _borrow: PhantomData,
    })
}

/// Whole tiles, and sizes the kernel's `u32` indices hold: `rows` of A per GEMM (a
/// multiple of 128), `n` (of `width`), `k` (of 64), `total` rows of C.
fn check_tiles(
    what: &str,
    rows: usize,
    total: usize,
    n: usize,
    k: usize,
    width: usize,
) -> Result<()> {
    let fits = total.checked_mul(k).is_some_and(|x| x <= u32::MAX as usize)
        && k.checked_mul(n).is_some_and(|x| x <= u32::MAX as usize)
        && total.checked_mul(n).is_some_and(|x| x <= u32::MAX as usize);
    if rows == 0 || n == 0 || k == 0 || rows % 128 != 0 || n % width != 0 || k % 64 != 0 || !fits {
        let b = if width == 256 { "Bᵀ" } else { "B" };
        return Err(Error::InvalidConfig(format!(
            "{what}: a GEMM of {rows} x {n} x {k} (rows x n x k) is not whole tiles: rows must be a multiple of 128, n of {width} (with {b}), k of 64 (there are no masked edges), and each matrix under 2^32 elements"
        )));
    }
    Ok(())
}

/// Whether a fused GEMM launches this rank's own rows (`tiles` tiles: its own A, or the
/// rows it owns of the product) before its leading barrier, arriving first and waiting
/// after, and the rest after it: when the own rows of the ranks on the device fill it at
/// least once, so that they keep it busy while the last rank arrives (a first launch of
/// less than a wave would leave the device draining, about a tile's time, for less than
/// it gains). Always on the CPU backend, which has no waves.
fn own_rows_first(ccl: &Ccl<'_>, tiles: u32) -> bool {
    let info = ccl.iris().device_info();
    info.backend == crate::BackendKind::Cpu
        || u64::from(tiles) * ccl.ranks_on_device() as u64 >= u64::from(info.multiprocessors)
}

/// Launches a fused GEMM's steps (`launch(first, steps, inside)`: step 0 this rank's own
/// rows, step `i` rank or owner `me + i`'s) after the sync that lets them touch the
/// peers' memory: where [`own_rows_first`] says so, step 0 alone with the split barrier
/// inside its launch (`inside`: its block 0 arrives as it starts, its last block waits
/// for the other ranks; the barrier library's `ccl_grid_arrive` and `ccl_grid_wait`),
/// then the rest; else a barrier, then every step in one launch. A rank with a sync stream
/// ([`World::sync_stream`](crate::World::sync_stream)) queues the split barrier's arrive
/// and wait kernels there instead, beside step 0.
fn own_rows_then_peers(
    ccl: &Ccl<'_>,
    tiles: u32,
    mut launch: impl FnMut(u32, u32, bool) -> Result<()>,
) -> Result<()> {
    let world = ccl.world_size() as u32;
    if world > 1 && own_rows_first(ccl, tiles) {
        let synced = ccl.iris().fork_sync_stream(|| {
            ccl.barrier_arrive()?;
            ccl.barrier_wait()
        })?;
        match synced {
            Some(fork) => {
                // Step 0 waits for no other rank (its blocks only check the broken word).
                let own = launch(0, 1, false);
                fork.join()?;
                own?;
            }
            None => launch(0, 1, true)?,
        }
        launch(1, world - 1, false)
    } else {
        ccl.barrier()?;
        launch(0, world, false)
    }
}

/// Whether a reducing GEMM call takes [`MatmulReduceAlgo::AfterGemm`]: asked for, or
/// `Auto` where every rank of the world shares this device and [`own_rows_first`] says
/// the own rows (`tiles` a rank) are under a wave.
fn after_gemm(ccl: &Ccl<'_>, tiles: u32, algo: MatmulReduceAlgo) -> bool {
    match algo {
        MatmulReduceAlgo::IntoOwners | MatmulReduceAlgo::Pull => false,
        MatmulReduceAlgo::AfterGemm => true,
        MatmulReduceAlgo::Auto => {
            let world = ccl.world_size();
            world > 1 && ccl.ranks_on_device() == world && !own_rows_first(ccl, tiles)
        }
    }
}

/// Whether the pulled GEMM is expected to end no later than the plain GEMMs and their
/// collective, counted in waves of blocks (`tiles` a rank: the owner's tiles). The pulled
/// kernel runs `W · tiles` blocks, each `W` times as long as a plain GEMM block (its k
/// loop covers every rank's k): `ceil(W · tiles / SMs) · W` plain-block times. The plain
/// GEMMs run `W² · tiles` blocks, `ceil(W² · tiles / SMs)` times, and the collective
/// after them at least one more. With few tiles the pulled kernel's long blocks leave
/// the device idle at its end. On an H100 (132 multiprocessors, 4 ranks) at `n` = 1024:
/// 64 and 160 tiles in all lost (1.64x and 1.35x of the GEMM then the collective, each
/// call after a host barrier), 128 matched it (0.94-1.01x per call, 0.83-0.86x queued
/// back to back) and 256 won (0.88-0.90x, 0.81x), as did 4096 x 4096 (512 tiles).
/// Always on the CPU backend, which has no waves.
fn pull_fills(ccl: &Ccl<'_>, tiles: u32) -> bool {
    let info = ccl.iris().device_info();
    if info.backend == crate::BackendKind::Cpu {
        return true;
    }
    pulled_waves_fit(tiles, ccl.ranks_on_device() as u32, info.multiprocessors)
}

/// [`pull_fills`]'s count: `tiles` a rank, `ranks` ranks, `sms` multiprocessors.
fn pulled_waves_fit(tiles: u32, ranks: u32, sms: u32) -> bool {
    let (ranks, sms) = (u64::from(ranks), u64::from(sms.max(1)));
    let blocks = u64::from(tiles) * ranks;
    blocks.div_ceil(sms) * ranks <= (blocks * ranks).div_ceil(sms) + 1
}

/// A's and Bᵀ's symmetric allocations where a reducing GEMM call takes
/// [`MatmulReduceAlgo::Pull`]: asked for (refused without them), or `Auto` where every
/// rank of the world shares this device, A and B are symmetric, B transposed, and the
/// pulled blocks (`tiles` a rank: the owner's tiles with Bᵀ) are expected to end no
/// later than the plain GEMMs and their collective ([`pull_fills`]); `None` otherwise.
fn pulled<'a, T: Pod>(
    what: &str,
    ccl: &Ccl<'_>,
    a: &'a impl LocalArray<T>,
    b: &MatrixB<'a, T>,
    tiles: u32,
    algo: MatmulReduceAlgo,
) -> Result<Option<(&'a SymmetricBuffer<'a, T>, &'a SymmetricBuffer<'a, T>)>> {
    let both = match (a.as_symmetric(), b.symmetric) {
        (Some(a), Some(bt)) if b.transposed => Some((a, bt)),
        _ => None,
    };
    match algo {
        MatmulReduceAlgo::Auto
            if ccl.ranks_on_device() == ccl.world_size() && pull_fills(ccl, tiles) =>
        {
            Ok(both)
        }
        MatmulReduceAlgo::Pull if both.is_some() => Ok(both),
        MatmulReduceAlgo::Pull => Err(Error::InvalidConfig(format!(
            "{what}: MatmulReduceAlgo::Pull reads A and B in the peers' memory: pass both as SymmetricBuffers, B transposed (MatrixB::transposed)"
        ))),
        _ => Ok(None),
    }
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

/// How [`all_gather_matmul_with`] brings the other ranks' rows of A to the GEMM.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AllGatherMatmulAlgo {
    /// [`Snapshot`](Self::Snapshot) when every rank of the world is on this rank's
    /// device (measured faster than [`InPlace`](Self::InPlace) there: 0.90-0.91x of the
    /// unfused all-gather and GEMM against 0.92-0.93x, and at a narrow `n` 0.74-0.75x
    /// against 0.88-0.89x; docs/performance.md), else [`CopyAhead`](Self::CopyAhead).
    #[default]
    Auto,
    /// Each block reads its rows of A from the rank that has them, as its GEMM streams
    /// them: no gathered copy is written or read, and a barrier ends the call (no rank
    /// rewrites its A while a peer reads it). For ranks that share a device, where a
    /// peer's rows are local memory; across devices each row would cross the link once
    /// per column block of C.
    InPlace,
    /// The peers' rows of A are copied into a local gathered A one step ahead of the
    /// tiles that use them: after this rank's own rows (computed before the barrier, as
    /// in place), rank `me + 1`'s are copied, then rank `me + 1`'s tiles computed while
    /// `me + 2`'s are copied, and so on, each row crossing the link once, 128 rows a task
    /// (a tile waits only for its own rows; the tasks are taken in order from a counter,
    /// so no block waits for one that is not running). For ranks on
    /// separate devices. The communicator keeps the gathered A (`W·m·k` elements) and
    /// `W·m/128 + 1` words for later calls.
    CopyAhead,
    /// Each rank first copies its A into the communicator's workspace (a snapshot: one
    /// of two symmetric copies, taken by turns), and the peers read it there in place;
    /// so no barrier ends the call: a rank may rewrite or free its A once the call is
    /// done on its own stream, and leaves the call without waiting for the last rank's
    /// GEMM. The copy is one pass over A; the communicator keeps `2·m·k` elements for
    /// later calls, and dropping it after such a call, with no barrier since, is
    /// collective (a barrier, so that no peer still reads the snapshot it frees). For
    /// ranks that share a device.
    Snapshot,
}

/// All-gather then GEMM, fused: `c` (`W·m x n`, `f32`) = every rank's `a` (`m x k`, this
/// rank's rows, rank after rank) times this rank's `b` (`k x n`, or [`MatrixB::transposed`];
/// each rank may have its own, as a tensor-parallel layer's column shard).
///
/// The GEMM over this rank's own rows first, then a wait until every rank's A is written
/// (this rank arrived before its own rows, so their GEMM fills the time in which the last
/// rank arrives), then the GEMM over the other ranks' rows. Where the own rows of the
/// ranks on a device are less than a wave of tiles, a barrier comes first and the rows
/// follow without a break. How the peers' rows of A reach the GEMM is
/// [`AllGatherMatmulAlgo::Auto`]'s choice ([`all_gather_matmul_with`] chooses): where
/// the ranks share a device, each rank first copies its A into the communicator's
/// workspace and the peers read that copy, so that no barrier ends the call (a rank may
/// rewrite its A once the call is done on its own stream; dropping the communicator
/// after such a call is a barrier); across devices the rows are copied ahead of the
/// tiles that use them, and a barrier ends the call (no rank rewrites its A while a peer
/// reads it).
/// Shapes: `m` a multiple of 128, `n` of 128 (256 with Bᵀ), `k` of 64 (`a.len() == m·k`,
/// `b` `k·n` elements, `c.len() == W·m·n`), else refused before anything runs.
/// Collective, asynchronous: [`Ccl::synchronize`] waits.
pub fn all_gather_matmul<'b, T: MatmulElement>(
    ccl: &Ccl<'_>,
    a: &SymmetricBuffer<'_, T>,
    b: impl Into<MatrixB<'b, T>>,
    c: &SymmetricBuffer<'_, f32>,
    k: usize,
) -> Result<()> {
    all_gather_matmul_with(ccl, a, b, c, k, AllGatherMatmulAlgo::Auto)
}

/// [`all_gather_matmul`] with the way the rows of A reach the GEMM chosen
/// ([`AllGatherMatmulAlgo`]). Every rank passes the same `algo`.
pub fn all_gather_matmul_with<'b, T: MatmulElement>(
    ccl: &Ccl<'_>,
    a: &SymmetricBuffer<'_, T>,
    b: impl Into<MatrixB<'b, T>>,
    c: &SymmetricBuffer<'_, f32>,
    k: usize,
    algo: AllGatherMatmulAlgo,
) -> Result<()> {
    let what = "ccl::all_gather_matmul";
    let b = b.into();
    let world = ccl.world_size();
    let (m, n) = shape_of(what, a.len(), b.len, k)?;
    check_tiles(what, m, world * m, n, k, b.tile_width())?;
    check_len(
        "ccl::all_gather_matmul c (world size x m x n)",
        world * m * n,
        c.len(),
    )?;
    if let Some(peer) = (0..world).find(|&p| a.peer_addr(p).is_none()) {
        return Err(Error::InvalidConfig(format!(
            "{what}: rank {peer}'s copy of A is not reachable from this rank (its provider gives no address)"
        )));
    }
    let algo = match algo {
        AllGatherMatmulAlgo::Auto if ccl.ranks_on_device() < world => {
            AllGatherMatmulAlgo::CopyAhead
        }
        AllGatherMatmulAlgo::Auto => AllGatherMatmulAlgo::Snapshot,
        chosen => chosen,
    };
    let ahead = algo == AllGatherMatmulAlgo::CopyAhead;
    let _span = ccl
        .iris()
        .trace_span(what, (world * m * k * std::mem::size_of::<T>()) as u64);
    let b = in_kernel_layout(ccl, b, k, n)?;
    let me = ccl.rank() as u32;
    let (m, n, k, world) = (m as u32, n as u32, k as u32, world as u32);
    // Steps `first..first + steps` read in place from `a` (the ranks' A or their
    // snapshots): `steps` ranks' rows, rank `me + first`'s first.
    let read_in_place = |a: &SymmetricBuffer<'_, T>, first: u32, steps: u32, inside: bool| {
        let op = Fused::Gather {
            a,
            c,
            m,
            n,
            k,
            me,
            world,
            first,
            split: InGrid::of(ccl, inside),
        };
        launch_gemm(ccl, &b, (steps * m) as usize, n as usize, op)
    };
    let in_place = |first: u32, steps: u32, inside: bool| read_in_place(a, first, steps, inside);
    let tiles = (m / 128) * (n / b.tile_width() as u32);
    if algo == AllGatherMatmulAlgo::Snapshot {
        let len = (m * k) as usize;
        T::with_snapshot(ccl.snapshot(), len, &|| ccl.barrier(), &mut |half| {
            if let Some(peer) = (0..world as usize).find(|&p| half.peer_addr(p).is_none()) {
                return Err(Error::InvalidConfig(format!(
                    "{what}: rank {peer}'s snapshot of A is not reachable from this rank"
                )));
            }
            // No barrier ends the call: the peers may read this rank's snapshot until a
            // barrier comes (said before anything is launched, so that a call that
            // fails half-way still has the communicator's drop wait for them).
            ccl.snapshot().set_pending(true);
            // This call's snapshot, written before this rank arrives (stream order).
            let vectors = (len * std::mem::size_of::<T>() / 16) as u32;
            kernels::copy_vectors::launch(
                ccl.iris(),
                LaunchConfig::linear(vectors.div_ceil(256).clamp(1, 1 << 16), 256),
                &half.local_ptr().cast::<crate::prelude::u32x4>(),
                &a.local_ptr().cast::<crate::prelude::u32x4>(),
                vectors,
            )?;
            // This rank's own rows (step 0 alone) from its A; the peers' from their
            // snapshots.
            own_rows_then_peers(ccl, tiles, |first, steps, inside| {
                let rows = if steps == 1 && first == 0 { a } else { half };
                read_in_place(rows, first, steps, inside)
            })
        })?;
        // Again: a barrier before the GEMM (the one-launch form) said none was pending.
        ccl.snapshot().set_pending(true);
        return Ok(());
    }
    // The peers' rows read in place, or copied ahead (step 0 is read in place either way).
    own_rows_then_peers(ccl, tiles, |first, steps, inside| {
        if !ahead {
            return in_place(first, steps, inside);
        }
        if first == 0 {
            in_place(0, 1, inside)?;
        }
        if first + steps > 1 {
            copied_ahead(ccl, a, &b, c, [m, n, k, me, world])?;
        }
        Ok(())
    })?;
    // No rank rewrites its A while a peer reads it.
    ccl.barrier()
}

/// The all-gather GEMM's steps 1 on (the peers' rows), copied ahead of their tiles into
/// the communicator's gathered A (`[m, n, k, me, world]` as the call's).
fn copied_ahead<T: MatmulElement>(
    ccl: &Ccl<'_>,
    a: &SymmetricBuffer<'_, T>,
    b: &MatrixB<'_, T>,
    c: &SymmetricBuffer<'_, f32>,
    [m, n, k, me, world]: [u32; 5],
) -> Result<()> {
    let words = 1 + (world * m / 128) as usize;
    let bytes = (world * m * k) as usize * std::mem::size_of::<T>();
    let width = b.tile_width() as u32;
    let row_blocks = m / 128;
    let tasks = ahead::task_count(world, row_blocks, row_blocks * (n / width));
    let threads = gemm_threads(ccl, b.transposed);
    ccl.gather_ahead()
        .with_work(words, bytes, &mut |work, gathered, epoch| {
            let launch = FusedLaunch {
                config: LaunchConfig::linear(tasks, threads),
                wide: b.transposed,
                b: b.ptr,
                op: Fused::GatherAhead {
                    a,
                    gathered: gathered.cast::<T>(),
                    c,
                    work,
                    m,
                    n,
                    k,
                    me,
                    world,
                    epoch,
                },
            };
            T::launch_fused(ccl.iris(), &launch)
        })
}

/// How [`matmul_reduce_scatter_with`] and [`matmul_all_reduce_with`] bring the ranks'
/// partial products together. Every form but [`Pull`](Self::Pull) adds the rounded
/// parts in rank order, so those give the same bits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MatmulReduceAlgo {
    /// Where every rank of the world shares this rank's device: [`Pull`](Self::Pull)
    /// when `a` and B are [`SymmetricBuffer`]s, B is transposed, and the owners' tiles
    /// of all the ranks, counted in waves of the device's multiprocessors, let its long
    /// blocks end no later than the plain GEMMs and their collective (the fastest there:
    /// on an H100 at 4 ranks, 0.86-0.91x of the GEMM then the collective at 4096 x 4096
    /// x 4096 a rank, 0.83-0.86x at n = 1024 with the calls queued back to back; with
    /// fewer tiles its few long blocks leave the device idle at the end), else
    /// [`AfterGemm`](Self::AfterGemm) when the own rows of all the ranks are less than a
    /// wave of tiles (a tensor-parallel layer's narrow `n`: there the call cannot hide
    /// the ranks' arrival skew behind its own rows, and measured slower than the GEMM
    /// and the collective one after the other); else [`IntoOwners`](Self::IntoOwners).
    /// Every rank passes the same kinds of arrays (the choice follows them).
    #[default]
    Auto,
    /// The GEMM stores each tile of this rank's partial product straight into slot `me`
    /// of the owner's `staging` (this rank's own rows first, while the last rank
    /// arrives), and each owner adds its slots after a barrier: the communication rides
    /// on the GEMM's stores, so across devices it overlaps the GEMM.
    IntoOwners,
    /// The GEMM writes this rank's whole partial product into its own `staging`, then
    /// the library's [`reduce_scatter`](super::reduce_scatter) (or
    /// [`all_reduce`](super::all_reduce), [`AllReduceAlgo::Auto`](super::AllReduceAlgo::Auto))
    /// adds them: the unfused sequence, which starts its GEMM before the last rank
    /// arrives, with a one-block barrier between the two (so that no rank's collective
    /// blocks wait on the device while another rank's GEMM still needs it).
    AfterGemm,
    /// No partial products at all: each owner computes its rows of the sum itself, as one
    /// GEMM over every rank's share of the inner dimension (`W·k`, in rank order),
    /// reading each rank's rows of `a` and its B in that rank's memory; nothing is
    /// staged (`staging` is not touched) and nothing is added after the GEMM. A barrier
    /// before it (every rank's A and B written) and after it (no rank rewrites them
    /// while an owner reads them). The sum is rounded as one accumulation over `W·k`,
    /// not as rounded partial products added, so its bits may differ from the other
    /// forms' (each owner's rows are computed once: the all-reduce's copies are
    /// identical). For ranks that share a device, where the peers' memory is the same
    /// memory: across devices each owner would read every rank's whole B over the links.
    /// Needs `a` and B as [`SymmetricBuffer`]s, the same two allocations on every rank
    /// (each rank's copy holding its own A and B), and B transposed
    /// ([`MatrixB::transposed`]); a call without them is refused.
    Pull,
}

/// GEMM then reduce-scatter, fused: every rank's `a` (`M x k`: its share of the inner
/// dimension) times its `b` (`k x n`, or [`MatrixB::transposed`]) is a partial `M x n`
/// product; rank `r` gets rows `r·M/W..` of their sum in `c` (`M/W x n`, `f32`), added in
/// rank order (the host's `Σ_s partial_s` in order).
///
/// The GEMM over the `M` rows: each tile of the partial product goes straight into slot
/// `me` of the owner's `staging` (`M x n` `f32` on every rank: `W` slots of `M/W x n`),
/// this rank's own rows first (into its own `staging`), then, once every rank has added
/// the last call's slots (a wait after the own rows: this rank arrived before them), the
/// other owners' rows (as for [`all_gather_matmul`], one launch after a barrier where the
/// own rows are less than a wave); after a device barrier each rank adds its `W` slots
/// into its `c` ([`MatmulReduceAlgo::IntoOwners`]). Where every rank shares one device
/// and their own rows are less than a wave, the GEMM and the library's `reduce_scatter`
/// run one after the other instead ([`MatmulReduceAlgo::AfterGemm`];
/// [`matmul_reduce_scatter_with`] chooses). Shapes: `M/W` a multiple of 128, `n` of 128
/// (256 with Bᵀ), `k` of 64. Collective, asynchronous.
pub fn matmul_reduce_scatter<'b, T: MatmulElement>(
    ccl: &Ccl<'_>,
    a: &impl LocalArray<T>,
    b: impl Into<MatrixB<'b, T>>,
    staging: &SymmetricBuffer<'_, f32>,
    c: &SymmetricBuffer<'_, f32>,
    k: usize,
) -> Result<()> {
    matmul_reduce_scatter_with(ccl, a, b, staging, c, k, MatmulReduceAlgo::Auto)
}

/// [`matmul_reduce_scatter`] with the way the parts are added chosen
/// ([`MatmulReduceAlgo`]). Every rank passes the same `algo`.
pub fn matmul_reduce_scatter_with<'b, T: MatmulElement>(
    ccl: &Ccl<'_>,
    a: &impl LocalArray<T>,
    b: impl Into<MatrixB<'b, T>>,
    staging: &SymmetricBuffer<'_, f32>,
    c: &SymmetricBuffer<'_, f32>,
    k: usize,
    algo: MatmulReduceAlgo,
) -> Result<()> {
    let what = "ccl::matmul_reduce_scatter";
    reduced(what, ccl, a, b.into(), [staging, c], k, false, algo)
}

/// GEMM then all-reduce, fused: as [`matmul_reduce_scatter`], but each rank writes the
/// sum of its rows to every rank's `c` (`M x n`, `f32`, bit-identical everywhere; in the
/// [`AfterGemm`](MatmulReduceAlgo::AfterGemm) form the library's `all_reduce` adds).
/// `staging` as for [`matmul_reduce_scatter`]. Collective, asynchronous.
pub fn matmul_all_reduce<'b, T: MatmulElement>(
    ccl: &Ccl<'_>,
    a: &impl LocalArray<T>,
    b: impl Into<MatrixB<'b, T>>,
    staging: &SymmetricBuffer<'_, f32>,
    c: &SymmetricBuffer<'_, f32>,
    k: usize,
) -> Result<()> {
    matmul_all_reduce_with(ccl, a, b, staging, c, k, MatmulReduceAlgo::Auto)
}

/// [`matmul_all_reduce`] with the way the parts are added chosen ([`MatmulReduceAlgo`]).
/// Every rank passes the same `algo`.
pub fn matmul_all_reduce_with<'b, T: MatmulElement>(
    ccl: &Ccl<'_>,
    a: &impl LocalArray<T>,
    b: impl Into<MatrixB<'b, T>>,
    staging: &SymmetricBuffer<'_, f32>,
    c: &SymmetricBuffer<'_, f32>,
    k: usize,
    algo: MatmulReduceAlgo,
) -> Result<()> {
    let what = "ccl::matmul_all_reduce";
    reduced(what, ccl, a, b.into(), [staging, c], k, true, algo)
}

/// [`matmul_reduce_scatter_with`] (`everywhere` false) or [`matmul_all_reduce_with`].
#[allow(clippy::too_many_arguments)]
fn reduced<T: MatmulElement>(
    what: &str,
    ccl: &Ccl<'_>,
    a: &impl LocalArray<T>,
    b: MatrixB<'_, T>,
    [staging, c]: [&SymmetricBuffer<'_, f32>; 2],
    k: usize,
    everywhere: bool,
    algo: MatmulReduceAlgo,
) -> Result<()> {
    let world = ccl.world_size();
    let (rows, n) = shape_of(what, a.len(), b.len, k)?;
    if rows % world != 0 {
        return Err(Error::InvalidConfig(format!(
            "{what}: {rows} rows of A do not split into {world} equal parts"
        )));
    }
    let part = rows / world;
    let width = b.tile_width();
    check_tiles(what, part, rows, n, k, width)?;
    if everywhere {
        check_len(
            "ccl::matmul_all_reduce staging (M x n)",
            rows * n,
            staging.len(),
        )?;
        check_len("ccl::matmul_all_reduce c (M x n)", rows * n, c.len())?;
    } else {
        check_len(
            "ccl::matmul_reduce_scatter staging (M x n)",
            rows * n,
            staging.len(),
        )?;
        check_len("ccl::matmul_reduce_scatter c (M/W x n)", part * n, c.len())?;
    }
    if staging.map().base() == c.map().base() {
        return Err(Error::InvalidConfig(format!(
            "{what}: staging and c are the same allocation; pass two"
        )));
    }
    let _span = ccl.iris().trace_span(what, (rows * n * 4) as u64);
    let own_tiles = (part / 128 * (n / width)) as u32;
    // `Pull` reads the given Bᵀ in place; the other forms take B in the layout of this
    // device's kernel.
    if let Some((a, bt)) = pulled(what, ccl, a, &b, own_tiles, algo)? {
        // Every rank's A and B are written (and, for the all-reduce, no rank still reads
        // its `c` of the last call).
        ccl.barrier()?;
        let op = Fused::Pulled {
            a,
            bt,
            c,
            signals: ccl.signals(),
            part: part as u32,
            n: n as u32,
            k: k as u32,
            me: ccl.rank() as u32,
            world: world as u32,
            everywhere: u32::from(everywhere),
        };
        launch_gemm(ccl, &b, part, n, op)?;
        // No rank rewrites its A or B (or reads its `c`) until every owner is done.
        return ccl.barrier();
    }
    let b = in_kernel_layout(ccl, b, k, n)?;
    let own_tiles = (part / 128 * (n / b.tile_width())) as u32;
    if after_gemm(ccl, own_tiles, algo) {
        // This rank's whole partial product into its own `staging` (no peer writes or
        // reads it: the last collective on it ended with every rank done with it, or
        // stored into it before a barrier), then the collective adds them.
        let op = Fused::Plain {
            a: a.local_ptr(),
            c: staging,
            n: n as u32,
            k: k as u32,
            me: ccl.rank() as u32,
            world: world as u32,
        };
        launch_gemm(ccl, &b, rows, n, op)?;
        // Where ranks share this device the collective queues a one-block barrier first
        // (`Ccl::wait_for_device_peers`): its blocks, spinning at their entry, could
        // otherwise hold every multiprocessor while a late rank's GEMM waits for one.
        return if everywhere {
            super::all_reduce(ccl, staging, c, super::ReduceOp::Sum, AllReduceAlgo::Auto)
        } else {
            super::reduce_scatter(ccl, staging, c, super::ReduceOp::Sum)
        };
    }
    // Steps `first..first + steps`: the rows of `steps` owners, owner `me + first` first.
    let scatter = |first: usize, steps: usize, inside: bool| {
        let op = Fused::Scatter {
            a: a.local_ptr(),
            staging,
            part: part as u32,
            n: n as u32,
            k: k as u32,
            me: ccl.rank() as u32,
            world: world as u32,
            first: first as u32,
            split: InGrid::of(ccl, inside),
        };
        launch_gemm(ccl, &b, steps * part, n, op)
    };
    // Every rank has added its slots of the last call before any rank writes them: this
    // rank's own rows (its own `staging`, free by stream order) may go before that.
    own_rows_then_peers(ccl, own_tiles, |first, steps, inside| {
        scatter(first as usize, steps as usize, inside)
    })?;
    // Every rank's tiles of this rank's rows have landed.
    ccl.barrier()?;
    let me = ccl.rank();
    let vectors = (part * n / 4) as u32;
    kernels::sum_parts::launch(
        ccl.iris(),
        LaunchConfig::linear(vectors.div_ceil(256).clamp(1, 1 << 16), 256),
        &staging.local_ptr().cast::<crate::prelude::f32x4>(),
        c,
        ccl.signals(),
        vectors,
        if everywhere {
            (me * part * n / 4) as u32
        } else {
            0
        },
        me as u32,
        world as u32,
        u32::from(everywhere),
    )?;
    if everywhere {
        // Every rank's sums have landed in every `c`.
        ccl.barrier()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{kernel_takes_bt, pulled_waves_fit};
    use crate::BackendKind;

    /// Hopper takes Bᵀ (and a `k x n` B whose `n` is whole 256-wide tiles), other GPUs
    /// `k x n`, the CPU the layout given.
    #[test]
    fn each_device_takes_b_in_its_kernels_layout() {
        for given in [false, true] {
            assert_eq!(kernel_takes_bt(BackendKind::Cpu, "host", given, 256), given);
            assert!(kernel_takes_bt(BackendKind::Cuda, "sm_90", given, 1024));
            assert!(!kernel_takes_bt(BackendKind::Cuda, "sm_80", given, 1024));
            assert!(!kernel_takes_bt(BackendKind::Hip, "gfx942", given, 1024));
        }
        // Bᵀ stays Bᵀ on Hopper; B with n = 384 is not whole tiles of `warpgroup_256`.
        assert!(kernel_takes_bt(BackendKind::Cuda, "sm_90", true, 384));
        assert!(!kernel_takes_bt(BackendKind::Cuda, "sm_90", false, 384));
    }

    /// The H100 runs the rule follows (132 multiprocessors, 4 ranks, tiles in all):
    /// 64 and 160 lost to the GEMM then the collective, 128, 256 and 512 won.
    #[test]
    fn pull_is_taken_where_it_measured_faster() {
        for (all_tiles, won) in [
            (64, false),
            (160, false),
            (128, true),
            (256, true),
            (512, true),
        ] {
            assert_eq!(
                pulled_waves_fit(all_tiles / 4, 4, 132),
                won,
                "{all_tiles} tiles"
            );
        }
        // One rank: the pulled kernel is the plain GEMM.
        assert!(pulled_waves_fit(1, 1, 132));
    }
}
