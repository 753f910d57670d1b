//! The device operations a call in a kernel becomes: every intrinsic, its operands, and
//! the small enums its variants carry (dimensions, memory orders and scopes, atomic,
//! math, shuffle, vote and reduction kinds).

use super::{Expr, FragmentRole, Scalar};

/// A thread or block dimension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dim {
    /// x
    X,
    /// y
    Y,
    /// z
    Z,
}

impl Dim {
    /// 0, 1, 2.
    pub fn index(self) -> usize {
        match self {
            Dim::X => 0,
            Dim::Y => 1,
            Dim::Z => 2,
        }
    }
}

/// Memory ordering (`core::sync::atomic::Ordering`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemOrder {
    /// `Relaxed` (LLVM `monotonic`).
    Relaxed,
    /// `Acquire`.
    Acquire,
    /// `Release`.
    Release,
    /// `AcqRel`.
    AcqRel,
    /// `SeqCst`.
    SeqCst,
}

/// Memory scope (`iris::Scope`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MemScope {
    /// The block.
    Block,
    /// The device.
    Device,
    /// The system: every device and the host.
    System,
}

/// Atomic read-modify-write operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RmwOp {
    /// `atomic_add` (integer or float)
    Add,
    /// `atomic_sub` (integer or float)
    Sub,
    /// `atomic_and`
    And,
    /// `atomic_or`
    Or,
    /// `atomic_xor`
    Xor,
    /// `atomic_min` (signed or unsigned by type)
    Min,
    /// `atomic_max` (signed or unsigned by type)
    Max,
    /// `atomic_xchg`
    Xchg,
}

/// Math functions on floats (and `min`/`max`/`abs` on integers).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MathFn {
    /// `x.sqrt()`
    Sqrt,
    /// `x.abs()`
    Abs,
    /// `x.min(y)`
    Min,
    /// `x.max(y)`
    Max,
}

/// An operand of an intrinsic.
pub type Operand = Box<Expr>;

