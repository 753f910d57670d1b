//! The collectives of `iris.ccl` through a context: `all_gather`, `all_reduce`,
//! `reduce_scatter`, `broadcast`, each checked here and run by one [`PyContext::collective`].

use super::*;
use crate::dtype::dispatch_float;

/// A collective a context runs, with what it takes besides its two buffers.
#[derive(Clone, Copy)]
enum Collective {
    AllGather(AllGatherAlgo),
    AllReduce(ReduceOp, AllReduceAlgo),
    ReduceScatter(ReduceOp),
    Broadcast(usize),
}

impl Collective {
    /// Its name, as the Python method's.
    fn name(self) -> &'static str {
        match self {
            Collective::AllGather(_) => "all_gather",
            Collective::AllReduce(..) => "all_reduce",
            Collective::ReduceScatter(_) => "reduce_scatter",
            Collective::Broadcast(_) => "broadcast",
        }
    }
}

impl PyContext {
    pub(super) fn all_gather_impl(
        &self,
        py: Python<'_>,
        input: PyRef<'_, PySymmetric>,
        output: PyRef<'_, PySymmetric>,
        algo: &str,
        order: CallOrder,
    ) -> PyResult<()> {
        let algo = match algo {
            "auto" => AllGatherAlgo::Auto,
            "push" => AllGatherAlgo::Push,
            "pull" => AllGatherAlgo::Pull,
            other => {
                return Err(usage(format!(
                    "all_gather: algo must be push, pull or auto, got {other:?}"
                )))
            }
        };
        self.collective(py, Collective::AllGather(algo), input, output, order)
    }

    pub(super) fn all_reduce_impl(
        &self,
        py: Python<'_>,
        input: PyRef<'_, PySymmetric>,
        output: PyRef<'_, PySymmetric>,
        op: &str,
        algo: &str,
        order: CallOrder,
    ) -> PyResult<()> {
        let op = reduce_op("all_reduce", op)?;
        let algo = all_reduce_algo("all_reduce", algo)?;
        self.collective(py, Collective::AllReduce(op, algo), input, output, order)
    }

    pub(super) fn reduce_scatter_impl(
        &self,
        py: Python<'_>,
        input: PyRef<'_, PySymmetric>,
        output: PyRef<'_, PySymmetric>,
        op: &str,
        order: CallOrder,
    ) -> PyResult<()> {
        let op = reduce_op("reduce_scatter", op)?;
        self.collective(py, Collective::ReduceScatter(op), input, output, order)
    }

    pub(super) fn broadcast_impl(
        &self,
        py: Python<'_>,
        input: PyRef<'_, PySymmetric>,
        output: PyRef<'_, PySymmetric>,
        root: usize,
        order: CallOrder,
    ) -> PyResult<()> {
        self.collective(py, Collective::Broadcast(root), input, output, order)
    }

    /// Runs `which` on `input` and `output` (same dtype, this context's), ordered after
    /// PyTorch's work where they are PyTorch's memory, waiting when `order` says so.
    fn collective(
        &self,
        py: Python<'_>,
        which: Collective,
        input: PyRef<'_, PySymmetric>,
        output: PyRef<'_, PySymmetric>,
        order: CallOrder,
    ) -> PyResult<()> {
        let (i, o, dtype) = self.pair(which.name(), &input, &output)?;
        let sync = self.order_after_torch(py, &[input.torch_device, output.torch_device], order)?;
        self.keep(py, sync, &[&input, &output]);
        let rank = Arc::clone(&self.rank);
        py.detach(move || {
            rank.call(move |r| {
                dispatch!(dtype, T => {
                    let (ccl, input, output) = r.collective::<T>(i, o)?;
                    match which {
                        Collective::AllGather(algo) => ccl::all_gather(ccl, input, output, algo),
                        Collective::AllReduce(op, algo) => {
                            ccl::all_reduce(ccl, input, output, op, algo)
                        }
                        Collective::ReduceScatter(op) => ccl::reduce_scatter(ccl, input, output, op),
                        Collective::Broadcast(root) => ccl::broadcast(ccl, input, output, root),
                    }?;
                    settle(ccl, sync)
                })
            })
        })
        .map_err(to_py)
    }
}

