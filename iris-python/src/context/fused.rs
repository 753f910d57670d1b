//! The fused operations of `iris.ccl` through a context: the mixture-of-experts exchange
//! (`moe`, `moe_dispatch`, `moe_combine`, `moe_recv_counts`, `moe_check`) and the fused
//! GEMMs (`all_gather_matmul`, `matmul_reduce_scatter`, `matmul_all_reduce`).

use super::collectives::{made, settle};
use super::*;
use crate::dtype::dispatch_float;
use iris::ccl::{Moe, MoeShape};
use iris::prelude::{bf16, f16};

/// The exchange `id` of rank `r`.
fn moe_of<'r, 'a>(r: &'r crate::rank::Rank<'a>, id: u64) -> iris::Result<&'r Moe<'a>> {
    r.moes.get(&id).ok_or_else(|| {
        iris::Error::InvalidConfig(format!(
            "MoE exchange #{id} does not exist (made by ctx.moe)"
        ))
    })
}

#[pymethods]
impl PyContext {
    /// A mixture-of-experts exchange (iris.ccl `Moe`) for `tokens` tokens of `hidden`
    /// elements a rank, `top_k` experts a token, `experts` in all (spread evenly over the
    /// ranks) and `capacity` rows in each rank's receive buffer; returns its id for
    /// `moe_dispatch` / `moe_combine`. Collective (every rank, the same shape).
    fn moe(
        &self,
        py: Python<'_>,
        tokens: usize,
        hidden: usize,
        top_k: usize,
        experts: usize,
        capacity: usize,
    ) -> PyResult<u64> {
        let shape = MoeShape {
            tokens,
            hidden,
            top_k,
            experts,
            capacity,
        };
        let rank = Arc::clone(&self.rank);
        py.detach(move || {
            rank.call(move |r| {
                r.ccl()?;
                let moe = Moe::new(made(r)?, shape)?;
                let id = r.next_id();
                r.moes.insert(id, moe);
                Ok(id)
            })
        })
        .map_err(to_py)
    }

    /// Sends each token of `x` (`tokens * hidden`, float32/float16/bfloat16, this rank's
    /// copy) to the ranks of the experts `idx` (int64, `tokens * top_k`, read on the
    /// device; negative: none) names, into their `recv` (`capacity * hidden`), expert by
    /// expert then source by source. Collective.
    #[pyo3(signature = (moe, x, idx, recv, sync = None, on_torch_stream = false))]
    #[allow(clippy::too_many_arguments)] // the Python method's keyword arguments
    fn moe_dispatch(
        &self,
        py: Python<'_>,
        moe: u64,
        x: PyRef<'_, PySymmetric>,
        idx: PyRef<'_, PySymmetric>,
        recv: PyRef<'_, PySymmetric>,
        sync: Option<bool>,
        on_torch_stream: bool,
    ) -> PyResult<()> {
        let what = "moe_dispatch";
        let (xi, ri, dtype) = self.pair(what, &x, &recv)?;
        self.own(&format!("{what}: idx"), &idx)?;
        if idx.dtype != DType::I64 {
            return Err(usage(format!(
                "{what}: idx must hold int64, got {}",
                idx.dtype
            )));
        }
        let ii = idx.id;
        let order = CallOrder {
            sync,
            on_torch_stream,
        };
        let devices = [x.torch_device, idx.torch_device, recv.torch_device];
        let sync = self.order_after_torch(py, &devices, order)?;
        self.keep(py, sync, &[&x, &idx, &recv]);
        let rank = Arc::clone(&self.rank);
        py.detach(move || {
            rank.call(move |r| {
                r.ccl()?;
                let (ccl, moe) = (made(r)?, moe_of(r, moe)?);
                let idx = r.typed::<i64>(ii)?;
                dispatch_float!(dtype, "moe_dispatch: tokens", T => {
                    moe.dispatch(ccl, r.typed::<T>(xi)?, idx, r.typed::<T>(ri)?)
                })?;
                settle(ccl, sync)
            })
        })
        .map_err(to_py)
    }

