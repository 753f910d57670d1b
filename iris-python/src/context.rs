//! `iris_rs.Context`: this process's rank, its symmetric memory, and launches.

use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use iris::ccl::{self, AllGatherAlgo, AllReduceAlgo, ReduceOp};
use iris::{BackendKind, DevicePtr, LaunchConfig, ProviderKind, World};
use pyo3::prelude::*;

use crate::buffer::{from_bytes, provider_name, PySymmetric};
use crate::dtype::{dispatch, DType, Element, SUPPORTED};
use crate::error::{to_py, usage};
use crate::rank::RankThread;
use crate::tensor::{check_place, describe, type_name, Operand};

/// The context of this process's rank.
///
/// `Context()` reads the rank and world size from the launcher's environment (torchrun's
/// RANK / WORLD_SIZE / LOCAL_RANK, `iris-run`, Open MPI, Slurm); a process started
/// without a launcher is a world of one rank. Creating it is collective: every rank's
/// process creates one, and the call returns once all have met. The backend is
/// `backend`, else `IRIS_BACKEND`, else the first present of cuda, hip, cpu; the rank runs
/// on device `LOCAL_RANK % devices`.
///
/// Launches run on iris's own stream of the rank. Before a launch that touches PyTorch
/// memory, PyTorch's current stream is synchronized; with `sync=True` (the default) the
/// call returns once its work finished, so PyTorch may use the results at once.
#[pyclass(module = "iris_rs", name = "Context", frozen)]
pub struct PyContext {
    rank: Arc<RankThread>,
    provider: ProviderKind,
    /// Python objects whose memory queued work still uses (`sync=False`), released by
    /// `synchronize`.
    pending: Mutex<Vec<Py<PyAny>>>,
}

#[pymethods]
impl PyContext {
    /// Joins the world. `provider`: where `zeros` / `from_bytes` allocate (`heap`: one
    /// symmetric heap per rank, `ipc`: each allocation exported on its own);
    /// `heap_bytes`: each rank's heap (every rank the same); `timeout`: seconds every wait
    /// is bounded by (default `IRIS_TIMEOUT` or 60).
    #[new]
    #[pyo3(signature = (provider = "heap", heap_bytes = None, backend = None, timeout = None))]
    fn new(
        py: Python<'_>,
        provider: &str,
        heap_bytes: Option<usize>,
        backend: Option<&str>,
        timeout: Option<f64>,
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
        let dtype = parse_dtype(dtype)?;
        let provider = provider.map_or(Ok(self.provider), parse_provider)?;
        self.allocate(py, dtype, provider, numel, None)
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
        let dtype = parse_dtype(dtype)?;
        let provider = provider.map_or(Ok(self.provider), parse_provider)?;
        if data.len() % dtype.size() != 0 {
            return Err(usage(format!(
                "from_bytes: {} bytes are not a whole number of {dtype} elements",
                data.len()
            )));
        }
        self.allocate(py, dtype, provider, data.len() / dtype.size(), Some(data))
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
        let info = &self.rank.info;
        let op = describe(&tensor, "adopt: the tensor")?;
        check_place(info, &op, "adopt: the tensor")?;
        let handle = match handle {
            Some(h) if !h.is_none() => h,
            _ => {
                return Err(usage(
                    "adopt: the tensor was not rendezvoused: pass the handle that torch.distributed._symmetric_memory.rendezvous(tensor, group) returned (a tensor from symm_mem.empty, rendezvoused by every rank)",
                ))
            }
        };
        if !handle.hasattr("buffer_ptrs")? {
            return Err(usage(format!(
                "adopt: the handle ({}) is not a symmetric-memory handle: it has no buffer_ptrs",
                type_name(&handle)
            )));
        }
        let ptrs: Vec<u64> = handle.getattr("buffer_ptrs")?.extract()?;
        let h_rank: usize = handle.getattr("rank")?.extract()?;
        let h_world: usize = handle.getattr("world_size")?.extract()?;
        let buffer_size: Option<usize> = match handle.getattr("buffer_size") {
            Ok(v) => v.extract()?,
            Err(_) => None,
        };
        let peers = peer_table(info, &op, &ptrs, h_rank, h_world, buffer_size)?;
        let torch_device = torch_device(&op);
        let owner = (tensor.clone(), handle.clone())
            .into_pyobject(py)?
            .into_any()
            .unbind();
        let (local, numel, dtype) = (op.ptr, op.numel, op.dtype);
        let table = peers.clone();
        let rank = Arc::clone(&self.rank);
        let id = py
            .detach(move || {
                rank.call(move |r| {
                    dispatch!(dtype, T => {
                        // SAFETY: every entry is rank r's copy of the tensor's elements in
                        // one allocation that PyTorch rendezvoused (checked against the
                        // handle above); the returned buffer keeps the tensor and the
                        // handle alive, and freeing it waits for the rank's work.
                        let buffer = unsafe { r.iris.adopt_external::<T>(local, &table, numel)? };
                        Ok(r.insert(T::wrap(buffer)))
                    })
                })
            })
            .map_err(to_py)?;
        Ok(PySymmetric {
            rank: Arc::clone(&self.rank),
            id,
            dtype,
            numel,
            ptr: local,
            peers,
            provider: ProviderKind::External,
            torch_device,
            owner: Some(owner),
            freed: AtomicBool::new(false),
        })
    }

