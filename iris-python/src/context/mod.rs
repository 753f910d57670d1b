//! `iris_rs.Context`: this process's rank, its symmetric memory, and launches.

mod collectives;
mod fused;
mod memory;
mod put;

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use iris::ccl::{self, AllGatherAlgo, AllReduceAlgo, ReduceOp};
use iris::{BackendKind, DevicePtr, LaunchConfig, ProviderKind, StreamRef, World};
use pyo3::prelude::*;

use crate::buffer::{from_bytes, provider_name, PySymmetric};
use crate::dtype::{dispatch, DType, Element, SUPPORTED};
use crate::error::{to_py, usage};
use crate::rank::RankThread;
use crate::tensor::{check_place, describe, type_name, Operand};

/// How a call is ordered with PyTorch's work: its `sync=` and `on_torch_stream=`.
#[derive(Clone, Copy, Debug)]
pub(super) struct CallOrder {
    /// Whether to wait for the call's work (`None`: the default for where it runs).
    pub sync: Option<bool>,
    /// Run on PyTorch's current stream even for iris buffers only.
    pub on_torch_stream: bool,
}

/// The context of this process's rank.
///
/// `Context()` reads the rank and world size from the launcher's environment (torchrun's
/// RANK / WORLD_SIZE / LOCAL_RANK, `iris-run`, Open MPI, Slurm); a process started
/// without a launcher is a world of one rank. Creating it is collective: every rank's
/// process creates one, and the call returns once all have met. The backend is
/// `backend`, else `IRIS_BACKEND`, else the first present of cuda, hip, cpu; the rank runs
/// on device `LOCAL_RANK % devices`.
///
/// A call that touches PyTorch memory on the rank's GPU runs on PyTorch's current stream
/// of that device (`torch.cuda.current_stream()`), ordered with PyTorch's work like a
/// torch op, and returns without waiting (`sync=False` by default). Other calls (iris
/// buffers only, or the CPU backend) run on iris's own stream: PyTorch's current stream
/// is synchronized first, and the call returns once its work finished (`sync=True` by
/// default). Pass `sync=` to choose; `torch_stream=False` keeps every call on iris's
/// stream (the earlier behaviour).
#[pyclass(module = "iris_rs", name = "Context", frozen)]
pub struct PyContext {
    rank: Arc<RankThread>,
    provider: ProviderKind,
    /// Python objects whose memory queued work still uses (`sync=False`), released by
    /// `synchronize`.
    pending: Mutex<Vec<Py<PyAny>>>,
    /// Whether calls on PyTorch memory run on PyTorch's current stream.
    torch_stream: bool,
    /// The PyTorch stream the rank queues on now (kept alive while lent) and its handle.
    lent: Mutex<Option<(usize, Py<PyAny>)>>,
}

#[pymethods]
impl PyContext {
    /// Joins the world. `provider`: where `zeros` / `from_bytes` allocate (`heap`: one
    /// symmetric heap per rank, `ipc`: each allocation exported on its own);
    /// `heap_bytes`: each rank's heap (every rank the same); `timeout`: seconds every wait
    /// is bounded by (default `IRIS_TIMEOUT` or 60).
    #[new]
    #[pyo3(signature = (provider = "heap", heap_bytes = None, backend = None, timeout = None, torch_stream = true))]
    fn new(
        py: Python<'_>,
        provider: &str,
        heap_bytes: Option<usize>,
        backend: Option<&str>,
        timeout: Option<f64>,
        torch_stream: bool,
    ) -> PyResult<Self> {
        let provider = parse_provider(provider)?;
        let mut world = World::from_env_or_threads(1)
            .map_err(to_py)?
            .provider(provider);
        if let Some(bytes) = heap_bytes {
            world = world.heap_bytes(bytes);
        }
        if let Some(name) = backend {
            world = world.backend(BackendKind::from_name(name).map_err(to_py)?);
        }
        if let Some(seconds) = timeout {
            if !(seconds.is_finite() && seconds > 0.0) {
                return Err(usage(format!(
                    "timeout must be a positive number of seconds, got {seconds}"
                )));
            }
            world = world.timeout(Duration::from_secs_f64(seconds));
        }
        let rank = py.detach(move || RankThread::start(world)).map_err(to_py)?;
        Ok(Self {
            rank: Arc::new(rank),
            provider,
            pending: Mutex::new(Vec::new()),
            torch_stream,
            lent: Mutex::new(None),
        })
    }