    /// `out[t]` = the sum over token `t`'s slots of `weights` (float32, `tokens * top_k`)
    /// times the row its expert's rank left in `expert_out` (the rows `moe_dispatch`
    /// filled, after the experts' work; it may be `recv`). Collective.
    #[pyo3(signature = (moe, expert_out, idx, weights, out, sync = None, on_torch_stream = false))]
    #[allow(clippy::too_many_arguments)] // the Python method's keyword arguments
    fn moe_combine(
        &self,
        py: Python<'_>,
        moe: u64,
        expert_out: PyRef<'_, PySymmetric>,
        idx: PyRef<'_, PySymmetric>,
        weights: PyRef<'_, PySymmetric>,
        out: PyRef<'_, PySymmetric>,
        sync: Option<bool>,
        on_torch_stream: bool,
    ) -> PyResult<()> {
        let what = "moe_combine";
        let (ei, oi, dtype) = self.pair(what, &expert_out, &out)?;
        self.own(&format!("{what}: idx"), &idx)?;
        self.own(&format!("{what}: weights"), &weights)?;
        if idx.dtype != DType::I64 || weights.dtype != DType::F32 {
            return Err(usage(format!(
                "{what}: idx must hold int64 and weights float32, got {} and {}",
                idx.dtype, weights.dtype
            )));
        }
        let (ii, wi) = (idx.id, weights.id);
        let order = CallOrder {
            sync,
            on_torch_stream,
        };
        let devices = [
            expert_out.torch_device,
            idx.torch_device,
            weights.torch_device,
            out.torch_device,
        ];
        let sync = self.order_after_torch(py, &devices, order)?;
        self.keep(py, sync, &[&expert_out, &idx, &weights, &out]);
        let rank = Arc::clone(&self.rank);
        py.detach(move || {
            rank.call(move |r| {
                r.ccl()?;
                let (ccl, moe) = (made(r)?, moe_of(r, moe)?);
                let (idx, weights) = (r.typed::<i64>(ii)?, r.typed::<f32>(wi)?);
                dispatch_float!(dtype, "moe_combine: rows", T => {
                    moe.combine(ccl, r.typed::<T>(ei)?, idx, weights, r.typed::<T>(oi)?)
                })?;
                settle(ccl, sync)
            })
        })
        .map_err(to_py)
    }

    /// How many rows each rank sent each of this rank's experts in the last dispatch:
    /// `[j * world + s]` for local expert `j` and source `s` (waits for the rank's work).
    fn moe_recv_counts(&self, py: Python<'_>, moe: u64) -> PyResult<Vec<u64>> {
        let rank = Arc::clone(&self.rank);
        py.detach(move || rank.call(move |r| moe_of(r, moe)?.recv_counts().to_vec()))
            .map_err(to_py)
    }

    /// Raises IrisError when the last dispatch left rows out (past the capacity, or expert
    /// ids past the last); waits for the rank's work.
    fn moe_check(&self, py: Python<'_>, moe: u64) -> PyResult<()> {
        let rank = Arc::clone(&self.rank);
        py.detach(move || rank.call(move |r| moe_of(r, moe)?.check()))
            .map_err(to_py)
    }

    /// All-gather then GEMM, fused (iris.ccl): `c` (float32, `world * m x n`) = every
    /// rank's `a` (`m x k`, bfloat16 or float16) times this rank's `b` (`k x n`, this
    /// rank's copy; with `transposed=True`, `b` is Bᵀ, `n x k` as a `torch.nn.Linear`
    /// weight, and the GEMM is Hopper's warpgroup kernel). `m` a multiple of 128, `n` of
    /// 128 (256 transposed), `k` of 64. Collective.
    #[pyo3(signature = (a, b, c, k, transposed = false, sync = None, on_torch_stream = false))]
    #[allow(clippy::too_many_arguments)] // the Python method's keyword arguments
    fn all_gather_matmul(
        &self,
        py: Python<'_>,
        a: PyRef<'_, PySymmetric>,
        b: PyRef<'_, PySymmetric>,
        c: PyRef<'_, PySymmetric>,
        k: usize,
        transposed: bool,
        sync: Option<bool>,
        on_torch_stream: bool,
    ) -> PyResult<()> {
        let shape = MatmulShape { k, transposed };
        let order = CallOrder {
            sync,
            on_torch_stream,
        };
        self.matmul(py, Matmul::AllGather, [a, b], [c], shape, order)
    }

    /// GEMM then reduce-scatter, fused (iris.ccl): every rank's `a` (`M x k`) times its `b`
    /// (`k x n`), summed over the ranks in rank order; rank `r` gets rows `r * M/W ..` in
    /// `c` (float32). `staging`: float32, `M x n`. `transposed` as for
    /// `all_gather_matmul`. Collective.
    #[pyo3(signature = (a, b, staging, c, k, transposed = false, sync = None, on_torch_stream = false))]
    #[allow(clippy::too_many_arguments)] // the Python method's keyword arguments
    fn matmul_reduce_scatter(
        &self,
        py: Python<'_>,
        a: PyRef<'_, PySymmetric>,
        b: PyRef<'_, PySymmetric>,
        staging: PyRef<'_, PySymmetric>,
        c: PyRef<'_, PySymmetric>,
        k: usize,
        transposed: bool,
        sync: Option<bool>,
        on_torch_stream: bool,
    ) -> PyResult<()> {
        let shape = MatmulShape { k, transposed };
        let order = CallOrder {
            sync,
            on_torch_stream,
        };
        self.matmul(
            py,
            Matmul::ReduceScatter,
            [a, b],
            [staging, c],
            shape,
            order,
        )
    }

