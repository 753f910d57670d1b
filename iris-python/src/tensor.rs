//! Arrays seen through duck typing: a PyTorch tensor (`data_ptr()`, `numel()`, `dtype`,
//! `device`, `is_contiguous()`), or any object with `__cuda_array_interface__` or
//! `__array_interface__` (CuPy, Numba, NumPy). Nothing links PyTorch or NumPy.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};

use crate::dtype::{DType, SUPPORTED};
use crate::error::usage;
use crate::rank::RankInfo;

/// Where an array's memory is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    /// Host memory.
    Cpu,
    /// GPU memory, on the device of this ordinal when known.
    Gpu(Option<i64>),
}

/// A contiguous array: where its first element is, how many, of what type.
#[derive(Clone, Debug)]
pub struct Operand {
    /// The address of its first element (a tensor's storage offset included).
    pub ptr: u64,
    /// Elements.
    pub numel: usize,
    /// Element type.
    pub dtype: DType,
    /// Where it lives.
    pub place: Place,
    /// Whether it is a PyTorch tensor (whose producers run on PyTorch's streams).
    pub torch: bool,
}

impl Operand {
    /// Bytes.
    pub fn bytes(&self) -> usize {
        self.numel.saturating_mul(self.dtype.size())
    }
}

/// Describes `obj` (called `what` in messages).
pub fn describe(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Operand> {
    if obj.hasattr("data_ptr")? && obj.hasattr("numel")? && obj.hasattr("dtype")? {
        return describe_tensor(obj, what);
    }
    if let Ok(interface) = obj.getattr("__cuda_array_interface__") {
        return describe_interface(&interface, what, Place::Gpu(None));
    }
    if let Ok(interface) = obj.getattr("__array_interface__") {
        return describe_interface(&interface, what, Place::Cpu);
    }
    Err(usage(format!(
        "{what}: expected a tensor (with data_ptr(), numel(), dtype, device) or an array with __cuda_array_interface__ / __array_interface__, got {}",
        type_name(obj)
    )))
}

fn describe_tensor(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Operand> {
    let dtype_name = obj.getattr("dtype")?.str()?.to_string();
    let dtype = DType::from_name(&dtype_name).ok_or_else(|| {
        usage(format!(
            "{what}: dtype {dtype_name} is not supported (supported: {SUPPORTED})"
        ))
    })?;
    if obj.hasattr("is_contiguous")? && !obj.call_method0("is_contiguous")?.is_truthy()? {
        return Err(usage(format!(
            "{what}: the tensor is not contiguous; pass a contiguous tensor (.contiguous() makes a copy, which is not symmetric memory)"
        )));
    }
    let place = match obj.getattr("device") {
        Ok(device) => {
            let kind = device
                .getattr("type")
                .and_then(|t| t.str().map(|s| s.to_string()))
                .unwrap_or_else(|_| device.str().map(|s| s.to_string()).unwrap_or_default());
            match kind.as_str() {
                "cpu" => Place::Cpu,
                "cuda" | "hip" => Place::Gpu(device.getattr("index")?.extract::<Option<i64>>()?),
                other => {
                    return Err(usage(format!(
                        "{what}: tensors on device type `{other}` are not supported (cuda or cpu)"
                    )))
                }
            }
        }
        Err(_) => Place::Gpu(None),
    };
    let ptr = obj.call_method0("data_ptr")?.extract::<u64>()?;
    let numel = obj.call_method0("numel")?.extract::<usize>()?;
    let torch = type_module(obj).starts_with("torch");
    Ok(Operand {
        ptr,
        numel,
        dtype,
        place,
        torch,
    })
}

fn describe_interface(interface: &Bound<'_, PyAny>, what: &str, place: Place) -> PyResult<Operand> {
    let dict = interface
        .cast::<PyDict>()
        .map_err(|_| usage(format!("{what}: its array interface is not a dict")))?;
    let get = |key: &str| -> PyResult<Bound<'_, PyAny>> {
        dict.get_item(key)?
            .ok_or_else(|| usage(format!("{what}: its array interface has no `{key}`")))
    };
    let typestr: String = get("typestr")?.extract()?;
    let dtype = DType::from_typestr(&typestr).ok_or_else(|| {
        usage(format!(
            "{what}: element type `{typestr}` is not supported (supported: {SUPPORTED}, native byte order)"
        ))
    })?;
    let shape: Vec<usize> = get("shape")?.extract()?;
    let numel = shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d));
    let numel = numel.ok_or_else(|| usage(format!("{what}: its shape overflows")))?;
    if let Some(strides) = dict.get_item("strides")? {
        if !strides.is_none() {
            let strides: Vec<isize> = strides.extract()?;
            let mut expected = dtype.size() as isize;
            for (dim, stride) in shape.iter().zip(&strides).rev() {
                if *dim > 1 && *stride != expected {
                    return Err(usage(format!("{what}: the array is not C-contiguous")));
                }
                expected = expected.saturating_mul(*dim as isize);
            }
        }
    }
    let data = get("data")?;
    let data = data.cast::<PyTuple>().map_err(|_| {
        usage(format!(
            "{what}: its array interface gives no (pointer, read-only) data tuple"
        ))
    })?;
    let ptr: u64 = data.get_item(0)?.extract()?;
    Ok(Operand {
        ptr,
        numel,
        dtype,
        place,
        torch: false,
    })
}

/// Checks that `op` lives where `info`'s rank runs.
pub fn check_place(info: &RankInfo, op: &Operand, what: &str) -> PyResult<()> {
    let cpu = info.backend == iris::BackendKind::Cpu;
    match op.place {
        Place::Cpu if cpu => Ok(()),
        Place::Gpu(index) if !cpu => match index {
            Some(i) if i != info.device as i64 => Err(usage(format!(
                "{what} is on GPU {i}, but this rank runs on {} device {} (set torch.cuda.set_device(LOCAL_RANK) before allocating)",
                info.backend, info.device
            ))),
            _ => Ok(()),
        },
        Place::Cpu => Err(usage(format!(
            "{what} is in host memory, but this rank runs on the {} backend: pass GPU memory",
            info.backend
        ))),
        Place::Gpu(_) => Err(usage(format!(
            "{what} is GPU memory, but this rank runs on the cpu backend: pass host memory"
        ))),
    }
}

/// The Python type's name, for messages.
pub fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".into())
}

fn type_module(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .module()
        .map(|n| n.to_string())
        .unwrap_or_default()
}