    /// This rank.
    #[getter]
    fn rank(&self) -> usize {
        self.rank.info.rank
    }

    /// Ranks in the world.
    #[getter]
    fn world_size(&self) -> usize {
        self.rank.info.world_size
    }

    /// `cuda`, `hip` or `cpu`.
    #[getter]
    fn backend(&self) -> &'static str {
        self.rank.info.backend.name()
    }

    /// The device's ordinal within the backend.
    #[getter]
    fn device(&self) -> usize {
        self.rank.info.device
    }

    /// The device's name.
    #[getter]
    fn device_name(&self) -> String {
        self.rank.info.device_name.clone()
    }

    /// The device's code-object target (`sm_90`, `gfx942`, the host triple).
    #[getter]
    fn target(&self) -> String {
        self.rank.info.target.clone()
    }

    /// Whether the ranks are processes (one in this process).
    #[getter]
    fn is_process_world(&self) -> bool {
        self.rank.info.processes
    }

    /// Bytes of this rank's symmetric heap.
    #[getter]
    fn heap_bytes(&self) -> usize {
        self.rank.info.heap_bytes
    }

    /// The provider `zeros` and `from_bytes` use unless told otherwise.
    #[getter]
    fn provider(&self) -> &'static str {
        provider_name(self.provider)
    }

    /// Whether `close` was called.
    #[getter]
    fn closed(&self) -> bool {
        self.rank.is_closed()
    }

    /// A zeroed symmetric allocation of `numel` elements (collective: every rank, same
    /// order, same size and type).
    #[pyo3(signature = (numel, dtype = "float32", provider = None))]
    fn zeros(
        &self,
        py: Python<'_>,
        numel: usize,
        dtype: &str,
        provider: Option<&str>,
    ) -> PyResult<PySymmetric> {
        self.zeros_impl(py, numel, dtype, provider)
    }

    /// A symmetric allocation whose copy on this rank holds `data` (bytes of
    /// `dtype` elements; collective, like `zeros`).
    #[pyo3(name = "from_bytes", signature = (data, dtype = "float32", provider = None))]
    fn symmetric_from_bytes(
        &self,
        py: Python<'_>,
        data: Vec<u8>,
        dtype: &str,
        provider: Option<&str>,
    ) -> PyResult<PySymmetric> {
        self.symmetric_from_bytes_impl(py, data, dtype, provider)
    }

    /// Adopts a PyTorch symmetric tensor: `handle` is what
    /// `torch.distributed._symmetric_memory.rendezvous(tensor, group)` returned for it
    /// (its `buffer_ptrs`, `rank`, `world_size`, `buffer_size`). Local: nothing is
    /// exchanged. Refused: no handle, a handle of another allocation or group, a tensor
    /// that is not contiguous, of an unsupported dtype, or on another device. The buffer
    /// keeps the tensor and the handle alive; freeing it releases only its table.
    #[pyo3(signature = (tensor, handle = None))]
    fn adopt(
        &self,
        py: Python<'_>,
        tensor: Bound<'_, PyAny>,
        handle: Option<Bound<'_, PyAny>>,
    ) -> PyResult<PySymmetric> {
        self.adopt_impl(py, tensor, handle)
    }

    /// All-gather (iris.ccl): every rank's `input` (n elements), in rank order, into every
    /// rank's `output` (world_size * n). Both symmetric buffers of this context, same
    /// dtype; `algo` is `push` (remote stores) or `pull` (remote loads). Collective.
    #[pyo3(signature = (input, output, algo = "push", sync = None, on_torch_stream = false))]
    fn all_gather(
        &self,
        py: Python<'_>,
        input: PyRef<'_, PySymmetric>,
        output: PyRef<'_, PySymmetric>,
        algo: &str,
        sync: Option<bool>,
        on_torch_stream: bool,
    ) -> PyResult<()> {
        self.all_gather_impl(
            py,
            input,
            output,
            algo,
            CallOrder {
                sync,
                on_torch_stream,
            },
        )
    }

    /// All-reduce (iris.ccl): the element-wise `op` (`sum`, `min`, `max`) of every rank's
    /// `input` into every rank's `output` (same length, same dtype, two symmetric buffers
    /// of this context). `algo`: `one_shot` (small messages), `two_shot` (large) or `auto`
    /// (measured on the first call of each size, then cached on disk; not inside a CUDA
    /// graph capture: call it once before capturing).
    /// Collective; bit-identical on every rank.
    #[pyo3(signature = (input, output, op = "sum", algo = "one_shot", sync = None, on_torch_stream = false))]
    #[allow(clippy::too_many_arguments)] // the Python method's keyword arguments
    fn all_reduce(
        &self,
        py: Python<'_>,
        input: PyRef<'_, PySymmetric>,
        output: PyRef<'_, PySymmetric>,
        op: &str,
        algo: &str,
        sync: Option<bool>,
        on_torch_stream: bool,
    ) -> PyResult<()> {
        self.all_reduce_impl(
            py,
            input,
            output,
            op,
            algo,
            CallOrder {
                sync,
                on_torch_stream,
            },
        )
    }

    /// Reduce-scatter (iris.ccl): `input` is `world` chunks of `output`'s length; chunk
    /// `r` of every rank's input, combined with `op` (`sum`, `min`, `max`) in rank order,
    /// lands in rank `r`'s `output`. Collective.
    #[pyo3(signature = (input, output, op = "sum", sync = None, on_torch_stream = false))]
    fn reduce_scatter(
        &self,
        py: Python<'_>,
        input: PyRef<'_, PySymmetric>,
        output: PyRef<'_, PySymmetric>,
        op: &str,
        sync: Option<bool>,
        on_torch_stream: bool,
    ) -> PyResult<()> {
        let order = CallOrder {
            sync,
            on_torch_stream,
        };
        self.reduce_scatter_impl(py, input, output, op, order)
    }

    /// Broadcast (iris.ccl): rank `root`'s `input` into every rank's `output` (same
    /// length and dtype). Collective.
    #[pyo3(signature = (input, output, root = 0, sync = None, on_torch_stream = false))]
    fn broadcast(
        &self,
        py: Python<'_>,
        input: PyRef<'_, PySymmetric>,
        output: PyRef<'_, PySymmetric>,
        root: usize,
        sync: Option<bool>,
        on_torch_stream: bool,
    ) -> PyResult<()> {
        let order = CallOrder {
            sync,
            on_torch_stream,
        };
        self.broadcast_impl(py, input, output, root, order)
    }

    /// All-to-all with counts on the device (iris.ccl): this rank sends `send_counts[p]`
    /// elements to each rank `p` (`input` holds them peer after peer) and receives each
    /// rank's into `output`, source after source; `recv_counts[s]` is set to what rank `s`
    /// sent. The counts (uint64 symmetric buffers of `world_size` elements) are read on the
    /// device, so an earlier kernel or torch op may write them. With `sync=True` a count
    /// that reached past a buffer raises IrisError (only what fit moved); without, nothing
    /// reports it. Collective.
    #[pyo3(signature = (input, send_counts, output, recv_counts, sync = None, on_torch_stream = false))]
    #[allow(clippy::too_many_arguments)] // the Python method's keyword arguments
    fn all_to_all_v(
        &self,
        py: Python<'_>,
        input: PyRef<'_, PySymmetric>,
        send_counts: PyRef<'_, PySymmetric>,
        output: PyRef<'_, PySymmetric>,
        recv_counts: PyRef<'_, PySymmetric>,
        sync: Option<bool>,
        on_torch_stream: bool,
    ) -> PyResult<()> {
        let order = CallOrder {
            sync,
            on_torch_stream,
        };
        self.all_to_all_v_impl(py, input, send_counts, output, recv_counts, order)
    }

    /// All-reduce fused with the residual add and RMSNorm (iris.ccl): per row of
    /// `gamma.numel` elements, `residual` becomes every rank's `input` summed in rank
    /// order plus `residual`, and `output` that row's RMSNorm times `gamma` (float32,
    /// float16 or bfloat16, all four of one dtype; `gamma` read from this rank's copy).
    /// `algo`: `one_shot` or `two_shot` (every rank's residual the same). Collective.
    #[pyo3(signature = (input, residual, gamma, output, eps = 1e-6, algo = "one_shot", sync = None, on_torch_stream = false))]
    #[allow(clippy::too_many_arguments)] // the Python method's keyword arguments
    fn all_reduce_rmsnorm(
        &self,
        py: Python<'_>,
        input: PyRef<'_, PySymmetric>,
        residual: PyRef<'_, PySymmetric>,
        gamma: PyRef<'_, PySymmetric>,
        output: PyRef<'_, PySymmetric>,
        eps: f32,
        algo: &str,
        sync: Option<bool>,
        on_torch_stream: bool,
    ) -> PyResult<()> {
        let order = CallOrder {
            sync,
            on_torch_stream,
        };
        let algo = collectives::all_reduce_algo("all_reduce_rmsnorm", algo)?;
        self.all_reduce_rmsnorm_impl(py, [input, residual, gamma, output], eps, algo, order)
    }

    /// Stores `src` (a symmetric buffer, a tensor, or an array: its `numel` elements,
    /// read through its raw address) into rank `peer`'s copy of `dst`, from element
    /// `offset` on: the extension's own kernel, which translates each address through
    /// `dst`'s table, then stores. Not collective; pair it with `barrier()` before peers
    /// read what was stored.
    #[pyo3(signature = (src, dst, peer, offset = 0, sync = None, on_torch_stream = false))]
    #[allow(clippy::too_many_arguments)] // the Python method's keyword arguments
    fn put(
        &self,
        py: Python<'_>,
        src: Bound<'_, PyAny>,
        dst: PyRef<'_, PySymmetric>,
        peer: usize,
        offset: usize,
        sync: Option<bool>,
        on_torch_stream: bool,
    ) -> PyResult<()> {
        self.put_impl(
            py,
            src,
            dst,
            peer,
            offset,
            CallOrder {
                sync,
                on_torch_stream,
            },
        )
    }

    /// Waits until every rank's work queued before it finished (collective).
    fn barrier(&self, py: Python<'_>) -> PyResult<()> {
        let rank = Arc::clone(&self.rank);
        let result = py
            .detach(move || rank.call(|r| r.iris.barrier()))
            .map_err(to_py);
        self.release_pending();
        result
    }

    /// Waits for this rank's queued work, and reports a collective whose barrier gave up
    /// on a peer.
    fn synchronize(&self, py: Python<'_>) -> PyResult<()> {
        let rank = Arc::clone(&self.rank);
        let result = py
            .detach(move || {
                rank.call(|r| match r.ccl_if_made() {
                    Some(ccl) => ccl.synchronize(),
                    None => r.iris.synchronize(),
                })
            })
            .map_err(to_py);
        self.release_pending();
        result
    }

    /// Frees every buffer of the context, leaves the world and ends the rank's thread.
    /// Idempotent; later calls raise IrisError.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        let rank = Arc::clone(&self.rank);
        let result = py.detach(move || rank.close()).map_err(to_py);
        self.release_pending();
        result
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: Bound<'_, pyo3::types::PyTuple>) -> PyResult<bool> {
        self.close(py)?;
        Ok(false)
    }

    fn __repr__(&self) -> String {
        let i = &self.rank.info;
        format!(
            "Context(rank={}, world_size={}, backend={}, device={} ({}), provider={})",
            i.rank,
            i.world_size,
            i.backend.name(),
            i.device,
            i.device_name,
            provider_name(self.provider)
        )
    }
}