    /// GEMM then all-reduce, fused (iris.ccl): as `matmul_reduce_scatter`, each sum
    /// written to every rank's `c` (float32, `M x n`). Collective.
    #[pyo3(signature = (a, b, staging, c, k, transposed = false, sync = None, on_torch_stream = false))]
    #[allow(clippy::too_many_arguments)] // the Python method's keyword arguments
    fn matmul_all_reduce(
        &self,
        py: Python<'_>,
        a: PyRef<'_, PySymmetric>,
        b: PyRef<'_, PySymmetric>,
        staging: PyRef<'_, PySymmetric>,
        c: PyRef<'_, PySymmetric>,
        k: usize,
        transposed: bool,
        sync: Option<bool>,
        on_torch_stream: bool,
    ) -> PyResult<()> {
        let shape = MatmulShape { k, transposed };
        let order = CallOrder {
            sync,
            on_torch_stream,
        };
        self.matmul(py, Matmul::AllReduce, [a, b], [staging, c], shape, order)
    }
}

/// A fused GEMM's inner size and B's layout.
#[derive(Clone, Copy)]
struct MatmulShape {
    k: usize,
    transposed: bool,
}

/// Which fused GEMM a context runs.
#[derive(Clone, Copy)]
enum Matmul {
    AllGather,
    ReduceScatter,
    AllReduce,
}

impl PyContext {
    /// Runs fused GEMM `which` on `inputs` (A, B: bfloat16 or float16) and `outputs`
    /// (float32; C, or staging and C).
    fn matmul<const N: usize>(
        &self,
        py: Python<'_>,
        which: Matmul,
        inputs: [PyRef<'_, PySymmetric>; 2],
        outputs: [PyRef<'_, PySymmetric>; N],
        shape: MatmulShape,
        order: CallOrder,
    ) -> PyResult<()> {
        let what = match which {
            Matmul::AllGather => "all_gather_matmul",
            Matmul::ReduceScatter => "matmul_reduce_scatter",
            Matmul::AllReduce => "matmul_all_reduce",
        };
        let (ai, bi, dtype) = self.pair(what, &inputs[0], &inputs[1])?;
        if !matches!(dtype, DType::BF16 | DType::F16) {
            return Err(usage(format!(
                "{what}: A and B must be bfloat16 or float16, got {dtype}"
            )));
        }
        for o in &outputs {
            self.own(&format!("{what}: output"), o)?;
            if o.dtype != DType::F32 {
                return Err(usage(format!(
                    "{what}: the outputs are float32, got {}",
                    o.dtype
                )));
            }
        }
        let out: Vec<u64> = outputs.iter().map(|o| o.id).collect();
        let mut all: Vec<&PySymmetric> = inputs.iter().map(|b| &**b).collect();
        all.extend(outputs.iter().map(|b| &**b));
        let devices: Vec<Option<i64>> = all.iter().map(|b| b.torch_device).collect();
        let sync = self.order_after_torch(py, &devices, order)?;
        self.keep(py, sync, &all);
        let rank = Arc::clone(&self.rank);
        py.detach(move || {
            rank.call(move |r| {
                r.ccl()?;
                let ccl = made(r)?;
                let f = |id: usize| r.typed::<f32>(out[id]);
                macro_rules! run {
                    ($t:ty) => {{
                        let (a, b) = (r.typed::<$t>(ai)?, r.typed::<$t>(bi)?);
                        let b = if shape.transposed {
                            ccl::MatrixB::transposed(b)
                        } else {
                            ccl::MatrixB::k_by_n(b)
                        };
                        let k = shape.k;
                        match which {
                            Matmul::AllGather => ccl::all_gather_matmul(ccl, a, b, f(0)?, k),
                            Matmul::ReduceScatter => {
                                ccl::matmul_reduce_scatter(ccl, a, b, f(0)?, f(1)?, k)
                            }
                            Matmul::AllReduce => ccl::matmul_all_reduce(ccl, a, b, f(0)?, f(1)?, k),
                        }
                    }};
                }
                match dtype {
                    DType::F16 => run!(f16),
                    _ => run!(bf16),
                }?;
                settle(ccl, sync)
            })
        })
        .map_err(to_py)
    }
}
