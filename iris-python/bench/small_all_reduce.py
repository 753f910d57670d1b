"""Per-call time of a small all-reduce from Python: iris eagerly, iris replayed from a CUDA
graph, and PyTorch symmetric memory's own operators, on the same tensors in one run.

    python3 iris-python/bench/small_all_reduce.py            # worlds 1 and 2, 4 KiB and 64 KiB
    python3 iris-python/bench/small_all_reduce.py --worlds 2 --iters 100

It starts one process per rank on this machine's first GPU (several ranks share it, with
TORCH_SYMM_MEM_ALLOW_OVERLAPPING_DEVICES=1), each with a gloo process group for PyTorch's
rendezvous and an iris context. The tensors are PyTorch symmetric memory
(`symm_mem.empty` + `rendezvous`), adopted by iris, so both libraries reduce the same
memory. Each method runs `iters` calls back to back, then the stream is synchronized:
per-call time is the wall time over the calls (the slowest rank's), which is what a model
step pays for a latency-bound collective. The floor is one PyTorch kernel launch
(`x.add_(0)`) timed the same way, the least any of them can cost. Prints a table last.
"""

import argparse
import json
import os
import socket
import subprocess
import sys
import time

DTYPE = "bfloat16"


def free_port():
    """A port with its successor free too (iris's rendezvous listens on MASTER_PORT + 1)."""
    for _ in range(100):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        try:
            with socket.socket() as s:
                s.bind(("127.0.0.1", port + 1))
            return port
        except OSError:
            continue
    raise RuntimeError("no two adjacent free ports")


def rank_main(sizes, iters):
    import torch
    import torch.distributed as dist
    import torch.distributed._symmetric_memory as symm_mem

    import iris_rs
    import iris_rs.torch_ops as iris_ops

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    torch.cuda.set_device(0)
    dev = torch.device("cuda", 0)
    dist.init_process_group("gloo")
    group = dist.group.WORLD
    ctx = iris_rs.Context(heap_bytes=64 << 20)
    dtype = getattr(torch, DTYPE)
    rows = []

    def symmetric(n):
        t = symm_mem.empty(n, dtype=dtype, device=dev)
        return t, symm_mem.rendezvous(t, group)

    def per_call_us(fn):
        for _ in range(10):
            fn()
        torch.cuda.synchronize()
        dist.barrier()
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        torch.cuda.synchronize()
        return (time.perf_counter() - t0) / iters * 1e6

    def graph_of(fn):
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            fn()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            fn()
        return graph

    for nbytes in sizes:
        n = nbytes // torch.tensor([], dtype=dtype).element_size()
        inp, h_in = symmetric(n)
        out, h_out = symmetric(n)
        scratch, _ = symmetric(n)
        b_in = iris_ops.adopt(ctx, inp, h_in)
        b_out = iris_ops.adopt(ctx, out, h_out)
        inp.fill_(rank + 1)
        name = group.group_name

        def iris_eager():
            ctx.all_reduce(b_in, b_out, op="sum", algo="one_shot")

        def iris_op():
            torch.ops.iris.all_reduce(inp, out, "sum", "one_shot")

        def torch_one_shot():
            return torch.ops.symm_mem.one_shot_all_reduce(inp, "sum", name)

        def torch_two_shot():
            torch.ops.symm_mem.two_shot_all_reduce_(scratch, "sum", name)

        # Correctness first: iris's sum is PyTorch's.
        iris_eager()
        want = torch_one_shot()
        torch.cuda.synchronize()
        ok = bool(torch.equal(out, want)) and float(out[0]) == world * (world + 1) / 2
        flags = [None] * world
        dist.all_gather_object(flags, ok)

        times = {}
        times["floor: one torch launch (x.add_(0))"] = per_call_us(lambda: scratch.add_(0))
        times["iris eager (ctx.all_reduce)"] = per_call_us(iris_eager)
        times["iris eager (torch.ops.iris.all_reduce)"] = per_call_us(iris_op)
        times["iris graph replay"] = per_call_us(graph_of(iris_eager).replay)
        times["torch symm_mem one_shot_all_reduce"] = per_call_us(torch_one_shot)
        try:
            times["torch symm_mem two_shot_all_reduce_"] = per_call_us(torch_two_shot)
        except Exception as e:  # noqa: BLE001 (printed: which op this PyTorch lacks)
            times["torch symm_mem two_shot_all_reduce_"] = f"n/a ({type(e).__name__})"
        try:
            times["torch one_shot graph replay"] = per_call_us(graph_of(torch_one_shot).replay)
        except Exception as e:  # noqa: BLE001
            times["torch one_shot graph replay"] = f"n/a ({type(e).__name__})"
        everyone = [None] * world
        dist.all_gather_object(everyone, times)
        slowest = {}
        for k in times:
            vals = [t[k] for t in everyone]
            slowest[k] = max(vals) if all(isinstance(v, float) for v in vals) else vals[0]
        rows.append({"world": world, "bytes": nbytes, "correct": all(flags), "us": slowest})
    torch.cuda.synchronize()
    ctx.synchronize()
    if rank == 0:
        print("ROWS " + json.dumps(rows), flush=True)
    dist.barrier()
    dist.destroy_process_group()


def launch(world, sizes, iters):
    port = free_port()
    procs = []
    for rank in range(world):
        env = dict(os.environ, RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK=str(rank),
                   LOCAL_WORLD_SIZE=str(world), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                   TORCH_SYMM_MEM_ALLOW_OVERLAPPING_DEVICES="1", CUDA_VISIBLE_DEVICES="0")
        cmd = [sys.executable, __file__, "--rank-of-world", "--sizes", *map(str, sizes), "--iters", str(iters)]
        procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    rows = []
    for rank, p in enumerate(procs):
        try:
            out, _ = p.communicate(timeout=300)
        except subprocess.TimeoutExpired:
            p.kill()
            out, _ = p.communicate()
        for line in out.splitlines():
            if line.startswith("ROWS "):
                rows = json.loads(line[5:])
        if p.returncode != 0:
            tail = "\n".join(out.strip().splitlines()[-20:])
            raise SystemExit(f"world {world}, rank {rank} failed (exit {p.returncode}):\n{tail}")
    return rows


def fmt(v):
    return f"{v:9.1f}" if isinstance(v, float) else f"{v:>9}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worlds", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--sizes", type=int, nargs="+", default=[4096, 65536], help="bytes")
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--rank-of-world", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.rank_of_world:
        rank_main(args.sizes, args.iters)
        return
    rows = [row for world in args.worlds for row in launch(world, args.sizes, args.iters)]
    print(f"\nsmall all-reduce, {DTYPE}, per-call time in us (slowest rank; {args.iters} calls back to back)")
    for row in rows:
        us = row["us"]
        torch_eager = us["torch symm_mem one_shot_all_reduce"]
        print(f"\nworld {row['world']}, {row['bytes']} bytes, iris == torch: {row['correct']}")
        for name, v in us.items():
            ratio = f"  {v / torch_eager:5.2f}x torch one_shot" if isinstance(v, float) else ""
            print(f"  {name:42s} {fmt(v)}{ratio}")
        eager = us["iris eager (ctx.all_reduce)"]
        graph = us["iris graph replay"]
        print(f"  goal: iris eager <= 1.2x torch one_shot: {'met' if eager <= 1.2 * torch_eager else 'NOT met'} "
              f"({eager / torch_eager:.2f}x); iris graph < torch eager: "
              f"{'met' if graph < torch_eager else 'NOT met'} ({graph / torch_eager:.2f}x)")


if __name__ == "__main__":
    main()