/// Device intrinsics, each with its operands by name (`sym` is a `Symmetric<T>`, `peer` a
/// `u32`). [`operands`](Intrinsic::operands) lists them in evaluation order.
#[derive(Clone, Debug)]
pub enum Intrinsic {
    /// `thread_idx_*()` -> u32.
    ThreadIdx(Dim),
    /// `block_idx_*()` -> u32.
    BlockIdx(Dim),
    /// `block_dim_*()` -> u32.
    BlockDim(Dim),
    /// `grid_dim_*()` -> u32.
    GridDim(Dim),
    /// `sync_threads()`.
    SyncThreads,
    /// `fence(order, scope)` (both constants).
    Fence {
        /// Ordering.
        order: MemOrder,
        /// Scope.
        scope: MemScope,
    },
    /// `shared_array::<T, N>()` -> `*mut T`: `Function::shared_arrays[index]`.
    SharedArray {
        /// Index into the function's shared arrays.
        index: usize,
    },
    /// `copy_async(dst, src)`: `*src` (4, 8 or 16 bytes) into shared `*dst`, not waited for.
    CopyAsync {
        /// Where to (block-shared memory).
        dst: Operand,
        /// From where (global memory).
        src: Operand,
    },
    /// `copy_async_commit()`.
    CopyAsyncCommit,
    /// `copy_async_wait(pending)`.
    CopyAsyncWait {
        /// Groups that may still be in flight, a constant.
        pending: u32,
    },
    /// `bulk_barrier_init(barrier)`: a shared `u64` made ready to count bulk copies.
    BulkBarrierInit {
        /// The barrier (`*mut u64`, block-shared).
        barrier: Operand,
    },
    /// `bulk_expect(barrier, bytes)`: the bytes that complete the barrier's current phase.
    BulkExpect {
        /// The barrier.
        barrier: Operand,
        /// Bytes (`u32`).
        bytes: Operand,
    },
    /// `copy_bulk(dst, src, barrier)`: `*src` (a multiple of 16 bytes) into shared `*dst`,
    /// counted on the barrier.
    CopyBulk {
        /// Where to (block-shared memory).
        dst: Operand,
        /// From where (global memory).
        src: Operand,
        /// The barrier that counts the bytes.
        barrier: Operand,
    },
    /// `copy_tile(dst, map, col, row, barrier)`: a box of a tile-mapped matrix into shared
    /// `*dst` in the 128-byte swizzle, counted on the barrier.
    CopyTile {
        /// Where to (block-shared memory, 1024-byte aligned).
        dst: Operand,
        /// The tile map (`*const u64`).
        map: Operand,
        /// The box's first column (`u32`).
        col: Operand,
        /// The box's first row (`u32`).
        row: Operand,
        /// The barrier that counts the bytes.
        barrier: Operand,
    },
    /// `bulk_wait(barrier, parity)`: until the phase of that parity completed.
    BulkWait {
        /// The barrier.
        barrier: Operand,
        /// The phase's parity (`u32`, 0 or 1).
        parity: Operand,
    },
    /// `ptr.add(count)` (and `sub`, `offset`): moved by `count` elements.
    PtrOffset {
        /// The pointer.
        ptr: Operand,
        /// Elements, an `i64`.
        count: Operand,
    },
    /// `sym.add(count)`: the symmetric pointer moved by `count` elements.
    SymOffset {
        /// The symmetric pointer.
        sym: Operand,
        /// Elements, an `i64`.
        count: Operand,
    },
    /// `sym.local()` -> `*mut T`, the local pointer.
    SymLocal {
        /// The symmetric pointer.
        sym: Operand,
    },
    /// `sym.peer_ptr(peer)` -> `*mut T`: the peer's copy, as a plain pointer.
    SymPeerPtr {
        /// The symmetric pointer.
        sym: Operand,
        /// Whose copy.
        peer: Operand,
    },
    /// `sym.cast::<U>()` -> `Symmetric<U>` (the expression's type), same address.
    SymCast {
        /// The symmetric pointer.
        sym: Operand,
    },
    /// `load(sym, peer)` -> T: reads the peer's copy.
    RemoteLoad {
        /// What to read.
        sym: Operand,
        /// Whose copy.
        peer: Operand,
    },
    /// `store(sym, value, peer)`: writes the peer's copy.
    RemoteStore {
        /// Where to write.
        sym: Operand,
        /// What.
        value: Operand,
        /// Whose copy.
        peer: Operand,
    },
    /// `get(src, dst, peer)`: the peer's `*src` to the local `*dst`.
    Get {
        /// Symmetric source.
        src: Operand,
        /// Local destination pointer.
        dst: Operand,
        /// Whose copy is read.
        peer: Operand,
    },
    /// `put(src, dst, peer)`: the local `*src` to the peer's `*dst`.
    Put {
        /// Local source pointer.
        src: Operand,
        /// Symmetric destination.
        dst: Operand,
        /// Whose copy is written.
        peer: Operand,
    },
    /// `copy(src, dst, from_peer, to_peer)`.
    Copy {
        /// Symmetric source.
        src: Operand,
        /// Symmetric destination.
        dst: Operand,
        /// Whose copy of `src` is read.
        from_peer: Operand,
        /// Whose copy of `dst` is written.
        to_peer: Operand,
    },
    /// `atomic_<op>(sym, value, peer, order, scope)` -> the old value.
    AtomicRmw {
        /// The operation.
        op: RmwOp,
        /// Ordering.
        order: MemOrder,
        /// Scope.
        scope: MemScope,
        /// The cell.
        sym: Operand,
        /// The operand.
        value: Operand,
        /// Whose copy.
        peer: Operand,
    },
    /// `atomic_cas(sym, current, new, peer, order, scope)` -> the old value.
    AtomicCas {
        /// Ordering (on success; failure uses the strongest load ordering it allows).
        order: MemOrder,
        /// Scope.
        scope: MemScope,
        /// The cell.
        sym: Operand,
        /// The value expected.
        current: Operand,
        /// The value stored when it matches.
        new: Operand,
        /// Whose copy.
        peer: Operand,
    },
    /// `atomic_load(sym, peer, order, scope)` -> the value.
    AtomicLoad {
        /// Ordering.
        order: MemOrder,
        /// Scope.
        scope: MemScope,
        /// The cell.
        sym: Operand,
        /// Whose copy.
        peer: Operand,
    },
    /// `atomic_store(sym, value, peer, order, scope)`.
    AtomicStore {
        /// Ordering.
        order: MemOrder,
        /// Scope.
        scope: MemScope,
        /// The cell.
        sym: Operand,
        /// The value.
        value: Operand,
        /// Whose copy.
        peer: Operand,
    },
    /// `world_aborted(sym)`: whether the abort flag the allocation's table names is set.
    WorldAborted {
        /// Any symmetric pointer of the world.
        sym: Operand,
    },
    /// `__iris_header(sym, index)`: word `index` (negative) of the allocation's peer
    /// table, as a `u64`.
    HeaderWord {
        /// The symmetric pointer whose table is read.
        sym: Operand,
        /// The word's index from entry 0.
        index: i64,
    },
    /// `__iris_word_load(addr)`: a relaxed, volatile, system-scope load of the `u64` at
    /// device address `addr`.
    WordLoad {
        /// The address.
        addr: Operand,
    },
    /// `__iris_word_store(addr, value)`: a relaxed system-scope store.
    WordStore {
        /// The address.
        addr: Operand,
        /// The value.
        value: Operand,
    },
    /// `__iris_word_cas(addr, current, new)` -> the old value: a relaxed system-scope
    /// compare-and-swap.
    WordCas {
        /// The address.
        addr: Operand,
        /// The value expected.
        current: Operand,
        /// The value stored when it matches.
        new: Operand,
    },
    /// `f32x4::new([..])`: a vector of its lanes.
    VecNew {
        /// One value per lane.
        lanes: Vec<Expr>,
    },
    /// `f32x4::splat(x)`: every lane `x`.
    VecSplat {
        /// The value.
        value: Operand,
    },
    /// `v.get(lane)`.
    VecGet {
        /// The vector.
        vector: Operand,
        /// The lane, a constant.
        lane: u32,
    },
    /// `x.sqrt()`, `x.min(y)`, ...: same type as `x`.
    Math {
        /// Which function.
        f: MathFn,
        /// The first argument.
        x: Operand,
        /// The second, for `min` and `max`.
        y: Option<Operand>,
    },
    /// `global_timer_ns()` -> u64: nanoseconds of the device's shared clock.
    GlobalTimerNs,
    /// `clock64()` -> u64: the multiprocessor's cycle counter.
    Clock64,
    /// `nanosleep(ns)`: sleeps about `ns` nanoseconds.
    Nanosleep {
        /// Nanoseconds, a `u32`.
        ns: Operand,
    },
    /// `trace_event(id, value)`: a user event in the rank's trace (nothing when tracing
    /// is not built into the unit: see `Unit::trace_events`).
    TraceEvent {
        /// The event's id, a `u32`.
        id: Operand,
        /// Its payload, a `u64`.
        value: Operand,
    },
    /// `lane_id()` -> u32.
    LaneId,
    /// `warp_size()` -> u32.
    WarpSize,
    /// `warp_id()` -> u32.
    WarpId,
    /// `shfl*(value, lane)` -> the value another lane holds.
    Shuffle {
        /// Which lane is read.
        kind: ShuffleKind,
        /// The value (a scalar, vector or pointer).
        value: Operand,
        /// The source lane, the xor mask or the delta, a `u32`.
        lane: Operand,
    },
    /// `ballot(p)` -> u64, `any(p)` / `all(p)` -> bool.
    Vote {
        /// Which vote.
        kind: VoteKind,
        /// The predicate, a `bool`.
        pred: Operand,
    },
    /// `warp_sync()`.
    WarpSync,
    /// `mma_load_a(tile, ld)` / `mma_load_b(tile, ld)` -> this lane's share of the tile.
    MmaLoad {
        /// Which tile (A or B).
        role: FragmentRole,
        /// The element type (`bf16` or `f16`).
        elem: Scalar,
        /// The tile's first element (a raw pointer).
        tile: Operand,
        /// Elements between rows, a `u32`.
        ld: Operand,
    },
    /// `mma_load_a_swizzled(tile, row, col)` / `mma_load_b_swizzled(..)` -> this lane's
    /// share of the 16 x 16 tile at (`row`, `col`) of a 128-byte-swizzled box.
    MmaLoadSwizzled {
        /// Which tile (A or B).
        role: FragmentRole,
        /// The element type (`bf16` or `f16`).
        elem: Scalar,
        /// The box's first element (a raw pointer, rows of 64 elements).
        tile: Operand,
        /// The fragment's first row in the box, a `u32`.
        row: Operand,
        /// The fragment's first column in the box, a `u32`.
        col: Operand,
    },
    /// `mma_zero()` -> an accumulator of zeros.
    MmaZero,
    /// `mma(a, b, acc)` -> `acc + a * b`.
    Mma {
        /// The element type of `a` and `b`.
        elem: Scalar,
        /// The A fragment.
        a: Operand,
        /// The B fragment.
        b: Operand,
        /// The accumulator.
        acc: Operand,
    },
    /// `mma_store(tile, ld, acc)`, or `mma_store_peer(tile, ld, acc, peer)` when `peer` is
    /// given (then `tile` is a `Symmetric<f32>`), or `mma_add_peer(..)` when `add` is set
    /// (each element added atomically).
    MmaStore {
        /// Add into the tile with relaxed system-scope atomic adds instead of storing.
        add: bool,
        /// The tile's first element.
        tile: Operand,
        /// Elements between rows, a `u32`.
        ld: Operand,
        /// The accumulator.
        acc: Operand,
        /// Whose copy, for `mma_store_peer`.
        peer: Option<Operand>,
    },
    /// `wg_zero()` -> a warpgroup accumulator of zeros.
    WgZero,
    /// `wg_mma(a, b, kstep, acc)` -> `acc + A B` for k step `kstep` (k `16 kstep ..`) of
    /// the 64 x 64 tile of A at `a` and the 128 x 64 tile of Bᵀ at `b` (shared memory,
    /// 128-byte swizzled rows); asynchronous until `wg_wait`.
    WgMma {
        /// The element type of A and B.
        elem: Scalar,
        /// A's slice (a raw pointer to shared memory).
        a: Operand,
        /// B's slice (a raw pointer to shared memory).
        b: Operand,
        /// Which 16 k of the tiles (0 to 3), a `u32`.
        kstep: Operand,
        /// The accumulator.
        acc: Operand,
    },
    /// `wg_commit()`: ends the batch of `wg_mma` issued since the last commit.
    WgCommit,
    /// `wg_wait(acc, pending)` -> `acc` once at most `pending` committed batches are in
    /// flight.
    WgWait {
        /// The accumulator.
        acc: Operand,
        /// Batches that may still be in flight, a constant.
        pending: u32,
    },
    /// `wg_store(tile, ld, acc)`: the warpgroup's 64 x 128 `f32` tile, row-major; or
    /// `wg_store_peer(tile, ld, acc, peer)` when `peer` is given (then `tile` is a
    /// `Symmetric<f32>`).
    WgStore {
        /// The tile's first element.
        tile: Operand,
        /// Elements between rows, a `u32`.
        ld: Operand,
        /// The accumulator.
        acc: Operand,
        /// Whose copy, for `wg_store_peer`.
        peer: Option<Operand>,
    },
    /// `warp_reduce_*(value)` -> the reduction over the warp, in every lane.
    WarpReduce {
        /// Which reduction.
        op: ReduceOp,
        /// The value (a number).
        value: Operand,
    },
}

