//! `iris_rs.SymmetricBuffer`: one rank's handle on a symmetric allocation, allocated by
//! iris (heap or per-allocation IPC) or adopted from another system (a PyTorch symmetric
//! tensor).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use iris::{BackendKind, ProviderKind};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use crate::dtype::{dispatch, DType};
use crate::error::{to_py, usage};
use crate::rank::RankThread;

/// A symmetric allocation of this rank: `numel` elements of `dtype` here, and the same
/// allocation on every other rank, reachable from kernels through its peer table.
///
/// Made by `Context.zeros`, `Context.from_bytes` (iris's heap or IPC provider) or
/// `Context.adopt` (PyTorch symmetric memory). Pass it to the collectives and to
/// `Context.put`. `free()` releases it (an adopted buffer releases only its table);
/// garbage collection does too, but free heap buffers in the same order on every rank.
#[pyclass(module = "iris_rs", name = "SymmetricBuffer", frozen)]
pub struct PySymmetric {
    pub(crate) rank: Arc<RankThread>,
    pub(crate) id: u64,
    pub(crate) dtype: DType,
    pub(crate) numel: usize,
    pub(crate) ptr: u64,
    pub(crate) peers: Vec<u64>,
    pub(crate) provider: ProviderKind,
    /// The device PyTorch's producers of this memory run on (adopted tensors).
    pub(crate) torch_device: Option<i64>,
    /// What the memory belongs to (the adopted tensor and its handle), kept alive.
    pub(crate) owner: Option<Py<PyAny>>,
    pub(crate) freed: AtomicBool,
}

impl PySymmetric {
    /// Whether `free` was called.
    pub(crate) fn check_live(&self, what: &str) -> PyResult<()> {
        if self.freed.load(Ordering::Acquire) {
            return Err(usage(format!("{what}: the symmetric buffer was freed")));
        }
        Ok(())
    }

    /// Whether it belongs to the context of `rank`.
    pub(crate) fn same_context(&self, rank: &Arc<RankThread>) -> bool {
        Arc::ptr_eq(&self.rank, rank)
    }
}

#[pymethods]
impl PySymmetric {
    /// Elements on this rank.
    #[getter]
    fn numel(&self) -> usize {
        self.numel
    }

    /// The element type's name (`float32`, ...).
    #[getter]
    fn dtype(&self) -> &'static str {
        self.dtype.name()
    }

    /// Bytes on this rank.
    #[getter]
    fn nbytes(&self) -> usize {
        self.numel * self.dtype.size()
    }

    /// The address of this rank's copy.
    fn data_ptr(&self) -> u64 {
        self.ptr
    }

    /// Every rank's copy, as mapped in this process (0: unreachable).
    #[getter]
    fn peer_ptrs(&self) -> Vec<u64> {
        self.peers.clone()
    }

    /// `heap`, `ipc` or `external`.
    #[getter]
    fn provider(&self) -> &'static str {
        provider_name(self.provider)
    }

    /// Whether `free` was called.
    #[getter]
    fn freed(&self) -> bool {
        self.freed.load(Ordering::Acquire)
    }

    /// The object whose memory this buffer adopted (a tensor), or None.
    #[getter]
    fn adopted(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.owner.as_ref().map(|o| {
            o.bind(py)
                .get_item(0)
                .map(|t| t.unbind())
                .unwrap_or_else(|_| o.clone_ref(py))
        })
    }

    /// This rank's copy, as bytes (waits for queued work).
    fn read<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        self.check_live("read")?;
        let (id, dtype) = (self.id, self.dtype);
        let rank = Arc::clone(&self.rank);
        let bytes = py
            .detach(move || {
                rank.call(move |r| {
                    dispatch!(dtype, T => {
                        let values = r.typed::<T>(id)?.to_vec()?;
                        Ok(to_bytes(&values))
                    })
                })
            })
            .map_err(to_py)?;
        Ok(PyBytes::new(py, &bytes))
    }

    /// Overwrites this rank's copy with `data` (bytes of exactly `nbytes`).
    fn write(&self, py: Python<'_>, data: Vec<u8>) -> PyResult<()> {
        self.check_live("write")?;
        if data.len() != self.nbytes() {
            return Err(usage(format!(
                "write: got {} bytes for a buffer of {} bytes ({} x {})",
                data.len(),
                self.nbytes(),
                self.numel,
                self.dtype
            )));
        }
        let (id, dtype) = (self.id, self.dtype);
        let rank = Arc::clone(&self.rank);
        py.detach(move || {
            rank.call(move |r| {
                dispatch!(dtype, T => {
                    let values = from_bytes::<T>(&data);
                    r.typed::<T>(id)?.copy_from_slice(&values)?;
                    r.iris.synchronize()
                })
            })
        })
        .map_err(to_py)
    }

    /// Releases the buffer (an adopted one: its table only). Idempotent.
    fn free(&self, py: Python<'_>) -> PyResult<()> {
        if self.freed.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        let id = self.id;
        let rank = Arc::clone(&self.rank);
        py.detach(move || rank.call(move |r| r.free(id)))
            .map_err(to_py)
    }

    /// A zero-copy view for NumPy (`numpy.asarray(buf)`) on the cpu backend.
    #[getter]
    fn __array_interface__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        if self.rank.info.backend != BackendKind::Cpu {
            return Err(pyo3::exceptions::PyAttributeError::new_err(
                "__array_interface__: the buffer is GPU memory (see __cuda_array_interface__)",
            ));
        }
        self.interface(py, 3)
    }

    /// A zero-copy view for PyTorch or CuPy (`torch.as_tensor(buf, device="cuda")`) on a
    /// GPU backend. No stream: the extension's calls on PyTorch's stream are ordered with
    /// PyTorch's work there, and its other calls finish before they return unless told
    /// otherwise.
    #[getter]
    fn __cuda_array_interface__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        if self.rank.info.backend == BackendKind::Cpu {
            return Err(pyo3::exceptions::PyAttributeError::new_err(
                "__cuda_array_interface__: the buffer is host memory (see __array_interface__)",
            ));
        }
        self.interface(py, 2)
    }

    fn __len__(&self) -> usize {
        self.numel
    }

    fn __repr__(&self) -> String {
        format!(
            "SymmetricBuffer(numel={}, dtype={}, provider={}, rank={}, ptr={:#x}{})",
            self.numel,
            self.dtype,
            provider_name(self.provider),
            self.rank.info.rank,
            self.ptr,
            if self.freed.load(Ordering::Acquire) {
                ", freed"
            } else {
                ""
            }
        )
    }
}

