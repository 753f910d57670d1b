//! Symmetric memory through a context: iris's own allocations (`zeros`, `from_bytes`) and
//! adopting a PyTorch symmetric tensor (`adopt`), whose peer table comes from its handle.

use super::*;

impl PyContext {
    pub(super) fn zeros_impl(
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

    pub(super) fn symmetric_from_bytes_impl(
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

    pub(super) fn adopt_impl(
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

    pub(super) fn allocate(
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
}

/// Each rank's copy of the tensor `op`, from its handle's `buffer_ptrs`: the tensor may
/// start past the allocation's base (a view with a storage offset), and so do its copies.
pub(super) fn peer_table(
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
