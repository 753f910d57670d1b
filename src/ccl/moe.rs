//! Mixture-of-experts token exchange: [`Moe::dispatch`] sends each token to the ranks of
//! the experts a routing table picked for it (top-k expert ids per token, written on the
//! device by a router), laid out expert by expert for the experts' GEMMs;
//! [`Moe::combine`] brings the experts' outputs back and sums each token's, weighted.
//! The routing is read on the device: no host round trip decides the shapes.

use super::{check_len, Ccl, FloatElement, KernelId, LocalArray};
use crate::{Buffer, Error, LaunchConfig, Result, SymmetricBuffer};

/// The kernels. The layout kernels (`moe_count`, `moe_scan`) are local; `moe_layout`,
/// `moe_dispatch` and `moe_combine` meet the device-side barrier on entry and exit.
#[iris::kernels(uses(crate::ccl::barrier))]
#[allow(clippy::too_many_arguments)]
pub(crate) mod kernels {
    use iris::prelude::*;

    /// Tokens per chunk of the routing table: positions are counted per chunk, then
    /// scanned over chunks.
    const CHUNK: u64 = 64;

    /// The most slots a token may have for `moe_combine` to read them into shared memory
    /// first (more take the path that reads them in every vector's loop).
    const COMBINE_SLOTS: usize = 32;

    /// `counts[c * experts + e]`: how many of chunk `c`'s (token, slot) pairs route to
    /// expert `e` (one thread per chunk and expert). Clears the overflow flag.
    #[kernel]
    pub fn moe_count(
        idx: *const i64,
        counts: *mut u64,
        overflow: *mut u32,
        tokens: u64,
        top_k: u64,
        experts: u64,
    ) {
        let stride = (grid_dim_x() * block_dim_x()) as u64;
        let first = (block_idx_x() * block_dim_x() + thread_idx_x()) as u64;
        if first == 0 {
            unsafe { *overflow = 0 };
        }
        let chunks = (tokens + CHUNK - 1) / CHUNK;
        let mut i = first;
        while i < chunks * experts {
            let c = i / experts;
            let e = (i % experts) as i64;
            let hi = ((c + 1) * CHUNK).min(tokens) * top_k;
            let mut n = 0u64;
            let mut p = c * CHUNK * top_k;
            while p < hi {
                if unsafe { *idx.add(p as usize) } == e {
                    n += 1;
                }
                p += 1;
            }
            unsafe { *counts.add(i as usize) = n };
            i += stride;
        }
    }

    /// Per expert `e` (one thread each): `counts[c * experts + e]` becomes the pairs of
    /// chunks before `c` for `e` (an exclusive scan), `totals[e]` (this rank's copy) all of
    /// them.
    #[kernel]
    pub fn moe_scan(counts: *mut u64, totals: Symmetric<u64>, tokens: u64, experts: u64) {
        let stride = (grid_dim_x() * block_dim_x()) as u64;
        let chunks = (tokens + CHUNK - 1) / CHUNK;
        let mut e = (block_idx_x() * block_dim_x() + thread_idx_x()) as u64;
        while e < experts {
            let mut running = 0u64;
            for c in 0..chunks {
                let at = unsafe { counts.add((c * experts + e) as usize) };
                let n = unsafe { *at };
                unsafe { *at = running };
                running += n;
            }
            unsafe { *totals.local().add(e as usize) = running };
            e += stride;
        }
    }