    /// All-gather (iris.ccl): every rank's `input` (n elements), in rank order, into every
    /// rank's `output` (world_size * n). Both symmetric buffers of this context, same
    /// dtype; `algo` is `push` (remote stores) or `pull` (remote loads). Collective.
    #[pyo3(signature = (input, output, algo = "push", sync = true))]
    fn all_gather(
        &self,
        py: Python<'_>,
        input: PyRef<'_, PySymmetric>,
        output: PyRef<'_, PySymmetric>,
        algo: &str,
        sync: bool,
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
        self.sync_torch(py, &[input.torch_device, output.torch_device])?;
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

    /// All-reduce (iris.ccl): the element-wise `op` (`sum`, `min`, `max`) of every rank's
    /// `input` into every rank's `output` (same length, same dtype, two symmetric buffers
    /// of this context). `algo`: `one_shot` (small messages) or `two_shot` (large).
    /// Collective; bit-identical on every rank.
    #[pyo3(signature = (input, output, op = "sum", algo = "one_shot", sync = true))]
    fn all_reduce(
        &self,
        py: Python<'_>,
        input: PyRef<'_, PySymmetric>,
        output: PyRef<'_, PySymmetric>,
        op: &str,
        algo: &str,
        sync: bool,
    ) -> PyResult<()> {
        let op = match op {
            "sum" => ReduceOp::Sum,
            "min" => ReduceOp::Min,
            "max" => ReduceOp::Max,
            other => {
                return Err(usage(format!(
                    "all_reduce: op must be sum, min or max, got {other:?}"
                )))
            }
        };
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
        self.sync_torch(py, &[input.torch_device, output.torch_device])?;
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

    /// Stores `src` (a symmetric buffer, a tensor, or an array: its `numel` elements,
    /// read through its raw address) into rank `peer`'s copy of `dst`, from element
    /// `offset` on: the extension's own kernel, which translates each address through
    /// `dst`'s table, then stores. Not collective; pair it with `barrier()` before peers
    /// read what was stored.
    #[pyo3(signature = (src, dst, peer, offset = 0, sync = true))]
    fn put(
        &self,
        py: Python<'_>,
        src: Bound<'_, PyAny>,
        dst: PyRef<'_, PySymmetric>,
        peer: usize,
        offset: usize,
        sync: bool,
    ) -> PyResult<()> {
        let info = &self.rank.info;
        self.own("put: dst", &dst)?;
        let (src_op, src_torch) = match src.cast::<PySymmetric>() {
            Ok(buffer) => {
                let b = buffer.get();
                self.own("put: src", b)?;
                let op = Operand {
                    ptr: b.ptr,
                    numel: b.numel,
                    dtype: b.dtype,
                    place: crate::tensor::Place::Gpu(None),
                    torch: false,
                };
                (op, b.torch_device)
            }
            Err(_) => {
                let op = describe(&src, "put: src")?;
                check_place(info, &op, "put: src")?;
                let device = torch_device(&op);
                (op, device)
            }
        };
        if src_op.dtype != dst.dtype {
            return Err(usage(format!(
                "put: src holds {} but dst holds {}",
                src_op.dtype, dst.dtype
            )));
        }
        if peer >= info.world_size {
            return Err(usage(format!(
                "put: peer {peer} is not a rank of this world of {}",
                info.world_size
            )));
        }
        let end = offset.checked_add(src_op.numel);
        if end.is_none_or(|e| e > dst.numel) {
            return Err(usage(format!(
                "put: {} elements from offset {offset} do not fit in dst's {}",
                src_op.numel, dst.numel
            )));
        }
        if src_op.numel > 0 && src_op.ptr == 0 {
            return Err(usage("put: src has a null address"));
        }
        self.sync_torch(py, &[src_torch, dst.torch_device])?;
        // The source object stays alive until the kernel finished: the call waits for it,
        // or `synchronize` releases it.
        let src_obj = src.clone().unbind();
        if !sync {
            if let Ok(mut pending) = self.pending.lock() {
                pending.push(src_obj.clone_ref(py));
            }
        }
        self.keep(py, sync, &[&dst]);
        let (ptr, n, dtype, id) = (src_op.ptr, src_op.numel as u64, src_op.dtype, dst.id);
        let cpu = info.backend == BackendKind::Cpu;
        let rank = Arc::clone(&self.rank);
        let result = py
            .detach(move || {
                rank.call(move |r| {
                    if n == 0 {
                        return Ok(());
                    }
                    dispatch!(dtype, T => {
                        let dst = r.typed::<T>(id)?;
                        // SAFETY: `ptr` is the first of `n` elements of `T` of a contiguous
                        // array on this rank's device (checked above); its Python object
                        // stays alive until the kernel finished (see above).
                        let src = unsafe { DevicePtr::<T>::from_raw(ptr) };
                        <T as Element>::put(r.iris, launch_shape(n, cpu), src, dst, n, offset as u64, peer as u32)?;
                        if sync { r.iris.synchronize() } else { Ok(()) }
                    })
                })
            })
            .map_err(to_py);
        drop(src_obj);
        result
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
    fn allocate(
        &self,
        py: Python<'_>,
        dtype: DType,
        provider: ProviderKind,
        numel: usize,
        data: Option<Vec<u8>>,
    ) -> PyResult<PySymmetric> {
        let rank = Arc::clone(&self.rank);
        let (id, ptr, peers) = py
            .detach(move || {
                rank.call(move |r| {
                    dispatch!(dtype, T => {
                        let buffer = match &data {
                            Some(bytes) => r.iris.symmetric_from_slice_with::<T>(provider, &from_bytes::<T>(bytes))?,
                            None => r.iris.symmetric_with::<T>(provider, numel)?,
                        };
                        let ptr = buffer.map().base();
                        let peers = (0..r.iris.world_size())
                            .map(|p| buffer.peer_addr(p).unwrap_or(0))
                            .collect::<Vec<u64>>();
                        Ok((r.insert(T::wrap(buffer)), ptr, peers))
                    })
                })
            })
            .map_err(to_py)?;
        Ok(PySymmetric {
            rank: Arc::clone(&self.rank),
            id,
            dtype,
            numel,
            ptr,
            peers,
            provider,
            torch_device: None,
            owner: None,
            freed: AtomicBool::new(false),
        })
    }

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

    /// With `sync=False`, keeps the buffers' owners alive until `synchronize`.
    fn keep(&self, py: Python<'_>, sync: bool, buffers: &[&PySymmetric]) {
        if sync {
            return;
        }
        if let Ok(mut pending) = self.pending.lock() {
            pending.extend(
                buffers
                    .iter()
                    .filter_map(|b| b.owner.as_ref().map(|o| o.clone_ref(py))),
            );
        }
    }

    fn release_pending(&self) {
        if let Ok(mut pending) = self.pending.lock() {
            pending.clear();
        }
    }
}

/// The launch shape of `put` for `n` elements.
fn launch_shape(n: u64, cpu: bool) -> LaunchConfig {
    let threads: u32 = if cpu { 64 } else { 256 };
    let per_block = u64::from(threads) * 4;
    let blocks = n.div_ceil(per_block).clamp(1, if cpu { 1 } else { 1024 });
    LaunchConfig::linear(blocks as u32, threads)
}

/// The device PyTorch produces `op` on, when it is a PyTorch GPU tensor.
fn torch_device(op: &Operand) -> Option<i64> {
    match op.place {
        crate::tensor::Place::Gpu(index) if op.torch => Some(index.unwrap_or(0)),
        _ => None,
    }
}

/// Each rank's copy of the tensor `op`, from its handle's `buffer_ptrs`: the tensor may
/// start past the allocation's base (a view with a storage offset), and so do its copies.
fn peer_table(
    info: &crate::rank::RankInfo,
    op: &Operand,
    ptrs: &[u64],
    h_rank: usize,
    h_world: usize,
    buffer_size: Option<usize>,
) -> PyResult<Vec<u64>> {
    if h_rank != info.rank || h_world != info.world_size {
        return Err(usage(format!(
            "adopt: the handle is rank {h_rank} of a group of {h_world}, this context is rank {} of {}: rendezvous over the whole world (group=dist.group.WORLD)",
            info.rank, info.world_size
        )));
    }
    if ptrs.len() != info.world_size {
        return Err(usage(format!(
            "adopt: the handle has {} buffer_ptrs for a world of {}",
            ptrs.len(),
            info.world_size
        )));
    }
    if op.numel == 0 {
        return Err(usage("adopt: an empty tensor cannot be adopted"));
    }
    let base = ptrs[info.rank];
    let offset = op.ptr.checked_sub(base).filter(|_| base != 0);
    let fits = |offset: u64| match buffer_size {
        Some(size) => offset
            .checked_add(op.bytes() as u64)
            .is_some_and(|end| end <= size as u64),
        None => offset == 0,
    };
    let offset = match offset {
        Some(o) if fits(o) => o,
        _ => {
            return Err(usage(format!(
                "adopt: the tensor was not rendezvoused with this handle: its data_ptr() {:#x} ({} bytes) is not inside the allocation the handle describes (buffer_ptrs[{}] = {base:#x}, {} bytes): pass the handle rendezvous returned for this tensor's allocation",
                op.ptr,
                op.bytes(),
                info.rank,
                buffer_size.map_or("unknown".to_string(), |s| s.to_string())
            )))
        }
    };
    if offset % op.dtype.size() as u64 != 0 {
        return Err(usage(format!(
            "adopt: the tensor starts {offset} bytes into its allocation, not a whole number of {} elements",
            op.dtype
        )));
    }
    Ok(ptrs
        .iter()
        .map(|&p| if p == 0 { 0 } else { p + offset })
        .collect())
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