/// Which lane a shuffle reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShuffleKind {
    /// `shfl(v, src)`: lane `src`.
    Index,
    /// `shfl_xor(v, mask)`: lane `lane_id() ^ mask`.
    Xor,
    /// `shfl_down(v, delta)`: lane `lane_id() + delta`.
    Down,
    /// `shfl_up(v, delta)`: lane `lane_id() - delta`.
    Up,
}

/// A warp vote.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VoteKind {
    /// A bit per lane.
    Ballot,
    /// True in some lane.
    Any,
    /// True in every lane.
    All,
}

/// A warp reduction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReduceOp {
    /// Sum.
    Add,
    /// Minimum.
    Min,
    /// Maximum.
    Max,
}

impl Intrinsic {
    /// The operands, in evaluation order.
    pub fn operands(&self) -> Vec<&Expr> {
        use Intrinsic::*;
        match self {
            ThreadIdx(_)
            | BlockIdx(_)
            | BlockDim(_)
            | GridDim(_)
            | SyncThreads
            | Fence { .. }
            | SharedArray { .. }
            | GlobalTimerNs
            | Clock64
            | LaneId
            | WarpSize
            | WarpId
            | WarpSync
            | MmaZero
            | WgZero
            | WgCommit
            | CopyAsyncCommit
            | CopyAsyncWait { .. } => vec![],
            CopyAsync { dst, src } => vec![dst, src],
            BulkBarrierInit { barrier } => vec![barrier],
            BulkExpect { barrier, bytes } => vec![barrier, bytes],
            CopyBulk { dst, src, barrier } => vec![dst, src, barrier],
            BulkWait { barrier, parity } => vec![barrier, parity],
            CopyTile {
                dst,
                map,
                col,
                row,
                barrier,
            } => vec![dst, map, col, row, barrier],
            PtrOffset { ptr, count } => vec![ptr, count],
            SymOffset { sym, count } => vec![sym, count],
            SymLocal { sym } | SymCast { sym } | WorldAborted { sym } | HeaderWord { sym, .. } => {
                vec![sym]
            }
            WordLoad { addr } => vec![addr],
            WordStore { addr, value } => vec![addr, value],
            WordCas { addr, current, new } => vec![addr, current, new],
            RemoteLoad { sym, peer } | SymPeerPtr { sym, peer } | AtomicLoad { sym, peer, .. } => {
                vec![sym, peer]
            }
            RemoteStore { sym, value, peer }
            | AtomicRmw {
                sym, value, peer, ..
            }
            | AtomicStore {
                sym, value, peer, ..
            } => vec![sym, value, peer],
            Get { src, dst, peer } | Put { src, dst, peer } => vec![src, dst, peer],
            Copy {
                src,
                dst,
                from_peer,
                to_peer,
            } => vec![src, dst, from_peer, to_peer],
            AtomicCas {
                sym,
                current,
                new,
                peer,
                ..
            } => vec![sym, current, new, peer],
            VecNew { lanes } => lanes.iter().collect(),
            VecSplat { value } => vec![value],
            VecGet { vector, .. } => vec![vector],
            Math { x, y, .. } => std::iter::once(&**x).chain(y.as_deref()).collect(),
            Nanosleep { ns } => vec![ns],
            TraceEvent { id, value } => vec![id, value],
            Shuffle { value, lane, .. } => vec![value, lane],
            Vote { pred, .. } => vec![pred],
            WarpReduce { value, .. } => vec![value],
            MmaLoad { tile, ld, .. } => vec![tile, ld],
            MmaLoadSwizzled { tile, row, col, .. } => vec![tile, row, col],
            Mma { a, b, acc, .. } => vec![a, b, acc],
            WgMma {
                a, b, kstep, acc, ..
            } => vec![a, b, kstep, acc],
            WgWait { acc, .. } => vec![acc],
            WgStore {
                tile,
                ld,
                acc,
                peer,
            } => {
                let mut v: Vec<&Expr> = vec![tile, ld, acc];
                v.extend(peer.as_deref());
                v
            }
            MmaStore {
                tile,
                ld,
                acc,
                peer,
                ..
            } => {
                let mut v: Vec<&Expr> = vec![tile, ld, acc];
                v.extend(peer.as_deref());
                v
            }
        }
    }

