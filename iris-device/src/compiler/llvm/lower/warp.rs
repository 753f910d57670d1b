//! Warp operations on each target.
//!
//! - NVIDIA: `%laneid`, `shfl.sync.{idx,bfly,down,up}` and `vote.sync.{ballot,any,all}`
//!   over the warp's active lanes (`activemask`, so a block's short last warp works),
//!   `bar.warp.sync`.
//! - AMD (wave64): the lane from `mbcnt`, shuffles as `ds_bpermute` from a source lane
//!   computed here, votes from `llvm.amdgcn.ballot.i64`, `wave_barrier`.
//! - CPU: the lane from the thread index; shuffles and ballots through the launch
//!   context's warp exchange (`abi::CpuLaunchContext::warp_shuffle`/`warp_ballot`).
//!
//! Values wider or narrower than 32 bits move as 32-bit words. Reductions are a
//! butterfly of `xor` shuffles, so every lane ends with the same result.

use super::super::super::kernel_ir::Intrinsic;
use super::super::super::kernel_ir::{
    BinaryOp, Dim, Expr, MathFn, ReduceOp, Scalar, ShuffleKind, Type, VoteKind,
};
use super::builder::FnBuilder;
use super::ids::Coord;
use super::intrinsics::not_in_family;
use crate::abi::TargetKind;

/// Lanes of a warp on the CPU backend.
pub(super) const CPU_WARP_SIZE: u32 = 32;

/// Offset of `warp` in `CpuLaunchContext`.
pub(super) const WARP_OFFSET: u32 = 88;
/// Offset of `warp_shuffle`.
pub(super) const WARP_SHUFFLE_OFFSET: u32 = 96;
/// Offset of `warp_ballot`.
pub(super) const WARP_BALLOT_OFFSET: u32 = 104;
/// Offset of `warp_mma`.
pub(super) const WARP_MMA_OFFSET: u32 = 112;

