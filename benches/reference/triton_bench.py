"""The Triton and PyTorch peers of the iris bandwidth cases, and Triton's first-call
compile time of the kernels the iris bench compiles.

    python3 benches/reference/triton_bench.py [bytes]

Kernels are the iris ones written in Triton: the pointer is translated as ROCm Iris does
(`to_base + (ptr - from_base)`, bases read from a table), with the vectorisation hints
Iris adds after translation. Two "ranks" are two allocations of each buffer on one GPU.
Data: the same multiplicative hash of the index and a random seed as the iris bench.
Times: `triton.testing.do_bench` (CUDA events, median). Prints one JSON object a line.
"""

import json
import os
import random
import sys
import tempfile
import time

# A fresh compile cache, so the first call of every kernel compiles.
os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="triton-cache-")

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from triton.testing import do_bench  # noqa: E402

KHASH = tl.constexpr(2654435761)  # the hash multiplier, for kernels
KHASH_INT = 2654435761


def emit(**fields):
    print(json.dumps(fields), flush=True)


@triton.jit
def _translate(ptr, me, peer, table):
    from_base = tl.load(table + me)
    to_base = tl.load(table + peer)
    offset = tl.cast(ptr, tl.uint64) - tl.cast(from_base, tl.uint64)
    to_byte = tl.cast(to_base, tl.pointer_type(tl.int8))
    out = tl.cast(to_byte + offset, ptr.dtype)
    out = tl.multiple_of(out, 16)
    out = tl.max_contiguous(out, 16)
    return out


@triton.jit
def _hashed(offs, seed, BLOCK: tl.constexpr):
    e = offs.to(tl.uint32)
    h = (e * tl.full([BLOCK], KHASH, tl.uint32)) ^ seed.to(tl.uint32)
    return h.to(tl.float32)