    /// After every rank's `moe_scan`: `base[e]`, the row on expert `e`'s rank where this
    /// rank's rows for `e` start (after the rows of that rank's earlier experts from every
    /// rank, then those for `e` from ranks before this one); `recv_counts[j * world + s]`,
    /// the rows rank `s` sends this rank's local expert `j`; and `slots[p]`, pair `p`'s
    /// row within this rank's rows for its expert (pairs in token order).
    #[kernel]
    pub fn moe_layout(
        idx: *const i64,
        counts: *const u64,
        totals: Symmetric<u64>,
        base: *mut u64,
        slots: *mut u64,
        recv_counts: *mut u64,
        signals: Symmetric<u64>,
        tokens: u64,
        top_k: u64,
        experts: u64,
        me: u32,
        world: u32,
        timeout_ns: u64,
    ) {
        if ccl_enter(signals, me, world, timeout_ns) {
            let stride = (grid_dim_x() * block_dim_x()) as u64;
            let first = (block_idx_x() * block_dim_x() + thread_idx_x()) as u64;
            let per_rank = experts / world as u64;
            let mut e = first;
            while e < experts {
                let start = e / per_rank * per_rank;
                let mut b = 0u64;
                for earlier in start..e {
                    for s in 0..world {
                        b += load(totals.add(earlier as usize), s);
                    }
                }
                for s in 0..me {
                    b += load(totals.add(e as usize), s);
                }
                unsafe { *base.add(e as usize) = b };
                e += stride;
            }
            let mut i = first;
            while i < per_rank * world as u64 {
                let j = i / world as u64;
                let s = (i % world as u64) as u32;
                let expert = me as u64 * per_rank + j;
                unsafe { *recv_counts.add(i as usize) = load(totals.add(expert as usize), s) };
                i += stride;
            }
            let mut p = first;
            while p < tokens * top_k {
                let e = unsafe { *idx.add(p as usize) };
                if e >= 0 && e < experts as i64 {
                    let c = p / top_k / CHUNK;
                    let mut at = unsafe { *counts.add((c * experts + e as u64) as usize) };
                    let mut q = c * CHUNK * top_k;
                    while q < p {
                        if unsafe { *idx.add(q as usize) } == e {
                            at += 1;
                        }
                        q += 1;
                    }
                    unsafe { *slots.add(p as usize) = at };
                }
                p += stride;
            }
            ccl_leave(signals, me, world, timeout_ns);
        }
    }

    /// Each (token, slot) pair's token (a row of `hidden` elements of `x`) into row
    /// `base[e] + slots[p]` of `recv` on expert `e`'s rank, one block a pair. Rows past
    /// `capacity` are not stored (`overflow` 1); an expert id past the experts is skipped
    /// (`overflow` 2); a negative one means no expert.
    #[kernel(instances((f32, 4), (f16, 8), (bf16, 8)))]
    pub fn moe_dispatch<T: Element, const L: usize>(
        x: *const T,
        idx: *const i64,
        base: *const u64,
        slots: *const u64,
        recv: Symmetric<T>,
        overflow: *mut u32,
        signals: Symmetric<u64>,
        tokens: u64,
        top_k: u64,
        experts: u64,
        hidden: u64,
        capacity: u64,
        me: u32,
        world: u32,
        timeout_ns: u64,
    ) {
        if ccl_enter(signals, me, world, timeout_ns) {
            let per_rank = experts / world as u64;
            let lanes = L as u64;
            let threads = block_dim_x() as u64;
            let pairs = tokens * top_k;
            let mut p = block_idx_x() as u64;
            // Each pair's expert id and slot are loaded one pair ahead: their loads overlap
            // the copy of the pair before instead of standing before each copy.
            let mut e = -1i64;
            let mut slot = 0u64;
            if p < pairs {
                e = unsafe { *idx.add(p as usize) };
                slot = unsafe { *slots.add(p as usize) };
            }
            while p < pairs {
                let next = p + grid_dim_x() as u64;
                let mut e_next = -1i64;
                let mut slot_next = 0u64;
                if next < pairs {
                    e_next = unsafe { *idx.add(next as usize) };
                    slot_next = unsafe { *slots.add(next as usize) };
                }
                if e >= experts as i64 {
                    if thread_idx_x() == 0 {
                        unsafe { *overflow = 2 };
                    }
                } else if e >= 0 {
                    let row = unsafe { *base.add(e as usize) } + slot;
                    let dest = (e as u64 / per_rank) as u32;
                    let token = p / top_k;
                    if row >= capacity {
                        if thread_idx_x() == 0 {
                            unsafe { *overflow = 1 };
                        }
                    } else if hidden % lanes == 0 {
                        let vectors = hidden / lanes;
                        let src = unsafe { x.add((token * hidden) as usize) }.cast::<[T; L]>();
                        let dst = recv.add((row * hidden) as usize).cast::<[T; L]>();
                        let mut v = thread_idx_x() as u64;
                        while v < vectors {
                            store(dst.add(v as usize), unsafe { *src.add(v as usize) }, dest);
                            v += threads;
                        }
                    } else {
                        let src = unsafe { x.add((token * hidden) as usize) };
                        let dst = recv.add((row * hidden) as usize);
                        let mut h = thread_idx_x() as u64;
                        while h < hidden {
                            store(dst.add(h as usize), unsafe { *src.add(h as usize) }, dest);
                            h += threads;
                        }
                    }
                }
                p = next;
                e = e_next;
                slot = slot_next;
            }
            ccl_leave(signals, me, world, timeout_ns);
        }
    }