impl FnBuilder<'_> {
    /// Lane and warp ids, shuffles, votes, `warp_sync`, reductions.
    pub(super) fn lower_warp(&mut self, op: &Intrinsic) -> Result<String, String> {
        match op {
            Intrinsic::LaneId => self.lane_id(),
            Intrinsic::WarpSize => Ok(self.warp_lanes().to_string()),
            Intrinsic::WarpId => self.warp_id(),
            Intrinsic::Shuffle { kind, value, lane } => self.shuffle(*kind, value, lane),
            Intrinsic::Vote { kind, pred } => self.vote(*kind, pred),
            Intrinsic::WarpSync => {
                self.warp_sync()?;
                Ok(String::new())
            }
            Intrinsic::WarpReduce { op, value } => self.warp_reduce(*op, value),
            other => Err(not_in_family(other)),
        }
    }

    /// Lanes per warp on this target.
    pub fn warp_lanes(&self) -> u32 {
        match self.arch().kind() {
            TargetKind::Nvptx => 32,
            TargetKind::Amdgpu => 64,
            TargetKind::Cpu => CPU_WARP_SIZE,
        }
    }

    /// `lane_id()`.
    pub fn lane_id(&mut self) -> Result<String, String> {
        match self.arch().kind() {
            TargetKind::Nvptx => {
                let name = "llvm.nvvm.read.ptx.sreg.laneid";
                self.m.declare(name, "i32", "");
                Ok(self.def(&format!("call i32 @{name}()")))
            }
            TargetKind::Amdgpu => {
                self.m.declare("llvm.amdgcn.mbcnt.lo", "i32", "i32, i32");
                self.m.declare("llvm.amdgcn.mbcnt.hi", "i32", "i32, i32");
                let lo = self.def("call i32 @llvm.amdgcn.mbcnt.lo(i32 -1, i32 0)");
                Ok(self.def(&format!("call i32 @llvm.amdgcn.mbcnt.hi(i32 -1, i32 {lo})")))
            }
            TargetKind::Cpu => {
                let t = self.linear_thread()?;
                Ok(self.def(&format!("urem i32 {t}, {CPU_WARP_SIZE}")))
            }
        }
    }

    /// `warp_id()`.
    pub fn warp_id(&mut self) -> Result<String, String> {
        let t = self.linear_thread()?;
        let lanes = self.warp_lanes();
        Ok(self.def(&format!("udiv i32 {t}, {lanes}")))
    }

    /// The thread's index in its block, x fastest.
    fn linear_thread(&mut self) -> Result<String, String> {
        let (x, y, z) = (
            self.coord(Coord::ThreadIdx, Dim::X)?,
            self.coord(Coord::ThreadIdx, Dim::Y)?,
            self.coord(Coord::ThreadIdx, Dim::Z)?,
        );
        let (bx, by) = (
            self.coord(Coord::BlockDim, Dim::X)?,
            self.coord(Coord::BlockDim, Dim::Y)?,
        );
        let zy = self.def(&format!("mul i32 {z}, {by}"));
        let zyy = self.def(&format!("add i32 {zy}, {y}"));
        let row = self.def(&format!("mul i32 {zyy}, {bx}"));
        Ok(self.def(&format!("add i32 {row}, {x}")))
    }

    /// NVIDIA's mask of the lanes of this warp that exist in the block (all 32 but in a
    /// block whose size is not a multiple of 32): warp operations wait for all of them,
    /// as CUDA's `__shfl_sync(0xffffffff, ..)` does, so lanes that went apart in a branch
    /// meet again there (with `activemask` a lane still in the branch would be left out,
    /// and the others would read their own value from it).
    fn ptx_warp_mask(&mut self) -> Result<String, String> {
        let t = self.linear_thread()?;
        let lane = self.lane_id()?;
        let base = self.def(&format!("sub i32 {t}, {lane}"));
        let (bx, by, bz) = (
            self.coord(Coord::BlockDim, Dim::X)?,
            self.coord(Coord::BlockDim, Dim::Y)?,
            self.coord(Coord::BlockDim, Dim::Z)?,
        );
        let xy = self.def(&format!("mul i32 {bx}, {by}"));
        let total = self.def(&format!("mul i32 {xy}, {bz}"));
        let left = self.def(&format!("sub i32 {total}, {base}"));
        let full = self.def(&format!("icmp uge i32 {left}, 32"));
        let low = self.def(&format!("shl i32 1, {left}"));
        let low = self.def(&format!("sub i32 {low}, 1"));
        Ok(self.def(&format!("select i1 {full}, i32 -1, i32 {low}")))
    }

    /// `shfl*(value, lane)` of a value of type `ty`.
    pub fn shuffle(
        &mut self,
        kind: ShuffleKind,
        value: &Expr,
        lane: &Expr,
    ) -> Result<String, String> {
        let v = self.expr(value)?;
        let l = self.expr(lane)?;
        self.shuffle_value(kind, &v, &value.ty, &l)
    }

    pub(super) fn shuffle_value(
        &mut self,
        kind: ShuffleKind,
        v: &str,
        ty: &Type,
        arg: &str,
    ) -> Result<String, String> {
        let words = self.split_words(v, ty)?;
        let mut moved = Vec::with_capacity(words.len());
        match self.arch().kind() {
            TargetKind::Nvptx => {
                let mask = self.ptx_warp_mask()?;
                let (name, clamp) = match kind {
                    ShuffleKind::Index => ("idx", 31),
                    ShuffleKind::Xor => ("bfly", 31),
                    ShuffleKind::Down => ("down", 31),
                    ShuffleKind::Up => ("up", 0),
                };
                // `shfl.sync` reads only the low 5 bits of its lane or offset (`k % 32`); the
                // language's rule is the caller's own lane when the source is outside the
                // warp: the index becomes the own lane, an offset or mask becomes 0.
                let (_, valid) = self.shuffle_source(kind, arg)?;
                let arg = if kind == ShuffleKind::Index {
                    self.source_lane(kind, arg)?
                } else {
                    self.def(&format!("select i1 {valid}, i32 {arg}, i32 0"))
                };
                let f = format!("llvm.nvvm.shfl.sync.{name}.i32");
                self.m.declare(&f, "i32", "i32, i32, i32, i32");
                for w in &words {
                    moved.push(self.def(&format!(
                        "call i32 @{f}(i32 {mask}, i32 {w}, i32 {arg}, i32 {clamp})"
                    )));
                }
            }
            TargetKind::Amdgpu => {
                let src = self.source_lane(kind, arg)?;
                let addr = self.def(&format!("shl i32 {src}, 2"));
                let f = "llvm.amdgcn.ds.bpermute";
                self.m.declare(f, "i32", "i32, i32");
                for w in &words {
                    moved.push(self.def(&format!("call i32 @{f}(i32 {addr}, i32 {w})")));
                }
            }
            TargetKind::Cpu => {
                let src = self.source_lane(kind, arg)?;
                let seat = self.cpu_ctx_field("ptr", WARP_OFFSET, 8)?;
                let f = self.cpu_ctx_field("ptr", WARP_SHUFFLE_OFFSET, 8)?;
                for w in &words {
                    let wide = self.def(&format!("zext i32 {w} to i64"));
                    let got = self.def(&format!("call i64 {f}(ptr {seat}, i64 {wide}, i32 {src})"));
                    moved.push(self.def(&format!("trunc i64 {got} to i32")));
                }
            }
        }
        self.join_words(&moved, ty)
    }

    /// The lane a shuffle reads, or the caller's own lane when that is outside the warp.
    fn source_lane(&mut self, kind: ShuffleKind, arg: &str) -> Result<String, String> {
        let lane = self.lane_id()?;
        let (src, valid) = self.shuffle_source(kind, arg)?;
        Ok(self.def(&format!("select i1 {valid}, i32 {src}, i32 {lane}")))
    }

    /// The lane a shuffle names, and whether it is inside the warp.
    fn shuffle_source(&mut self, kind: ShuffleKind, arg: &str) -> Result<(String, String), String> {
        let lane = self.lane_id()?;
        let lanes = self.warp_lanes();
        Ok(match kind {
            ShuffleKind::Index => {
                let valid = self.def(&format!("icmp ult i32 {arg}, {lanes}"));
                (arg.to_string(), valid)
            }
            ShuffleKind::Xor => {
                let src = self.def(&format!("xor i32 {lane}, {arg}"));
                let valid = self.def(&format!("icmp ult i32 {src}, {lanes}"));
                (src, valid)
            }
            ShuffleKind::Down => {
                let src = self.def(&format!("add i32 {lane}, {arg}"));
                let room = self.def(&format!("sub i32 {lanes}, {lane}"));
                let valid = self.def(&format!("icmp ult i32 {arg}, {room}"));
                (src, valid)
            }
            ShuffleKind::Up => {
                let src = self.def(&format!("sub i32 {lane}, {arg}"));
                let valid = self.def(&format!("icmp ule i32 {arg}, {lane}"));
                (src, valid)
            }
        })
    }

    /// `ballot`, `any`, `all`.
    pub fn vote(&mut self, kind: VoteKind, pred: &Expr) -> Result<String, String> {
        let p = self.expr(pred)?;
        match (self.arch().kind(), kind) {
            (TargetKind::Nvptx, VoteKind::Ballot) => {
                let mask = self.ptx_warp_mask()?;
                let f = "llvm.nvvm.vote.ballot.sync";
                self.m.declare(f, "i32", "i32, i1");
                let bits = self.def(&format!("call i32 @{f}(i32 {mask}, i1 {p})"));
                Ok(self.def(&format!("zext i32 {bits} to i64")))
            }
            (TargetKind::Nvptx, _) => {
                let mask = self.ptx_warp_mask()?;
                let f = if kind == VoteKind::Any {
                    "llvm.nvvm.vote.any.sync"
                } else {
                    "llvm.nvvm.vote.all.sync"
                };
                self.m.declare(f, "i1", "i32, i1");
                Ok(self.def(&format!("call i1 @{f}(i32 {mask}, i1 {p})")))
            }
            (_, VoteKind::Ballot) => self.ballot_bits(&p),
            (_, VoteKind::Any) => {
                let bits = self.ballot_bits(&p)?;
                Ok(self.def(&format!("icmp ne i64 {bits}, 0")))
            }
            (_, VoteKind::All) => {
                let bits = self.ballot_bits(&p)?;
                let present = self.ballot_bits("true")?;
                Ok(self.def(&format!("icmp eq i64 {bits}, {present}")))
            }
        }
    }

    /// The ballot of `p` (an `i1`) on AMD and the CPU.
    fn ballot_bits(&mut self, p: &str) -> Result<String, String> {
        if self.arch().kind() == TargetKind::Amdgpu {
            let f = "llvm.amdgcn.ballot.i64";
            self.m.declare(f, "i64", "i1");
            return Ok(self.def(&format!("call i64 @{f}(i1 {p})")));
        }
        let seat = self.cpu_ctx_field("ptr", WARP_OFFSET, 8)?;
        let f = self.cpu_ctx_field("ptr", WARP_BALLOT_OFFSET, 8)?;
        let wide = self.def(&format!("zext i1 {p} to i32"));
        Ok(self.def(&format!("call i64 {f}(ptr {seat}, i32 {wide})")))
    }

    /// `warp_sync()`.
    pub fn warp_sync(&mut self) -> Result<(), String> {
        match self.arch().kind() {
            TargetKind::Nvptx => {
                let mask = self.ptx_warp_mask()?;
                let f = "llvm.nvvm.bar.warp.sync";
                self.m.declare(f, "void", "i32");
                self.inst(&format!("call void @{f}(i32 {mask})"));
            }
            TargetKind::Amdgpu => {
                let f = "llvm.amdgcn.wave.barrier";
                self.m.declare(f, "void", "");
                self.inst(&format!("call void @{f}()"));
            }
            TargetKind::Cpu => {
                // An exchange is a barrier of the warp.
                self.ballot_bits("true")?;
            }
        }
        Ok(())
    }

    /// `warp_reduce_*(value)`: a butterfly of `xor` shuffles, `m` = lanes/2 .. 1, in
    /// which a partner lane past the warp's last thread (the short last warp of a block)
    /// counts as absent; lane 0 then holds the result of every lane, and broadcasts it.
    pub fn warp_reduce(&mut self, op: ReduceOp, value: &Expr) -> Result<String, String> {
        let ty = value.ty.clone();
        let mut acc = self.expr(value)?;
        let present = self.lanes_present()?;
        let lane = self.lane_id()?;
        let mut m = self.warp_lanes() / 2;
        while m >= 1 {
            let other = self.shuffle_value(ShuffleKind::Xor, &acc, &ty, &m.to_string())?;
            let both = self.combine(op, &acc, &other, &ty)?;
            let partner = self.def(&format!("xor i32 {lane}, {m}"));
            let valid = self.def(&format!("icmp ult i32 {partner}, {present}"));
            let t = self.reg_ty(&ty)?;
            acc = self.def(&format!("select i1 {valid}, {t} {both}, {t} {acc}"));
            m /= 2;
        }
        self.shuffle_value(ShuffleKind::Index, &acc, &ty, "0")
    }

    /// How many lanes of this warp have a thread (lanes `0..n`).
    fn lanes_present(&mut self) -> Result<String, String> {
        let bits = match self.arch().kind() {
            TargetKind::Nvptx => {
                let mask = self.ptx_warp_mask()?;
                self.def(&format!("zext i32 {mask} to i64"))
            }
            _ => self.ballot_bits("true")?,
        };
        self.m.declare("llvm.ctpop.i64", "i64", "i64");
        let n = self.def(&format!("call i64 @llvm.ctpop.i64(i64 {bits})"));
        Ok(self.def(&format!("trunc i64 {n} to i32")))
    }

    fn combine(&mut self, op: ReduceOp, a: &str, b: &str, ty: &Type) -> Result<String, String> {
        let f = match op {
            ReduceOp::Add => return self.binary_values(BinaryOp::Add, a, ty, b, ty, ty),
            ReduceOp::Min => MathFn::Min,
            ReduceOp::Max => MathFn::Max,
        };
        let half = matches!(ty, Type::Scalar(Scalar::F16 | Scalar::BF16));
        if half && self.arch().kind() == TargetKind::Cpu {
            let t = self.reg_ty(ty)?;
            let wa = self.def(&format!("fpext {t} {a} to float"));
            let wb = self.def(&format!("fpext {t} {b} to float"));
            let r = self.math_values(f, &Type::Scalar(Scalar::F32), vec![wa, wb])?;
            return Ok(self.def(&format!("fptrunc float {r} to {t}")));
        }
        self.math_values(f, ty, vec![a.to_string(), b.to_string()])
    }

    /// A value as 32-bit words (narrower values extended, wider ones split, low first).
    fn split_words(&mut self, v: &str, ty: &Type) -> Result<Vec<String>, String> {
        let t = self.reg_ty(ty)?;
        let bits = self.value_bits(ty)?;
        let int = match ty {
            Type::Ptr { .. } => self.def(&format!("ptrtoint ptr {v} to i64")),
            Type::Scalar(Scalar::Bool) => v.to_string(),
            Type::Scalar(s) if s.is_int() => v.to_string(),
            _ => self.def(&format!("bitcast {t} {v} to i{bits}")),
        };
        if bits <= 32 {
            let w = if bits == 32 {
                int
            } else {
                self.def(&format!("zext i{bits} {int} to i32"))
            };
            return Ok(vec![w]);
        }
        let mut words = Vec::new();
        for i in 0..bits / 32 {
            let shifted = if i == 0 {
                int.clone()
            } else {
                self.def(&format!("lshr i{bits} {int}, {}", i * 32))
            };
            words.push(self.def(&format!("trunc i{bits} {shifted} to i32")));
        }
        Ok(words)
    }

    /// The inverse of [`split_words`](Self::split_words).
    fn join_words(&mut self, words: &[String], ty: &Type) -> Result<String, String> {
        let t = self.reg_ty(ty)?;
        let bits = self.value_bits(ty)?;
        let int = if bits <= 32 {
            let w = words.first().ok_or("no word to rebuild a value from")?;
            if bits == 32 {
                w.clone()
            } else {
                self.def(&format!("trunc i32 {w} to i{bits}"))
            }
        } else {
            let mut acc = String::new();
            for (i, w) in words.iter().enumerate() {
                let wide = self.def(&format!("zext i32 {w} to i{bits}"));
                let part = if i == 0 {
                    wide
                } else {
                    self.def(&format!("shl i{bits} {wide}, {}", i * 32))
                };
                acc = if acc.is_empty() {
                    part
                } else {
                    self.def(&format!("or i{bits} {acc}, {part}"))
                };
            }
            acc
        };
        Ok(match ty {
            Type::Ptr { .. } => self.def(&format!("inttoptr i64 {int} to ptr")),
            Type::Scalar(Scalar::Bool) => int,
            Type::Scalar(s) if s.is_int() => int,
            _ => self.def(&format!("bitcast i{bits} {int} to {t}")),
        })
    }

    /// Bits of a value in registers (`bool` is one).
    fn value_bits(&self, ty: &Type) -> Result<u32, String> {
        match ty {
            Type::Scalar(Scalar::Bool) => Ok(1),
            Type::Scalar(s) => Ok(s.size() * 8),
            Type::Vector(v) => Ok(v.elem.size() * 8 * v.lanes),
            Type::Ptr { .. } => Ok(64),
            other => Err(format!("`{other}` cannot move between lanes")),
        }
    }
}