@triton.jit
def store_kernel(dst, table, n, me, peer, seed, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(_translate(dst + offs, me, peer, table), _hashed(offs, seed, BLOCK), mask=mask)


@triton.jit
def load_kernel(src, table, dst, n, me, peer, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(dst + offs, tl.load(_translate(src + offs, me, peer, table), mask=mask), mask=mask)


@triton.jit
def copy_kernel(src, src_table, dst, dst_table, n, me, from_peer, to_peer, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(_translate(src + offs, me, from_peer, src_table), mask=mask)
    tl.store(_translate(dst + offs, me, to_peer, dst_table), v, mask=mask)


@triton.jit
def all_gather_kernel(inp, out, table, n, me, world, BLOCK: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(inp + offs, mask=mask)
    for peer in range(0, world):
        tl.store(_translate(out + me * n + offs, me, peer, table), v, mask=mask)


@triton.jit
def warm_kernel(x, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x + offs, offs.to(tl.float32), mask=offs < n)


def hashed(n, seed, device):
    e = torch.arange(n, dtype=torch.int64, device=device)
    return (((e * KHASH_INT) & 0xFFFFFFFF) ^ seed).to(torch.float32)


def first_call_ms(launch):
    torch.cuda.synchronize()
    t = time.perf_counter()
    k = launch()
    torch.cuda.synchronize()
    first = (time.perf_counter() - t) * 1e3
    steady = []
    for _ in range(21):
        t = time.perf_counter()
        launch()
        torch.cuda.synchronize()
        steady.append((time.perf_counter() - t) * 1e3)
    steady.sort()
    return first, steady[len(steady) // 2], k


def vector_ops(kernel):
    try:
        ptx = kernel.asm["ptx"]
    except Exception:  # noqa: BLE001 - older/newer launch return types
        return None
    return {"st.global.v4": ptx.count("st.global.v4"), "ld.global.v4": ptx.count("ld.global.v4")}


def main():
    nbytes = int(sys.argv[1]) if len(sys.argv) > 1 else 1 << 30
    dev = torch.device("cuda")
    BLOCK, WARPS = 4096, 8
    emit(ref="triton", name="versions", triton=triton.__version__, torch=torch.__version__,
         device=torch.cuda.get_device_name(0))

    # ---- first-call compile (fresh cache), after warming Triton's own runtime
    small = 1 << 16
    x = torch.empty(small, device=dev)
    first, steady, _ = first_call_ms(lambda: warm_kernel[(small // 1024,)](x, small, BLOCK=1024))
    emit(ref="triton", name="compile:runtime_warmup", first_call_ms=first, steady_ms=steady,
         compile_ms=first - steady)
    a = torch.empty((2, small), device=dev)
    table = torch.tensor([a[0].data_ptr(), a[1].data_ptr()], dtype=torch.int64, device=dev)
    first, steady, _ = first_call_ms(
        lambda: store_kernel[(small // BLOCK,)](a[0], table, small, 0, 1, 7, BLOCK=BLOCK, num_warps=WARPS))
    emit(ref="triton", name="compile:store_v4", first_call_ms=first, steady_ms=steady, compile_ms=first - steady)
    inp = torch.randn(small, device=dev)
    out = torch.empty((2, 2 * small), device=dev)
    gtable = torch.tensor([out[0].data_ptr(), out[1].data_ptr()], dtype=torch.int64, device=dev)
    first, steady, _ = first_call_ms(
        lambda: all_gather_kernel[(small // 256,)](inp, out[0], gtable, small, 0, 2, BLOCK=256))
    emit(ref="triton", name="compile:all_gather", first_call_ms=first, steady_ms=steady, compile_ms=first - steady)
    del x, a, inp, out

    # ---- bandwidth, 1 GiB
    n = nbytes // 4
    seed = random.randrange(1, 1 << 30) | 1
    A = torch.empty((2, n), device=dev)  # two ranks' copies of A
    B = torch.empty((2, n), device=dev)  # two ranks' copies of B
    D = torch.empty(n, device=dev)
    ta = torch.tensor([A[0].data_ptr(), A[1].data_ptr()], dtype=torch.int64, device=dev)
    tb = torch.tensor([B[0].data_ptr(), B[1].data_ptr()], dtype=torch.int64, device=dev)
    A[1].copy_(hashed(n, seed, dev))
    grid = (triton.cdiv(n, BLOCK),)

    def bench(name, fn, moved, check=None, kernel=None):
        ms = do_bench(fn, warmup=25, rep=100, return_mode="median")
        ok = bool(check()) if check else True
        emit(ref=name.split(":")[0], name=name.split(":")[1], bytes_moved=moved, ms=ms,
             gbps=moved / (ms * 1e-3) / 1e9, correct=ok, vector_ops=vector_ops(kernel) if kernel else None)

    bench("torch:fill_", lambda: D.fill_(1.5), nbytes)
    bench("torch:copy_", lambda: D.copy_(A[1]), 2 * nbytes, check=lambda: torch.equal(D, A[1]))

    B[1].fill_(float("nan"))
    k = store_kernel[grid](B[0], tb, n, 0, 1, seed ^ 5, BLOCK=BLOCK, num_warps=WARPS)
    bench("triton:store_v4", lambda: store_kernel[grid](B[0], tb, n, 0, 1, seed ^ 5, BLOCK=BLOCK, num_warps=WARPS),
          nbytes, check=lambda: torch.equal(B[1], hashed(n, seed ^ 5, dev)), kernel=k)

    D.fill_(float("nan"))
    k = load_kernel[grid](A[0], ta, D, n, 0, 1, BLOCK=BLOCK, num_warps=WARPS)
    bench("triton:load_v4", lambda: load_kernel[grid](A[0], ta, D, n, 0, 1, BLOCK=BLOCK, num_warps=WARPS),
          2 * nbytes, check=lambda: torch.equal(D, A[1]), kernel=k)

    B[0].fill_(float("nan"))
    k = copy_kernel[grid](A[0], ta, B[0], tb, n, 0, 1, 0, BLOCK=BLOCK, num_warps=WARPS)
    bench("triton:copy_v4",
          lambda: copy_kernel[grid](A[0], ta, B[0], tb, n, 0, 1, 0, BLOCK=BLOCK, num_warps=WARPS),
          2 * nbytes, check=lambda: torch.equal(B[0], A[1]), kernel=k)


if __name__ == "__main__":
    main()