impl PyContext {
    /// Checks that `buffer` is a live buffer of this context.
    fn own(&self, what: &str, buffer: &PySymmetric) -> PyResult<()> {
        buffer.check_live(what)?;
        if !buffer.same_context(&self.rank) {
            return Err(usage(format!(
                "{what}: the symmetric buffer belongs to another Context"
            )));
        }
        Ok(())
    }

    /// The ids and the common dtype of a collective's two buffers.
    fn pair(
        &self,
        what: &str,
        input: &PySymmetric,
        output: &PySymmetric,
    ) -> PyResult<(u64, u64, DType)> {
        self.own(&format!("{what}: input"), input)?;
        self.own(&format!("{what}: output"), output)?;
        if input.dtype != output.dtype {
            return Err(usage(format!(
                "{what}: input holds {} but output holds {}",
                input.dtype, output.dtype
            )));
        }
        if input.id == output.id {
            return Err(usage(format!(
                "{what}: input and output are the same buffer; pass two"
            )));
        }
        Ok((input.id, output.id, input.dtype))
    }

    /// Waits for PyTorch's current stream on each device in `devices` (the producers of
    /// adopted or passed tensors): iris's runtime launches on its own stream and cannot
    /// wait on another's.
    fn sync_torch(&self, py: Python<'_>, devices: &[Option<i64>]) -> PyResult<()> {
        let mut done: Vec<i64> = Vec::new();
        for device in devices.iter().flatten() {
            if done.contains(device) {
                continue;
            }
            done.push(*device);
            let torch = py.import("torch")?;
            torch
                .getattr("cuda")?
                .call_method1("current_stream", (*device,))?
                .call_method0("synchronize")?;
        }
        Ok(())
    }