    /// `acc` plus `w` times each lane of `got`, in `f32`.
    #[inline(always)]
    fn add_weighted<T: Element, const L: usize>(acc: [f32; L], w: f32, got: [T; L]) -> [f32; L] {
        let mut out = acc;
        for l in 0..L {
            out[l] += w * got[l].to_f32();
        }
        out
    }

    /// Each lane of `acc` as a `T`.
    #[inline(always)]
    fn narrow<T: Element, const L: usize>(acc: [f32; L]) -> [T; L] {
        let mut out = [T::ZERO; L];
        for l in 0..L {
            out[l] = T::from_f32(acc[l]);
        }
        out
    }

    /// `out[t]` = the sum over token `t`'s slots `k` (in order, in `f32`) of
    /// `weights[t * top_k + k]` times the row its expert's rank computed (`expert_out`,
    /// the row `moe_dispatch` filled), one block a token. Slots with no expert, or whose
    /// row did not fit, add nothing. With at most `COMBINE_SLOTS` slots a token and whole
    /// vectors a row, the block first reads each slot's row, rank and weight once into
    /// shared memory: read in every vector's loop instead, they came from the L1 cache,
    /// which the rows streaming past evict when the cache is small (this kernel waits, so
    /// it runs with the largest shared-memory split: 18% slower on an H100 that way).
    #[kernel(instances((f32, 4), (f16, 8), (bf16, 8)))]
    pub fn moe_combine<T: Element, const L: usize>(
        expert_out: Symmetric<T>,
        idx: *const i64,
        weights: *const f32,
        base: *const u64,
        slots: *const u64,
        out: *mut T,
        signals: Symmetric<u64>,
        tokens: u64,
        top_k: u64,
        experts: u64,
        hidden: u64,
        capacity: u64,
        me: u32,
        world: u32,
        timeout_ns: u64,
    ) {
        // Every thread gets the same answer (block barriers follow).
        let status = shared_array::<u32, 1>();
        if ccl_block_enter(signals, status, me, world, timeout_ns) {
            let per_rank = experts / world as u64;
            let lanes = L as u64;
            let threads = block_dim_x() as u64;
            // Per slot: the row's first element (`u64::MAX`: the slot adds nothing), its
            // rank, its weight.
            let slot_row = shared_array::<u64, COMBINE_SLOTS>();
            let slot_rank = shared_array::<u32, COMBINE_SLOTS>();
            let slot_weight = shared_array::<f32, COMBINE_SLOTS>();
            let mut t = block_idx_x() as u64;
            while t < tokens {
                if hidden % lanes == 0 && top_k <= COMBINE_SLOTS as u64 && top_k <= threads {
                    let k = thread_idx_x() as u64;
                    if k < top_k {
                        let p = t * top_k + k;
                        let e = unsafe { *idx.add(p as usize) };
                        let mut first = u64::MAX;
                        if e >= 0 && e < experts as i64 {
                            let row = unsafe { *base.add(e as usize) + *slots.add(p as usize) };
                            if row < capacity {
                                first = row * hidden;
                            }
                            unsafe { *slot_rank.add(k as usize) = (e as u64 / per_rank) as u32 };
                        }
                        unsafe { *slot_row.add(k as usize) = first };
                        unsafe { *slot_weight.add(k as usize) = *weights.add(p as usize) };
                    }
                    sync_threads();
                    let vectors = hidden / lanes;
                    let dst = unsafe { out.add((t * hidden) as usize) }.cast::<[T; L]>();
                    let mut v = thread_idx_x() as u64;
                    while v < vectors {
                        let mut acc = [0.0f32; L];
                        for k in 0..top_k {
                            let first = unsafe { *slot_row.add(k as usize) };
                            if first != u64::MAX {
                                let w = unsafe { *slot_weight.add(k as usize) };
                                let rank = unsafe { *slot_rank.add(k as usize) };
                                let src = expert_out.add(first as usize).cast::<[T; L]>();
                                acc = add_weighted(acc, w, load(src.add(v as usize), rank));
                            }
                        }
                        unsafe { *dst.add(v as usize) = narrow::<T, L>(acc) };
                        v += threads;
                    }
                    // Every thread has read this token's slots before the next token's.
                    sync_threads();
                } else if hidden % lanes == 0 {
                    let vectors = hidden / lanes;
                    let dst = unsafe { out.add((t * hidden) as usize) }.cast::<[T; L]>();
                    let mut v = thread_idx_x() as u64;
                    while v < vectors {
                        let mut acc = [0.0f32; L];
                        for k in 0..top_k {
                            let p = t * top_k + k;
                            let e = unsafe { *idx.add(p as usize) };
                            if e >= 0 && e < experts as i64 {
                                let row = unsafe { *base.add(e as usize) + *slots.add(p as usize) };
                                if row < capacity {
                                    let w = unsafe { *weights.add(p as usize) };
                                    let src =
                                        expert_out.add((row * hidden) as usize).cast::<[T; L]>();
                                    let rank = (e as u64 / per_rank) as u32;
                                    acc = add_weighted(acc, w, load(src.add(v as usize), rank));
                                }
                            }
                        }
                        unsafe { *dst.add(v as usize) = narrow::<T, L>(acc) };
                        v += threads;
                    }
                } else {
                    let mut h = thread_idx_x() as u64;
                    while h < hidden {
                        let mut acc = 0.0f32;
                        for k in 0..top_k {
                            let p = t * top_k + k;
                            let e = unsafe { *idx.add(p as usize) };
                            if e >= 0 && e < experts as i64 {
                                let row = unsafe { *base.add(e as usize) + *slots.add(p as usize) };
                                if row < capacity {
                                    let w = unsafe { *weights.add(p as usize) };
                                    let src = expert_out.add((row * hidden + h) as usize);
                                    acc += w * load(src, (e as u64 / per_rank) as u32).to_f32();
                                }
                            }
                        }
                        unsafe { *out.add((t * hidden + h) as usize) = T::from_f32(acc) };
                        h += threads;
                    }
                }
                t += grid_dim_x() as u64;
            }
            ccl_block_leave(signals, me, world, timeout_ns);
        }
    }
}