    /// The operands, mutably, in evaluation order.
    pub fn operands_mut(&mut self) -> Vec<&mut Expr> {
        use Intrinsic::*;
        match self {
            ThreadIdx(_)
            | BlockIdx(_)
            | BlockDim(_)
            | GridDim(_)
            | SyncThreads
            | Fence { .. }
            | SharedArray { .. }
            | GlobalTimerNs
            | Clock64
            | LaneId
            | WarpSize
            | WarpId
            | WarpSync
            | MmaZero
            | WgZero
            | WgCommit
            | CopyAsyncCommit
            | CopyAsyncWait { .. } => vec![],
            CopyAsync { dst, src } => vec![dst, src],
            BulkBarrierInit { barrier } => vec![barrier],
            BulkExpect { barrier, bytes } => vec![barrier, bytes],
            CopyBulk { dst, src, barrier } => vec![dst, src, barrier],
            BulkWait { barrier, parity } => vec![barrier, parity],
            CopyTile {
                dst,
                map,
                col,
                row,
                barrier,
            } => vec![dst, map, col, row, barrier],
            PtrOffset { ptr, count } => vec![ptr, count],
            SymOffset { sym, count } => vec![sym, count],
            SymLocal { sym } | SymCast { sym } | WorldAborted { sym } | HeaderWord { sym, .. } => {
                vec![sym]
            }
            WordLoad { addr } => vec![addr],
            WordStore { addr, value } => vec![addr, value],
            WordCas { addr, current, new } => vec![addr, current, new],
            RemoteLoad { sym, peer } | SymPeerPtr { sym, peer } | AtomicLoad { sym, peer, .. } => {
                vec![sym, peer]
            }
            RemoteStore { sym, value, peer }
            | AtomicRmw {
                sym, value, peer, ..
            }
            | AtomicStore {
                sym, value, peer, ..
            } => vec![sym, value, peer],
            Get { src, dst, peer } | Put { src, dst, peer } => vec![src, dst, peer],
            Copy {
                src,
                dst,
                from_peer,
                to_peer,
            } => vec![src, dst, from_peer, to_peer],
            AtomicCas {
                sym,
                current,
                new,
                peer,
                ..
            } => vec![sym, current, new, peer],
            VecNew { lanes } => lanes.iter_mut().collect(),
            VecSplat { value } => vec![value],
            VecGet { vector, .. } => vec![vector],
            Math { x, y, .. } => std::iter::once(&mut **x).chain(y.as_deref_mut()).collect(),
            Nanosleep { ns } => vec![ns],
            TraceEvent { id, value } => vec![id, value],
            Shuffle { value, lane, .. } => vec![value, lane],
            Vote { pred, .. } => vec![pred],
            WarpReduce { value, .. } => vec![value],
            MmaLoad { tile, ld, .. } => vec![tile, ld],
            MmaLoadSwizzled { tile, row, col, .. } => vec![tile, row, col],
            Mma { a, b, acc, .. } => vec![a, b, acc],
            WgMma {
                a, b, kstep, acc, ..
            } => vec![a, b, kstep, acc],
            WgWait { acc, .. } => vec![acc],
            WgStore {
                tile,
                ld,
                acc,
                peer,
            } => {
                let mut v: Vec<&mut Expr> = vec![tile, ld, acc];
                v.extend(peer.as_deref_mut());
                v
            }
            MmaStore {
                tile,
                ld,
                acc,
                peer,
                ..
            } => {
                let mut v: Vec<&mut Expr> = vec![tile, ld, acc];
                v.extend(peer.as_deref_mut());
                v
            }
        }
    }
}