impl PyContext {
    pub(super) fn all_to_all_v_impl(
        &self,
        py: Python<'_>,
        input: PyRef<'_, PySymmetric>,
        send_counts: PyRef<'_, PySymmetric>,
        output: PyRef<'_, PySymmetric>,
        recv_counts: PyRef<'_, PySymmetric>,
        order: CallOrder,
    ) -> PyResult<()> {
        let what = "all_to_all_v";
        let (i, o, dtype) = self.pair(what, &input, &output)?;
        let (sc, rc, counts) = self.pair(what, &send_counts, &recv_counts)?;
        if counts != DType::U64 {
            return Err(usage(format!(
                "{what}: the counts must be uint64 buffers, got {counts}"
            )));
        }
        let all = [&input, &send_counts, &output, &recv_counts];
        let devices: Vec<Option<i64>> = all.iter().map(|b| b.torch_device).collect();
        let sync = self.order_after_torch(py, &devices, order)?;
        self.keep(py, sync, &all.map(|b| &**b));
        let rank = Arc::clone(&self.rank);
        py.detach(move || {
            rank.call(move |r| {
                dispatch!(dtype, T => {
                    r.ccl()?;
                    let ccl = made(r)?;
                    let (input, output) = (r.typed::<T>(i)?, r.typed::<T>(o)?);
                    let (sc, rc) = (r.typed::<u64>(sc)?, r.typed::<u64>(rc)?);
                    let launched = ccl::all_to_all_v(ccl, input, sc, output, rc)?;
                    if sync {
                        ccl.synchronize()?;
                        launched.check()?;
                    }
                    Ok(())
                })
            })
        })
        .map_err(to_py)
    }

    pub(super) fn all_reduce_rmsnorm_impl(
        &self,
        py: Python<'_>,
        buffers: [PyRef<'_, PySymmetric>; 4],
        eps: f32,
        algo: AllReduceAlgo,
        order: CallOrder,
    ) -> PyResult<()> {
        let what = "all_reduce_rmsnorm";
        let [input, residual, gamma, output] = &buffers;
        let (i, o, dtype) = self.pair(what, input, output)?;
        let (res, g, other) = self.pair(what, residual, gamma)?;
        if other != dtype || !matches!(dtype, DType::F32 | DType::F16 | DType::BF16) {
            return Err(usage(format!(
                "{what}: input, residual, gamma and output must all be float32, float16 or bfloat16 (got {dtype} and {other})"
            )));
        }
        let devices: Vec<Option<i64>> = buffers.iter().map(|b| b.torch_device).collect();
        let sync = self.order_after_torch(py, &devices, order)?;
        self.keep(py, sync, &buffers.each_ref().map(|b| &**b));
        let rank = Arc::clone(&self.rank);
        py.detach(move || {
            rank.call(move |r| {
                r.ccl()?;
                let ccl = made(r)?;
                dispatch_float!(dtype, "all_reduce_rmsnorm", T => {
                    let (input, output) = (r.typed::<T>(i)?, r.typed::<T>(o)?);
                    let (residual, gamma) = (r.typed::<T>(res)?, r.typed::<T>(g)?);
                    ccl::all_reduce_rmsnorm(ccl, input, residual, gamma, eps, output, algo)
                })?;
                settle(ccl, sync)
            })
        })
        .map_err(to_py)
    }
}

/// The communicator after `Rank::ccl` made it, borrowed shared beside the buffers.
pub(super) fn made<'r, 'a>(r: &'r crate::rank::Rank<'a>) -> iris::Result<&'r iris::ccl::Ccl<'a>> {
    r.ccl_if_made()
        .ok_or_else(|| iris::Error::InvalidConfig("the communicator could not be created".into()))
}

/// The end of a collective call: waits for the rank's work (and so reports a peer that
/// never arrived) when the call is synchronous.
pub(super) fn settle(ccl: &iris::ccl::Ccl<'_>, sync: bool) -> iris::Result<()> {
    if sync {
        ccl.synchronize()
    } else {
        Ok(())
    }
}

/// The all-reduce algorithm named `algo` (`one_shot`, `two_shot`, `auto`), or a usage error
/// naming `what`.
pub(super) fn all_reduce_algo(what: &str, algo: &str) -> PyResult<AllReduceAlgo> {
    match algo {
        "auto" => Ok(AllReduceAlgo::Auto),
        "one_shot" | "oneshot" => Ok(AllReduceAlgo::OneShot),
        "two_shot" | "twoshot" => Ok(AllReduceAlgo::TwoShot),
        other => Err(usage(format!(
            "{what}: algo must be one_shot, two_shot or auto, got {other:?}"
        ))),
    }
}

/// The reduction named `op` (`sum`, `min`, `max`), or a usage error naming `what`.
fn reduce_op(what: &str, op: &str) -> PyResult<ReduceOp> {
    match op {
        "sum" => Ok(ReduceOp::Sum),
        "min" => Ok(ReduceOp::Min),
        "max" => Ok(ReduceOp::Max),
        other => Err(usage(format!(
            "{what}: op must be sum, min or max, got {other:?}"
        ))),
    }
}
