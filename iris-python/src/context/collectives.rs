//! The collectives of `iris.ccl` through a context: `all_gather`, `all_reduce`,
//! `reduce_scatter`, `broadcast`.

use super::*;

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
        let (i, o, dtype) = self.pair("all_gather", &input, &output)?;
        let sync = self.order_after_torch(py, &[input.torch_device, output.torch_device], order)?;
        self.keep(py, sync, &[&input, &output]);
        let rank = Arc::clone(&self.rank);
        py.detach(move || {
            rank.call(move |r| {
                dispatch!(dtype, T => {
                    let (ccl, input, output) = r.collective::<T>(i, o)?;
                    ccl::all_gather(ccl, input, output, algo)?;
                    if sync { ccl.synchronize() } else { Ok(()) }
                })
            })
        })
        .map_err(to_py)
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
        let (i, o, dtype) = self.pair("reduce_scatter", &input, &output)?;
        let sync = self.order_after_torch(py, &[input.torch_device, output.torch_device], order)?;
        self.keep(py, sync, &[&input, &output]);
        let rank = Arc::clone(&self.rank);
        py.detach(move || {
            rank.call(move |r| {
                dispatch!(dtype, T => {
                    let (ccl, input, output) = r.collective::<T>(i, o)?;
                    ccl::reduce_scatter(ccl, input, output, op)?;
                    if sync { ccl.synchronize() } else { Ok(()) }
                })
            })
        })
        .map_err(to_py)
    }

    pub(super) fn broadcast_impl(
        &self,
        py: Python<'_>,
        input: PyRef<'_, PySymmetric>,
        output: PyRef<'_, PySymmetric>,
        root: usize,
        order: CallOrder,
    ) -> PyResult<()> {
        let (i, o, dtype) = self.pair("broadcast", &input, &output)?;
        let sync = self.order_after_torch(py, &[input.torch_device, output.torch_device], order)?;
        self.keep(py, sync, &[&input, &output]);
        let rank = Arc::clone(&self.rank);
        py.detach(move || {
            rank.call(move |r| {
                dispatch!(dtype, T => {
                    let (ccl, input, output) = r.collective::<T>(i, o)?;
                    ccl::broadcast(ccl, input, output, root)?;
                    if sync { ccl.synchronize() } else { Ok(()) }
                })
            })
        })
        .map_err(to_py)
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
        let (i, o, dtype) = self.pair("all_reduce", &input, &output)?;
        let sync = self.order_after_torch(py, &[input.torch_device, output.torch_device], order)?;
        self.keep(py, sync, &[&input, &output]);
        let rank = Arc::clone(&self.rank);
        py.detach(move || {
            rank.call(move |r| {
                dispatch!(dtype, T => {
                    let (ccl, input, output) = r.collective::<T>(i, o)?;
                    ccl::all_reduce(ccl, input, output, op, algo)?;
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
