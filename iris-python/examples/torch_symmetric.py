"""iris kernels on PyTorch symmetric memory, checked against PyTorch's own collectives.

    torchrun --standalone --nproc_per_node=4 iris-python/examples/torch_symmetric.py

PyTorch allocates and rendezvouses (symm_mem.empty + rendezvous); iris adopts the tensors
and runs its all-gather, all-reduce and translate-then-store kernels on them. Reference
results come from torch.distributed (gloo, on host copies: NCCL refuses several
processes on one GPU). Prints a table on rank 0.
"""

import os
import time

import torch
import torch.distributed as dist
import torch.distributed._symmetric_memory as symm_mem

import iris_rs

rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
local = int(os.environ.get("LOCAL_RANK", rank))
torch.cuda.set_device(local % torch.cuda.device_count())
dev = torch.device("cuda", torch.cuda.current_device())
dist.init_process_group("gloo")
group = dist.group.WORLD
ctx = iris_rs.Context(heap_bytes=64 << 20)
assert (ctx.rank, ctx.world_size) == (rank, world), (ctx, rank, world)
rows = []


def record(name, dtype, n, ok, ms, note=""):
    flags = [None] * world
    dist.all_gather_object(flags, bool(ok))
    rows.append((name, str(dtype).replace("torch.", ""), n, all(flags), ms, note))


def symmetric(n, dtype):
    t = symm_mem.empty(n, dtype=dtype, device=dev)
    return t, symm_mem.rendezvous(t, group)


def gather_ref(x):
    """torch's all-gather of `x` (on host copies, gloo)."""
    host = x.cpu()
    out = torch.empty(world * host.numel(), dtype=host.dtype)
    try:
        dist.all_gather_into_tensor(out, host)
        how = "all_gather_into_tensor"
    except Exception:  # gloo may lack it: the list form gives the same
        parts = [torch.empty_like(host) for _ in range(world)]
        dist.all_gather(parts, host)
        out = torch.cat(parts)
        how = "all_gather"
    return out, how


def timed(fn):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    fn()
    return (time.perf_counter() - t0) * 1e3


for dtype in (torch.float32, torch.bfloat16, torch.int64):
    for n in (1000, 1 << 18):
        x, hx = symmetric(n, dtype)
        g, hg = symmetric(world * n, dtype)
        r, hr = symmetric(n, dtype)
        # small integers: every sum is exact in every dtype, whatever the order
        x.copy_((torch.arange(n, device=dev) % 61 + 3 * rank).to(dtype))
        bx, bg, br = ctx.adopt(x, hx), ctx.adopt(g, hg), ctx.adopt(r, hr)
        ms = timed(lambda: ctx.all_gather(bx, bg))
        ref, how = gather_ref(x)
        record("all_gather (push)", dtype, n, torch.equal(g.cpu(), ref), ms, "vs dist." + how)
        ms = timed(lambda: ctx.all_gather(bx, bg, algo="pull"))
        record("all_gather (pull)", dtype, n, torch.equal(g.cpu(), ref), ms, "vs dist." + how)
        for algo in ("one_shot", "two_shot"):
            r.zero_()
            ms = timed(lambda: ctx.all_reduce(bx, br, op="sum", algo=algo))
            if dtype == torch.bfloat16:  # gloo's bf16 support varies: sum the gathered data
                expect = ref.view(world, n).float().sum(0).to(dtype)
                note = "vs torch sum of gathered"
            else:
                expect = x.cpu()
                dist.all_reduce(expect)
                note = "vs dist.all_reduce"
            record(f"all_reduce sum ({algo})", dtype, n, torch.equal(r.cpu(), expect), ms, note)
        for b in (bx, bg, br):
            b.free()

# Two allocations' tables are never mixed up: put into a's copy on the next rank,
# through a's table; b (same size, same dtype) must stay untouched.
n = 4096
a, ha = symmetric(n, torch.float32)
b, hb = symmetric(n, torch.float32)
a.fill_(-1.0)
b.fill_(-2.0)
ba, bb = ctx.adopt(a, ha), ctx.adopt(b, hb)
src = torch.full((n // world,), float(rank + 100), device=dev)  # an ordinary tensor
nxt, prv = (rank + 1) % world, (rank - 1) % world
dist.barrier()
ms = timed(lambda: ctx.put(src, ba, peer=nxt, offset=rank * (n // world)))
ctx.barrier()
dist.barrier()
seg = a[prv * (n // world):(prv + 1) * (n // world)]
ok = bool((seg == prv + 100).all()) and bool((b == -2.0).all())
ok = ok and ba.peer_ptrs != bb.peer_ptrs and ba.data_ptr() == a.data_ptr()
record("put (ordinary -> adopted)", torch.float32, n // world, ok, ms, "b untouched; tables differ")

# A view with a storage offset: its copies start at the same offset on every rank.
view = a[n // 2:]
bv = ctx.adopt(view, ha)
ok = bv.peer_ptrs == [p + (n // 2) * 4 for p in ha.buffer_ptrs]
dist.barrier()
ctx.put(torch.full((8,), float(rank), device=dev), bv, peer=nxt)
ctx.barrier()
dist.barrier()
ok = ok and bool((a[n // 2:n // 2 + 8] == prv).all())
record("adopt a view (storage offset)", torch.float32, n // 2, ok, 0.0, "peer_ptrs offset")

# Refusals: no handle, another allocation's handle, a non-contiguous tensor.
plain = torch.ones(n, device=dev)
errors = []
for label, call in (
    ("no handle", lambda: ctx.adopt(plain)),
    ("plain tensor, other's handle", lambda: ctx.adopt(plain, ha)),
    ("a with b's handle", lambda: ctx.adopt(a, hb)),
    ("non-contiguous", lambda: ctx.adopt(a.view(64, 64).t(), ha)),
    ("uint8", lambda: ctx.adopt(symmetric(64, torch.uint8)[0], ha)),
):
    try:
        call()
        errors.append((label, None))
    except iris_rs.IrisError as e:
        errors.append((label, str(e)))
record("refuse non-rendezvoused", "-", n, all(m for _, m in errors), 0.0, f"{len(errors)} cases")

# iris's own heap, viewed by torch without a copy (__cuda_array_interface__).
hin, hout = ctx.zeros(n, "float32"), ctx.zeros(n, "float32")
tin = torch.as_tensor(hin, device=dev)
tin.copy_(torch.arange(n, device=dev, dtype=torch.float32) % 7 + rank)
ms = timed(lambda: ctx.all_reduce(hin, hout, algo="two_shot"))
expect = tin.cpu()
dist.all_reduce(expect)
ok = torch.equal(torch.as_tensor(hout, device=dev).cpu(), expect) and hin.provider == "heap"
record("iris heap all_reduce", torch.float32, n, ok, ms, "torch view via CAI")

ctx.synchronize()
dist.barrier()
if rank == 0:
    for label, message in errors:
        print(f"refused [{label}]: {message}")
    print(f"\nworld {world} ({ctx.device_name}, backend {ctx.backend}, one process a rank)")
    print(f"{'test':34} {'dtype':9} {'n':>7} {'ok':>5} {'ms':>8}  note")
    for name, dt, num, okay, t, note in rows:
        print(f"{name:34} {dt:9} {num:>7} {str(okay):>5} {t:8.2f}  {note}")
    print("ALL OK" if all(r[3] for r in rows) else "SOME FAILED")
ctx.close()
dist.destroy_process_group()