/// The shape of an expert-parallel layer's token exchange, the same on every rank.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MoeShape {
    /// Tokens each rank routes.
    pub tokens: usize,
    /// Elements of a token (a row).
    pub hidden: usize,
    /// Experts each token picks (the routing table's columns).
    pub top_k: usize,
    /// Experts in all, spread evenly over the ranks: expert `e` lives on rank
    /// `e / (experts / world_size)`.
    pub experts: usize,
    /// Rows each rank's receive buffer holds: rows past it are not moved, and
    /// [`Moe::check`] says so. `tokens * top_k * world_size` always suffices.
    pub capacity: usize,
}

/// A mixture-of-experts exchange for one [`MoeShape`]: the layout's device memory,
/// made once (collectively, on the communicator it is then used with) and reused by
/// every [`dispatch`](Moe::dispatch) and [`combine`](Moe::combine).
///
/// **The receive layout.** After `dispatch`, rank `r`'s `recv` holds, for each of its
/// local experts `j` (expert `r * E/W + j`) in order, the rows sent by rank 0, then rank
/// 1, ..., each source's rows in (token, slot) order: one row per (token, slot) pair
/// routed to the expert (a token picked by two experts of one rank is sent twice).
/// [`recv_counts`](Moe::recv_counts)`[j * W + s]` holds how many rows rank `s` sent
/// local expert `j`; the experts' rows are contiguous, so a grouped GEMM reads them in
/// place. Positions are deterministic: the same routing gives the same layout.
///
/// **The routing table** is an `i64` buffer of `tokens * top_k` expert ids (token `t`'s
/// at `t * top_k ..`), read on the device: an id `< 0` means no expert for that slot; an
/// id `>= experts` is skipped and reported by [`check`](Moe::check).
///
/// ```
/// use iris::ccl::{Ccl, Moe, MoeShape};
/// use iris::World;
///
/// # fn main() -> iris::Result<()> {
/// World::threads(2).heap_bytes(1 << 20).run(|iris| {
///     let ccl = Ccl::new(iris)?;
///     let shape = MoeShape { tokens: 4, hidden: 8, top_k: 2, experts: 4, capacity: 16 };
///     let moe = Moe::new(&ccl, shape)?;
///     let x = iris.from_slice(&[1.0f32; 32])?;
///     // Token t picks experts t % 4 and (t + 1) % 4 (a router kernel would write these).
///     let ids: Vec<i64> = (0..4).flat_map(|t| [t % 4, (t + 1) % 4]).collect();
///     let idx = iris.from_slice(&ids)?;
///     let recv = iris.symmetric_zeros::<f32>(16 * 8)?;
///     moe.dispatch(&ccl, &x, &idx, &recv)?;
///     // ... the experts compute on `recv`, here in place ...
///     let weights = iris.from_slice(&[0.5f32; 8])?;
///     let out = iris.zeros::<f32>(32)?;
///     moe.combine(&ccl, &recv, &idx, &weights, &out)?;
///     ccl.synchronize()?;
///     moe.check()?;
///     assert!(out.to_vec()?.iter().all(|&y| y == 1.0)); // 0.5 + 0.5
///     Ok(())
/// })?;
/// # Ok(())
/// # }
/// ```
pub struct Moe<'ctx> {
    shape: MoeShape,
    chunk_counts: Buffer<'ctx, u64>,
    totals: SymmetricBuffer<'ctx, u64>,
    base: Buffer<'ctx, u64>,
    slots: Buffer<'ctx, u64>,
    recv_counts: Buffer<'ctx, u64>,
    overflow: Buffer<'ctx, u32>,
}

