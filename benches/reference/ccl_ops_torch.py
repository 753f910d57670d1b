"""PyTorch eager on one GPU doing the local work of `benches/ccl_ops.rs`'s cases for all
the ranks at once (the bench runs its ranks on one GPU too): the MoE dispatch's row
permutation and the combine's weighted sum, the all-reduce's sum + residual add +
RMSNorm, the GEMMs, and the fused reductions' eager equivalent (partial products, then
their sum; and one matmul over the ranks' concatenated k). No communication library is involved: these are the memory-bound kernels a
PyTorch program runs around its collectives, the reference for the fused iris kernels.

    python3 benches/reference/ccl_ops_torch.py [--ranks 4] [--tokens 4096] [--iters 20]

Prints one line per case: milliseconds (median of CUDA-event timings) and GB/s.
"""

import argparse

import torch


def timed(fn, iters):
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
    p = argparse.ArgumentParser()
    p.add_argument("--ranks", type=int, default=4)
    p.add_argument("--tokens", type=int, default=4096)
    p.add_argument("--iters", type=int, default=20)
    a = p.parse_args()
    dev = "cuda"
    w, t, h, k, e = a.ranks, a.tokens, 7168, 8, 256
    torch.manual_seed(0)
    x = torch.full((w * t, h), 0.5, dtype=torch.bfloat16, device=dev)
    ids = torch.rand(w * t, e, device=dev).topk(k, dim=1).indices  # distinct experts
    weights = torch.full((w * t, k), 0.125, device=dev)
    # Rows in expert order (what an expert-parallel layer hands its experts).
    order = torch.argsort(ids.flatten(), stable=True)
    tokens_of = order // k
    moved = w * t * k * h * 2

    def dispatch():
        return x.index_select(0, tokens_of)

    rows = dispatch()
    inverse = torch.empty_like(order)
    inverse[order] = torch.arange(order.numel(), device=dev)

    def combine():
        back = rows.index_select(0, inverse).view(w * t, k, h)
        return (back.float() * weights[..., None]).sum(1).to(torch.bfloat16)

    results = [
        (f"torch moe dispatch (index_select, {w}x{t} tokens)", timed(dispatch, a.iters), moved),
        ("torch moe combine (index_select + weighted sum)", timed(combine, a.iters), moved),
    ]
    for norm_rows in (128, 4096):
        parts = [torch.full((norm_rows, h), 0.25, dtype=torch.bfloat16, device=dev) for _ in range(w)]
        res = torch.ones(norm_rows, h, dtype=torch.bfloat16, device=dev)
        g = torch.ones(h, dtype=torch.bfloat16, device=dev)

        def norm():
            # Every rank's work: the sum of the parts, the residual add, the norm.
            for _ in range(w):
                s = parts[0].float()
                for q in parts[1:]:
                    s = s + q.float()
                r = (s + res.float()).to(torch.bfloat16)
                rf = r.float()
                y = (rf * torch.rsqrt(rf.pow(2).mean(-1, keepdim=True) + 1e-6) * g.float()).to(torch.bfloat16)
            return y

        results.append(
            (f"torch sum + add + rmsnorm {norm_rows}x{h} (x{w} ranks)", timed(norm, a.iters), norm_rows * h * 2 * w)
        )
    # The fused GEMMs' compute: every rank's 4096 x 4096 x 4096 bf16 GEMM, f32 out.
    ga = torch.full((4096, 4096), 0.5, dtype=torch.bfloat16, device=dev)
    gb = torch.full((4096, 4096), 0.25, dtype=torch.bfloat16, device=dev)

    def gemms():
        for _ in range(w):
            y = torch.matmul(ga, gb)
        return y

    ms = timed(gemms, a.iters)
    results.append((f"torch matmul 4096x4096x4096 bf16 (x{w} ranks) [TFLOP/s]", ms, 2 * 4096**3 * w / 1e3))
    # The reductions' eager equivalent on one GPU: every rank's partial product (A_r, 4096
    # x 4096, times B_r given transposed, as a Linear weight), then their sum in f32 (the
    # reduce-scatter's rows and the all-reduce's are the same sum here); and the same sum
    # as one matmul over the ranks' concatenated inner dimension.
    gas = [torch.full((4096, 4096), 0.5, dtype=torch.bfloat16, device=dev) for _ in range(w)]
    gbs = [torch.full((4096, 4096), 0.25, dtype=torch.bfloat16, device=dev) for _ in range(w)]

    def partials_then_sum():
        return torch.stack([x @ y.t() for x, y in zip(gas, gbs)]).float().sum(0)

    cat_a, cat_b = torch.cat(gas, dim=1), torch.cat(gbs, dim=1)

    def one_matmul():
        return (cat_a @ cat_b.t()).float()

    flops = 2 * 4096**3 * w / 1e3
    results.append(
        (f"torch partial products then sum (x{w} ranks) [TFLOP/s]", timed(partials_then_sum, a.iters), flops)
    )
    results.append((f"torch one matmul over the ranks' k (x{w}) [TFLOP/s]", timed(one_matmul, a.iters), flops))
    print(f"torch {torch.__version__} on {torch.cuda.get_device_name()}")
    for name, ms, nbytes in results:
        print(f"{name:<62} {ms:9.3f} {nbytes / (ms * 1e-3) / 1e9:8.1f}")


if __name__ == "__main__":
    main()
