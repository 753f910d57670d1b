"""A Triton bf16 GEMM as a second reference for examples/gemm.rs, on the same GPU.

Triton compiles a tiled GEMM for the matrix units on its own. On Hopper it uses `wgmma`;
with `--mma-sync` this script sets Triton's `DISABLE_MMA_V3=1` before compiling, so the
same kernel is built with `mma.sync` (Triton's Ampere path), which is what our `mma`
kernels use: the best-known compiler's number for the instruction our kernels are held to.
The PTX of the kernel that ran is checked for the instruction it claims (`mma.sync` or
`wgmma`). Each size is autotuned over a few common tile shapes and printed with
`torch.matmul` (cuBLAS) measured in the same process.

Usage: python3 benches/reference/gemm_triton_reference.py [--sizes 4096,8192] [--mma-sync] [--iters 10]
"""

import argparse
import os
import sys

if "--mma-sync" in sys.argv:
    # Read by Triton's compiler when it picks the MMA version; must be set before compiling.
    os.environ["DISABLE_MMA_V3"] = "1"

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from gemm_reference import median_ms  # noqa: E402  (the same timing as the torch references)

CONFIGS = [
    triton.Config({"BM": 128, "BN": 256, "BK": 64, "G": 8}, num_warps=8, num_stages=3),
    triton.Config({"BM": 256, "BN": 128, "BK": 64, "G": 8}, num_warps=8, num_stages=3),
    triton.Config({"BM": 128, "BN": 128, "BK": 64, "G": 8}, num_warps=4, num_stages=4),
    triton.Config({"BM": 128, "BN": 128, "BK": 64, "G": 8}, num_warps=8, num_stages=4),
    triton.Config({"BM": 128, "BN": 256, "BK": 32, "G": 8}, num_warps=8, num_stages=4),
    triton.Config({"BM": 128, "BN": 128, "BK": 32, "G": 8}, num_warps=4, num_stages=4),
]


@triton.autotune(configs=CONFIGS, key=["M", "N", "K"])
@triton.jit
def matmul_kernel(a, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                  G: tl.constexpr):
    pid = tl.program_id(0)
    blocks_m = tl.cdiv(M, BM)
    blocks_n = tl.cdiv(N, BN)
    per_group = G * blocks_n
    first = (pid // per_group) * G
    rows = min(blocks_m - first, G)
    pm = first + (pid % per_group) % rows
    pn = (pid % per_group) // rows
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    pa = a + rm[:, None] * K + rk[None, :]
    pb = b + rk[:, None] * N + rn[None, :]
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for _ in range(0, K, BK):
        acc = tl.dot(tl.load(pa), tl.load(pb), acc)
        pa += BK
        pb += BK * N
    tl.store(c + rm[:, None] * N + rn[None, :], acc.to(tl.bfloat16))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="4096,8192")
    ap.add_argument("--mma-sync", action="store_true")
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--dump", help="write the PTX of each size's kernel into this folder")
    args = ap.parse_args()
    want = "mma.sync" if args.mma_sync else "wgmma"
    for size in [int(s) for s in args.sizes.split(",")]:
        a = torch.randn(size, size, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(size, size, device="cuda", dtype=torch.bfloat16)
        c = torch.empty(size, size, device="cuda", dtype=torch.bfloat16)

        def grid(meta):
            return (triton.cdiv(size, meta["BM"]) * triton.cdiv(size, meta["BN"]),)

        def run():
            matmul_kernel[grid](a, b, c, size, size, size)

        ms = median_ms(run, args.iters)
        ref = torch.matmul(a, b)
        err = ((c.float() - ref.float()).norm() / ref.float().norm()).item()
        ms_torch = median_ms(lambda: torch.matmul(a, b), args.iters)
        best = matmul_kernel.best_config
        # The launch returns the compiled kernel that ran (the best config's).
        compiled = matmul_kernel[grid](a, b, c, size, size, size)
        ptx = compiled.asm.get("ptx", "") if hasattr(compiled, "asm") else ""
        used = [i for i in ("mma.sync", "wgmma") if i in ptx] or ["unknown"]
        if args.dump:
            with open(os.path.join(args.dump, f"triton-{want}-{size}.ptx"), "w") as f:
                f.write(ptx)
        regs = getattr(compiled, "n_regs", "?")
        shared = getattr(getattr(compiled, "metadata", None), "shared", "?")
        tf = 2 * size**3 / (ms * 1e-3) / 1e12
        tf_torch = 2 * size**3 / (ms_torch * 1e-3) / 1e12
        print(
            f"triton {want} {size}^3: {ms:.3f} ms {tf:.1f} TFLOP/s "
            f"({tf / tf_torch:.2f}x torch.matmul {tf_torch:.1f}); "
            f"config {best.kwargs} warps {best.num_warps} stages {best.num_stages}; "
            f"{regs} registers, {shared} B shared; "
            f"PTX has {'+'.join(used)}; rel err vs torch {err:.1e}"
        )


if __name__ == "__main__":
    main()
