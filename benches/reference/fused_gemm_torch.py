"""PyTorch's fused GEMMs across GPUs, the reference for `benches/ccl_ops.rs --only gemm`
at one rank a GPU: `torch.ops.symm_mem.fused_all_gather_matmul` and
`fused_matmul_reduce_scatter` (symmetric memory, async tensor parallelism) against the
unfused NCCL way (`all_gather_into_tensor` then `A @ B`; `A @ B` then
`reduce_scatter_tensor`), and `A @ B` alone. bf16 in and out (iris's fused GEMMs write
f32), B given transposed as a `torch.nn.Linear` weight, the shapes iris's bench uses:
`m` rows a rank for the all-gather, `W·m` rows for the reductions.

    torchrun --nproc-per-node 4 benches/reference/fused_gemm_torch.py \
        [--gemm 1024x4096x4096,1024x1024x4096] [--iters 20]

Rank 0 prints one line per case: ms (median of the slowest rank's CUDA-event times) and
TFLOP/s of all ranks together, and the ratio of each fused op to its unfused way. Needs
one GPU per process (NCCL refuses two ranks on one GPU).
"""

import argparse
import os

import torch
import torch.distributed as dist


def timed(fn, iters):
    """Median over `iters` of the slowest rank's time of `fn` in ms, after a warm-up."""
    fn()
    times = []
    for _ in range(iters):
        dist.barrier()
        torch.cuda.synchronize()
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        t = torch.tensor([start.elapsed_time(end)], device="cuda")
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        times.append(t.item())
    times.sort()
    return times[len(times) // 2]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--gemm", default="1024x4096x4096,1024x1024x4096")
    p.add_argument("--iters", type=int, default=20)
    a = p.parse_args()
    local = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local)
    dist.init_process_group("nccl")
    rank, world = dist.get_rank(), dist.get_world_size()
    group = dist.group.WORLD
    from torch.distributed import _symmetric_memory as symm_mem

    symm_mem.enable_symm_mem_for_group(group.group_name)
    rows = []
    for shape in a.gemm.split(","):
        m, n, k = (int(d) for d in shape.split("x"))
        big = world * m
        flops = 2.0 * big * n * k * world
        torch.manual_seed(rank)
        weight = torch.randn(n, k, dtype=torch.bfloat16, device="cuda")  # B transposed
        b = weight.t()
        # all-gather then GEMM: m rows of A a rank.
        a_shard = torch.randn(m, k, dtype=torch.bfloat16, device="cuda")
        a_full = torch.empty(big, k, dtype=torch.bfloat16, device="cuda")

        def unfused_ag():
            dist.all_gather_into_tensor(a_full, a_shard)
            return a_full @ b

        def fused_ag():
            return torch.ops.symm_mem.fused_all_gather_matmul(
                a_shard, [b], gather_dim=0, group_name=group.group_name
            )

        # GEMM then reduce-scatter: W·m rows, k this rank's share.
        a_big = torch.randn(big, k, dtype=torch.bfloat16, device="cuda")
        part = torch.empty(m, n, dtype=torch.bfloat16, device="cuda")

        def unfused_rs():
            dist.reduce_scatter_tensor(part, a_big @ b)

        def fused_rs():
            return torch.ops.symm_mem.fused_matmul_reduce_scatter(
                a_big, b, "sum", scatter_dim=0, group_name=group.group_name
            )

        cases = [
            (f"all_gather_matmul {big}x{n}x{k}", fused_ag, unfused_ag),
            (f"matmul_reduce_scatter {big}x{n}x{k}", fused_rs, unfused_rs),
        ]
        for name, fused, unfused in cases:
            u = timed(unfused, a.iters)
            try:
                f = timed(fused, a.iters)
            except (RuntimeError, AttributeError) as e:  # an op this build lacks
                f = None
                if rank == 0:
                    print(f"{name}: torch.ops.symm_mem failed: {e}")
            rows.append((f"torch {name} (NCCL, unfused)", u, flops, None))
            if f is not None:
                rows.append((f"torch {name} (symm_mem, fused)", f, flops, u))
        rows.append((f"torch A @ B alone {big}x{n}x{k}", timed(lambda: a_big @ b, a.iters), flops, None))
    if rank == 0:
        print(f"fused_gemm_torch: {world} ranks, one GPU each, torch {torch.__version__}, bf16")
        print(f"{'case':<62} {'ms':>9} {'TFLOP/s':>8}  against")
        for name, ms, flops, against in rows:
            ratio = f"{ms / against:.2f}x of unfused ({against:.3f} ms)" if against else ""
            print(f"{name:<62} {ms:>9.3f} {flops / (ms * 1e-3) / 1e12:>8.1f}  {ratio}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