    /// Orders a call's work after PyTorch's and says whether the call should wait for its
    /// own work (`sync`, else the default): on the rank's GPU with a PyTorch tensor among
    /// `devices` (or `on_torch_stream`: iris buffers that PyTorch reads and writes through
    /// tensor views), by queuing on PyTorch's current stream of that device (then no wait
    /// by default); otherwise by waiting for PyTorch's current streams (then a wait by
    /// default).
    fn order_after_torch(
        &self,
        py: Python<'_>,
        devices: &[Option<i64>],
        order: CallOrder,
    ) -> PyResult<bool> {
        let CallOrder {
            sync,
            on_torch_stream,
        } = order;
        let info = &self.rank.info;
        let on_rank_gpu =
            on_torch_stream || devices.iter().flatten().any(|d| *d as usize == info.device);
        if !self.torch_stream || info.backend == BackendKind::Cpu || !on_rank_gpu {
            if info.backend != BackendKind::Cpu && torch_captures(py)? {
                return Err(usage(
                    "inside a CUDA graph capture (torch.cuda.graph) a call must run on PyTorch's stream: pass on_torch_stream=True (its buffers are iris's own) and keep torch_stream=True",
                ));
            }
            self.sync_torch(py, devices)?;
            return Ok(sync.unwrap_or(true));
        }
        let raw = torch_raw_stream(py, info.device)?;
        let mut lent = self
            .lent
            .lock()
            .map_err(|_| usage("the context's stream lock is poisoned"))?;
        if lent.as_ref().map(|(r, _)| *r) != Some(raw) {
            let stream = py
                .import("torch")?
                .getattr("cuda")?
                .call_method1("current_stream", (info.device,))?;
            let rank = Arc::clone(&self.rank);
            py.detach(move || {
                rank.call(move |r| {
                    // SAFETY: PyTorch's stream of the rank's device; the context keeps the
                    // Python stream object alive while it is lent (below), and a later
                    // switch first waits for the work queued on it.
                    let stream = unsafe { StreamRef::from_raw(raw as *mut std::ffi::c_void) };
                    r.iris.use_stream(stream)
                })
            })
            .map_err(to_py)?;
            *lent = Some((raw, stream.unbind()));
        }
        Ok(sync.unwrap_or(false))
    }