/// Tokens per chunk of the layout kernels (their `CHUNK`).
const CHUNK: usize = 64;

impl<'ctx> Moe<'ctx> {
    /// The exchange for `shape` on `ccl`'s ranks (collective: every rank calls it with the
    /// same shape). Refuses a shape with nothing to move or experts not spread evenly.
    pub fn new(ccl: &Ccl<'ctx>, shape: MoeShape) -> Result<Self> {
        let world = ccl.world_size();
        let refuse = |why: String| Err(Error::InvalidConfig(format!("ccl::Moe: {why}")));
        if shape.hidden == 0 || shape.top_k == 0 || shape.capacity == 0 {
            return refuse(format!(
                "hidden ({}), top_k ({}) and capacity ({}) must be at least 1",
                shape.hidden, shape.top_k, shape.capacity
            ));
        }
        if shape.experts == 0 || shape.experts % world != 0 {
            return refuse(format!(
                "{} experts cannot be spread evenly over {world} ranks",
                shape.experts
            ));
        }
        let pairs = shape.tokens.checked_mul(shape.top_k);
        let rows = shape.capacity.checked_mul(shape.hidden);
        if pairs.is_none() || rows.is_none() || shape.experts > i64::MAX as usize {
            return refuse(format!("{shape:?} overflows"));
        }
        let iris = ccl.iris();
        let chunks = shape.tokens.div_ceil(CHUNK).max(1);
        let moe = Moe {
            shape,
            chunk_counts: iris.zeros(chunks * shape.experts)?,
            totals: iris.symmetric_zeros(shape.experts)?,
            base: iris.zeros(shape.experts)?,
            slots: iris.zeros(shape.tokens * shape.top_k)?,
            recv_counts: iris.zeros(shape.experts)?,
            overflow: iris.zeros(1)?,
        };
        // One unit holds every MoE kernel: loaded here, collectively.
        ccl.launch_config_for(KernelId::MoeDispatch.unit(), ccl.block_threads())?;
        Ok(moe)
    }

    /// The shape it was made for.
    pub fn shape(&self) -> MoeShape {
        self.shape
    }

