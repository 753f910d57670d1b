//! The collectives of `iris.ccl` through a context: `all_gather`, `all_reduce`,
//! `reduce_scatter`, `broadcast`, each checked here and run by one [`PyContext::collective`].

use super::*;

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
            "push" => AllGatherAlgo::Push,
            "pull" => AllGatherAlgo::Pull,
            other => {
                return Err(usage(format!(
                    "all_gather: algo must be push or pull, got {other:?}"
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
        let algo = match algo {
            "one_shot" | "oneshot" => AllReduceAlgo::OneShot,
            "two_shot" | "twoshot" => AllReduceAlgo::TwoShot,
            other => {
                return Err(usage(format!(
                    "all_reduce: algo must be one_shot or two_shot, got {other:?}"
                )))
            }
        };
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
                    if sync { ccl.synchronize() } else { Ok(()) }
                })
            })
        })
        .map_err(to_py)
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
