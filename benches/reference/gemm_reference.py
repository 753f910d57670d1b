"""The references examples/gemm.rs is compared with, on the same GPU in the same run.

GEMM: `torch.matmul` (cuBLAS) of bf16 M x K by K x N (f32 accumulate, bf16 out) at each
size, and the H200's dense bf16 tensor-core peak as the ceiling. GEMM + all-scatter at
`--ranks R` (R ranks on one GPU): each rank's `torch.matmul` of its M/R rows, then a copy
of that part into every rank's C (R - 1 device-to-device copies of M/R x N f32), timed
for all ranks one after another, as the unfused reference for the fused kernel.

Usage: python3 benches/reference/gemm_reference.py [--sizes 4096,8192] [--ranks 2,4] [--iters 10]
"""

import argparse

import torch

# NVIDIA H200 SXM: dense bf16 tensor-core peak (TFLOP/s) from the data sheet.
H200_BF16_PEAK = 989.0


def median_ms(fn, iters):
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    times.sort()
    return times[len(times) // 2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="4096,8192")
    ap.add_argument("--ranks", default="2,4")
    ap.add_argument("--iters", type=int, default=10)
    args = ap.parse_args()
    name = torch.cuda.get_device_name()
    print(f"reference on {name}; bf16 peak (ceiling) {H200_BF16_PEAK:.0f} TFLOP/s")
    for size in [int(s) for s in args.sizes.split(",")]:
        a = torch.randn(size, size, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(size, size, device="cuda", dtype=torch.bfloat16)
        ms = median_ms(lambda: torch.matmul(a, b), args.iters)
        tf = 2 * size**3 / (ms * 1e-3) / 1e12
        print(
            f"torch.matmul {size}^3: {ms:.3f} ms {tf:.1f} TFLOP/s "
            f"({tf / H200_BF16_PEAK:.2f} of peak)"
        )
        for ranks in [int(r) for r in args.ranks.split(",") if r]:
            rows = size // ranks
            parts = [a[r * rows : (r + 1) * rows] for r in range(ranks)]
            cs = [torch.empty(size, size, device="cuda") for _ in range(ranks)]

            def unfused():
                for r in range(ranks):
                    part = torch.matmul(parts[r], b).float()
                    for p in range(ranks):
                        cs[p][r * rows : (r + 1) * rows].copy_(part)

            ms = median_ms(unfused, args.iters)
            print(
                f"torch.matmul + copy into every rank, {ranks} ranks, {size}^3 in total: "
                f"{ms:.3f} ms (all ranks, one after another)"
            )


if __name__ == "__main__":
    main()