    /// Sends each token of `x` (`tokens * hidden` elements, token after token; a
    /// [`Buffer`] or this rank's copy of a symmetric buffer, as `idx`) to the rank
    /// of every expert `idx` names for it (`tokens * top_k` expert ids), into that rank's
    /// `recv` (`capacity * hidden` elements) in the layout [`Moe`] describes, and sets
    /// [`recv_counts`](Moe::recv_counts). Collective, asynchronous: four launches on the
    /// rank's stream, the routing read on the device.
    pub fn dispatch<T: FloatElement>(
        &self,
        ccl: &Ccl<'ctx>,
        x: &impl LocalArray<T>,
        idx: &impl LocalArray<i64>,
        recv: &SymmetricBuffer<'_, T>,
    ) -> Result<()> {
        let s = self.shape;
        check_len(
            "ccl::Moe::dispatch x (tokens x hidden)",
            s.tokens * s.hidden,
            x.len(),
        )?;
        self.check_routing(idx)?;
        check_len(
            "ccl::Moe::dispatch recv (capacity x hidden)",
            s.capacity * s.hidden,
            recv.len(),
        )?;
        let iris = ccl.iris();
        let rows = (s.tokens * s.top_k * s.hidden * std::mem::size_of::<T>()) as u64;
        let _span = iris.trace_span(KernelId::MoeDispatch.call_name(), rows);
        self.layout(ccl, idx)?;
        let mut args = iris.args(
            KernelId::MoeDispatch.unit(),
            KernelId::MoeDispatch.index::<T>()?,
        );
        args.pointer(&x.local_ptr())?;
        args.pointer(&idx.local_ptr())?;
        args.pointer(&self.base)?;
        args.pointer(&self.slots)?;
        args.symmetric(recv)?;
        args.pointer(&self.overflow)?;
        self.tail(ccl, &mut args, &[s.hidden as u64, s.capacity as u64])?;
        // Right after the layout's barrier-framed kernel on every rank (no rank's earlier
        // kernel can still need the multiprocessors): no barrier before it.
        iris.launch(self.co_resident(ccl)?, args)
    }

    /// `out[t]` (`tokens * hidden` elements) = the sum over token `t`'s slots `k`, in
    /// order, of `weights[t * top_k + k]` (`f32`) times the row its expert's rank left in
    /// `expert_out` (`capacity * hidden`, the rows of the last [`dispatch`](Moe::dispatch)
    /// after the experts' work; it may be `recv` itself), summed in `f32`. `idx` is the
    /// routing table that dispatch used. Slots with no expert, or whose row did not fit,
    /// add nothing. Collective, asynchronous: one launch.
    pub fn combine<T: FloatElement>(
        &self,
        ccl: &Ccl<'ctx>,
        expert_out: &SymmetricBuffer<'_, T>,
        idx: &impl LocalArray<i64>,
        weights: &impl LocalArray<f32>,
        out: &impl LocalArray<T>,
    ) -> Result<()> {
        let s = self.shape;
        check_len(
            "ccl::Moe::combine expert_out (capacity x hidden)",
            s.capacity * s.hidden,
            expert_out.len(),
        )?;
        self.check_routing(idx)?;
        check_len(
            "ccl::Moe::combine weights (tokens x top_k)",
            s.tokens * s.top_k,
            weights.len(),
        )?;
        check_len(
            "ccl::Moe::combine out (tokens x hidden)",
            s.tokens * s.hidden,
            out.len(),
        )?;
        let iris = ccl.iris();
        let rows = (s.tokens * s.top_k * s.hidden * std::mem::size_of::<T>()) as u64;
        let _span = iris.trace_span(KernelId::MoeCombine.call_name(), rows);
        let mut args = iris.args(
            KernelId::MoeCombine.unit(),
            KernelId::MoeCombine.index::<T>()?,
        );
        args.symmetric(expert_out)?;
        args.pointer(&idx.local_ptr())?;
        args.pointer(&weights.local_ptr())?;
        args.pointer(&self.base)?;
        args.pointer(&self.slots)?;
        args.pointer(&out.local_ptr())?;
        self.tail(ccl, &mut args, &[s.hidden as u64, s.capacity as u64])?;
        let config = self.co_resident(ccl)?;
        // Its blocks wait for the other ranks, whose earlier kernels may still run.
        ccl.wait_for_device_peers()?;
        iris.launch(config, args)
    }

