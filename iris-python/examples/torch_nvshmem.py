"""iris's SHMEM provider on the NVSHMEM that PyTorch started, in the same processes.

    torchrun --standalone --nproc_per_node=2 iris-python/examples/torch_nvshmem.py

PyTorch starts NVSHMEM (its NVSHMEM symmetric-memory backend: symm_mem.empty + rendezvous).
iris_rs's shmem provider then finds the engine already running and uses it as it is (no
second start, no finalize), allocates from NVSHMEM's symmetric heap and all-gathers with
iris's kernels; the result is checked against torch.distributed's all-gather (gloo, on
host copies). Prints one line per rank and "ALL OK" on rank 0.

Needs one GPU per process: with several processes on one GPU NVSHMEM refuses the team calls
PyTorch's backend makes ("not supported with limited MPG") and stops the processes.
"""

import os

import numpy as np
import torch
import torch.distributed as dist
import torch.distributed._symmetric_memory as symm_mem

import iris_rs

rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)) % torch.cuda.device_count())
dist.init_process_group("gloo")
symm_mem.set_backend("NVSHMEM")

# PyTorch's NVSHMEM tensor: this starts the engine.
n = 4096
t = symm_mem.empty(n, dtype=torch.float32, device="cuda")
handle = symm_mem.rendezvous(t, dist.group.WORLD)
t.fill_(float(rank))
handle.barrier()

# iris on the same engine.
ctx = iris_rs.Context(provider="shmem")
mine = np.arange(n, dtype=np.float32) + 1000.0 * rank
src = ctx.from_bytes(mine.tobytes(), "float32")
out = ctx.zeros(world * n, "float32")
assert out.provider == "shmem", out.provider
ctx.all_gather(src, out)
ctx.synchronize()
got = np.asarray(out)

ref = [torch.empty(n) for _ in range(world)]
dist.all_gather(ref, torch.from_numpy(mine))
want = torch.cat(ref).numpy()
ok = bool(np.array_equal(got, want))
# PyTorch's own NVSHMEM tensor is still intact after iris used the engine.
torch.cuda.synchronize()
ok_torch = bool((t == float(rank)).all().item())
flags = [None] * world
dist.all_gather_object(flags, ok and ok_torch)
print(f"rank {rank}: iris all-gather over NVSHMEM {'ok' if ok else 'WRONG'}, torch tensor {'ok' if ok_torch else 'WRONG'}", flush=True)
del out, src
dist.barrier()
if rank == 0:
    print("ALL OK" if all(flags) else f"FAILED {flags}", flush=True)
dist.destroy_process_group()