    /// With `sync=False`, keeps the buffers' owners alive until `synchronize`.
    fn keep(&self, py: Python<'_>, sync: bool, buffers: &[&PySymmetric]) {
        if sync {
            return;
        }
        if let Ok(mut pending) = self.pending.lock() {
            for owner in buffers.iter().filter_map(|b| b.owner.as_ref()) {
                // Once each: a loop of calls without `synchronize` must not grow the list.
                if !pending.iter().any(|p| p.as_ptr() == owner.as_ptr()) {
                    pending.push(owner.clone_ref(py));
                }
            }
        }
    }

    fn release_pending(&self) {
        if let Ok(mut pending) = self.pending.lock() {
            pending.clear();
        }
    }
}

/// The handle of PyTorch's current stream of `device`: `torch._C._cuda_getCurrentRawStream`
/// (an integer, no Python stream object made: this runs on every call), else
/// `torch.cuda.current_stream(device).cuda_stream`.
fn torch_raw_stream(py: Python<'_>, device: usize) -> PyResult<usize> {
    static RAW_STREAM: OnceLock<Option<Py<PyAny>>> = OnceLock::new();
    let getter = RAW_STREAM.get_or_init(|| {
        py.import("torch")
            .and_then(|t| t.getattr("_C"))
            .and_then(|c| c.getattr("_cuda_getCurrentRawStream"))
            .ok()
            .map(Bound::unbind)
    });
    match getter {
        Some(f) => f.bind(py).call1((device,))?.extract(),
        None => py
            .import("torch")?
            .getattr("cuda")?
            .call_method1("current_stream", (device,))?
            .getattr("cuda_stream")?
            .extract(),
    }
}

