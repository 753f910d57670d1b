//! `put`: the extension's own translate-then-store kernel, from any array of the rank's
//! device into a peer's copy of a symmetric buffer.

use super::*;

impl PyContext {
    pub(super) fn put_impl(
        &self,
        py: Python<'_>,
        src: Bound<'_, PyAny>,
        dst: PyRef<'_, PySymmetric>,
        peer: usize,
        offset: usize,
        order: CallOrder,
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
        let sync = self.order_after_torch(py, &[src_torch, dst.torch_device], order)?;
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
}

/// The launch shape of `put` for `n` elements.
pub(super) fn launch_shape(n: u64, cpu: bool) -> LaunchConfig {
    let threads: u32 = if cpu { 64 } else { 256 };
    let per_block = u64::from(threads) * 4;
    let blocks = n.div_ceil(per_block).clamp(1, if cpu { 1 } else { 1024 });
    LaunchConfig::linear(blocks as u32, threads)
}