    /// How many rows each rank sent each of this rank's experts in the last dispatch:
    /// `[j * world + s]` for local expert `j` and source rank `s` (`experts` entries in
    /// all: `experts / world` local experts times `world` sources). Written on the device by
    /// dispatch: read it after the rank's work, or from a later kernel.
    pub fn recv_counts(&self) -> &Buffer<'ctx, u64> {
        &self.recv_counts
    }

    /// After the rank's work (reading waits for it): `Ok` when the last dispatch moved
    /// every routed row, else an error saying what it left out.
    pub fn check(&self) -> Result<()> {
        match self.overflow.to_vec()?.first().copied().unwrap_or(0) {
            0 => Ok(()),
            1 => Err(Error::InvalidConfig(format!(
                "ccl::Moe::dispatch: rows routed from this rank reach past a peer's capacity of {} rows; only what fit was sent (their slots add nothing in combine)",
                self.shape.capacity
            ))),
            _ => Err(Error::InvalidConfig(format!(
                "ccl::Moe::dispatch: the routing table names an expert past the last ({}); those slots were skipped",
                self.shape.experts - 1
            ))),
        }
    }

    /// The layout of `idx`'s routing: chunk counts, this rank's totals, then (after every
    /// rank's) each pair's row.
    fn layout(&self, ccl: &Ccl<'ctx>, idx: &impl LocalArray<i64>) -> Result<()> {
        let s = self.shape;
        let iris = ccl.iris();
        let threads = ccl.block_threads();
        let blocks = |work: usize| (work.div_ceil(threads as usize).clamp(1, 1 << 16)) as u32;
        let chunks = s.tokens.div_ceil(CHUNK);
        kernels::moe_count::launch(
            iris,
            LaunchConfig::linear(blocks(chunks * s.experts), threads),
            &idx.local_ptr(),
            &self.chunk_counts,
            &self.overflow,
            s.tokens as u64,
            s.top_k as u64,
            s.experts as u64,
        )?;
        kernels::moe_scan::launch(
            iris,
            LaunchConfig::linear(blocks(s.experts), threads),
            &self.chunk_counts,
            &self.totals,
            s.tokens as u64,
            s.experts as u64,
        )?;
        let config = self.co_resident(ccl)?;
        // Its blocks wait for the other ranks, whose earlier kernels may still run.
        ccl.wait_for_device_peers()?;
        kernels::moe_layout::launch(
            iris,
            config,
            &idx.local_ptr(),
            &self.chunk_counts,
            &self.totals,
            &self.base,
            &self.slots,
            &self.recv_counts,
            ccl.signals(),
            s.tokens as u64,
            s.top_k as u64,
            s.experts as u64,
            ccl.rank() as u32,
            ccl.world_size() as u32,
            ccl.wait_limit_ns(),
        )
    }

    /// The arguments dispatch and combine end with: the signals, the shape (`sizes`:
    /// hidden and capacity), this rank, the world and the wait limit.
    fn tail(&self, ccl: &Ccl<'ctx>, args: &mut crate::KernelArgs<'_>, sizes: &[u64]) -> Result<()> {
        let s = self.shape;
        args.symmetric(ccl.signals())?;
        args.value(s.tokens as u64);
        args.value(s.top_k as u64);
        args.value(s.experts as u64);
        for &size in sizes {
            args.value(size);
        }
        args.value(ccl.rank() as u32);
        args.value(ccl.world_size() as u32);
        args.value(ccl.wait_limit_ns());
        Ok(())
    }

    /// The co-resident launch shape of the barrier-framed kernels (the layout, a
    /// dispatch, a combine: their blocks wait for the other ranks).
    fn co_resident(&self, ccl: &Ccl<'ctx>) -> Result<LaunchConfig> {
        ccl.launch_config_for(KernelId::MoeDispatch.unit(), ccl.block_threads())
    }

    /// `idx` holds `tokens * top_k` expert ids.
    fn check_routing(&self, idx: &impl LocalArray<i64>) -> Result<()> {
        check_len(
            "ccl::Moe routing table idx (tokens x top_k)",
            self.shape.tokens * self.shape.top_k,
            idx.len(),
        )
    }
}