impl PySymmetric {
    fn interface<'py>(&self, py: Python<'py>, version: u32) -> PyResult<Bound<'py, PyDict>> {
        if self.freed.load(Ordering::Acquire) {
            return Err(pyo3::exceptions::PyAttributeError::new_err(
                "the symmetric buffer was freed",
            ));
        }
        let typestr = self.dtype.typestr().ok_or_else(|| {
            pyo3::exceptions::PyAttributeError::new_err(format!(
                "{} has no array-interface type string",
                self.dtype
            ))
        })?;
        let dict = PyDict::new(py);
        dict.set_item("shape", (self.numel,))?;
        dict.set_item("typestr", typestr)?;
        dict.set_item("data", (self.ptr, false))?;
        dict.set_item("strides", py.None())?;
        dict.set_item("version", version)?;
        Ok(dict)
    }
}

impl Drop for PySymmetric {
    fn drop(&mut self) {
        if self.freed.swap(true, Ordering::AcqRel) {
            return;
        }
        let id = self.id;
        // Not waited for: a context already closed freed everything itself.
        let _ = self.rank.send(Box::new(move |r| {
            if let Err(err) = r.free(id) {
                eprintln!("iris_rs: freeing a symmetric buffer: {err}");
            }
        }));
    }
}

/// A provider's name.
pub fn provider_name(kind: ProviderKind) -> &'static str {
    match kind {
        ProviderKind::Heap => "heap",
        ProviderKind::Ipc => "ipc",
        ProviderKind::External => "external",
        ProviderKind::Shmem => "shmem",
    }
}

/// The bytes of `values`.
pub fn to_bytes<T: iris::Pod>(values: &[T]) -> Vec<u8> {
    let len = std::mem::size_of_val(values);
    let mut out = vec![0u8; len];
    // SAFETY: `Pod` values have no padding: all `len` bytes are initialised, and `out`
    // holds `len` bytes.
    unsafe { std::ptr::copy_nonoverlapping(values.as_ptr().cast::<u8>(), out.as_mut_ptr(), len) };
    out
}

/// The values in `bytes` (a whole number of them; a tail is ignored).
pub fn from_bytes<T: iris::Pod>(bytes: &[u8]) -> Vec<T> {
    let count = bytes.len() / std::mem::size_of::<T>().max(1);
    // SAFETY: `Pod` types are valid when all bytes are zero.
    let mut out: Vec<T> = vec![unsafe { std::mem::zeroed() }; count];
    // SAFETY: `out` holds `count * size_of::<T>()` bytes, which `bytes` has; every byte
    // pattern is a valid `Pod` value of the numeric types used here.
    unsafe {
        std::ptr::copy_nonoverlapping(
            bytes.as_ptr(),
            out.as_mut_ptr().cast::<u8>(),
            count * std::mem::size_of::<T>(),
        )
    };
    out
}