/// Whether PyTorch's current stream captures a CUDA graph (`false` when PyTorch is not
/// imported: nothing else starts a capture from Python).
fn torch_captures(py: Python<'_>) -> PyResult<bool> {
    let modules = py.import("sys")?.getattr("modules")?;
    if !modules.contains("torch")? {
        return Ok(false);
    }
    py.import("torch")?
        .getattr("cuda")?
        .call_method0("is_current_stream_capturing")?
        .extract()
}

/// The device PyTorch produces `op` on, when it is a PyTorch GPU tensor.
fn torch_device(op: &Operand) -> Option<i64> {
    match op.place {
        crate::tensor::Place::Gpu(index) if op.torch => Some(index.unwrap_or(0)),
        _ => None,
    }
}

fn parse_dtype(name: &str) -> PyResult<DType> {
    DType::from_name(name).ok_or_else(|| {
        usage(format!(
            "dtype {name:?} is not supported (supported: {SUPPORTED})"
        ))
    })
}

fn parse_provider(name: &str) -> PyResult<ProviderKind> {
    match name.trim().to_ascii_lowercase().as_str() {
        "heap" => Ok(ProviderKind::Heap),
        "ipc" => Ok(ProviderKind::Ipc),
        "shmem" => Ok(ProviderKind::Shmem),
        "external" => Err(usage(
            "provider \"external\" allocates nothing: adopt memory another system allocated with Context.adopt(tensor, handle)",
        )),
        other => Err(usage(format!(
            "provider must be \"heap\", \"ipc\" or \"shmem\", got {other:?}"
        ))),
    }
}
