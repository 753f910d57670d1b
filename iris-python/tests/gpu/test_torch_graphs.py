"""iris inside ``torch.cuda.graph`` (GPU, PyTorch): an all-reduce, an all-gather and
PyTorch's own arithmetic are captured into one CUDA graph, which is replayed 1000 times
with fresh inputs written between replays, and every value of every replay is checked;
at world 1 in this process and at world 2 in two processes sharing the GPU. A call that
cannot run on the capturing stream is refused with an error that says what to do, and a
switch between PyTorch streams is ordered without the host waiting. Skipped, saying
why, without PyTorch or a CUDA device.

    python -m pytest -q iris-python/tests/gpu/test_torch_graphs.py
"""

import os
import subprocess
import sys
import time
import uuid

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

import iris_rs  # noqa: E402
import iris_rs.torch_ops as iris_ops  # noqa: E402

N = 4096
REPLAYS = 1000
# About 50 ms of device time (the GPU's clock counts cycles).
SLEEP_CYCLES = int(torch.cuda.get_device_properties(0).clock_rate * 1e3 * 0.05)


def rank_input(rank, replay, device):
    """Rank `rank`'s input at replay `replay`: small integers, exact in every f32 sum."""
    i = torch.arange(N, device=device, dtype=torch.int64)
    return ((i * 7 + replay * 13 + rank * 31) % 101).to(torch.float32)


def replay_and_check():
    """This rank's part: capture, replay REPLAYS times with fresh inputs, count wrong
    values. Returns (replays, wrong)."""
    with iris_rs.Context(heap_bytes=64 << 20) as ctx:
        world = ctx.world_size
        x = iris_ops.tensor(ctx, ctx.zeros(N, "float32"))
        total = iris_ops.tensor(ctx, ctx.zeros(N, "float32"))
        gathered = iris_ops.tensor(ctx, ctx.zeros(N * world, "float32"))

        def step():
            torch.ops.iris.all_reduce(x, total, "sum")
            torch.ops.iris.all_gather(total, gathered)
            return gathered.view(world, N).sum(0) * 2.0 + 1.0  # PyTorch's kernels

        # Warm up on a side stream (the first collective loads its kernels, which waits),
        # as PyTorch asks before a capture.
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            x.copy_(rank_input(ctx.rank, 0, x.device))
            step()
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            y = step()
        wrong = torch.zeros((), dtype=torch.int64, device=x.device)
        for replay in range(REPLAYS):
            x.copy_(rank_input(ctx.rank, replay, x.device))
            graph.replay()
            want = sum(rank_input(r, replay, x.device) for r in range(world)) * world * 2.0 + 1.0
            wrong += (y != want).sum()
        torch.cuda.synchronize()
        ctx.synchronize()
        return REPLAYS, int(wrong.item())


def test_captured_collectives_replay_with_fresh_inputs_at_world_1():
    replays, wrong = replay_and_check()
    print(f"world 1: {replays} graph replays, {wrong} wrong values")
    assert wrong == 0


def test_captured_collectives_replay_with_fresh_inputs_at_world_2():
    """Two processes on this GPU (one rank each), each capturing and replaying."""
    job = uuid.uuid4().hex
    procs = []
    for rank in range(2):
        env = dict(os.environ, IRIS_RANK=str(rank), IRIS_WORLD_SIZE="2", IRIS_LOCAL_RANK=str(rank),
                   IRIS_LOCAL_WORLD_SIZE="2", IRIS_JOB_ID=job, IRIS_TIMEOUT="120",
                   CUDA_VISIBLE_DEVICES=os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0])
        procs.append(subprocess.Popen([sys.executable, __file__], env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True))
    outs = []
    for p in procs:
        try:
            out, _ = p.communicate(timeout=600)
        except subprocess.TimeoutExpired:
            p.kill()
            out, _ = p.communicate()
        outs.append(out)
    for rank, (p, out) in enumerate(zip(procs, outs)):
        tail = "\n".join(out.strip().splitlines()[-15:])
        assert p.returncode == 0, f"rank {rank} failed:\n{tail}"
        assert f"rank {rank}: {REPLAYS} graph replays, 0 wrong values" in out, tail
        print(tail.splitlines()[-1])


def test_a_call_that_cannot_join_the_capture_is_refused():
    with iris_rs.Context(heap_bytes=64 << 20) as ctx:
        a = ctx.zeros(N, "float32")
        b = ctx.zeros(N, "float32")
        ctx.all_reduce(a, b)  # loads the kernels before the capture
        with pytest.raises(iris_rs.IrisError, match="on_torch_stream=True"):
            with torch.cuda.graph(torch.cuda.CUDAGraph()):
                ctx.all_reduce(a, b)  # iris buffers only: iris's own stream by default
        # The same call on PyTorch's stream is captured.
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            ctx.all_reduce(a, b, on_torch_stream=True)
        graph.replay()
        torch.cuda.synchronize()
        ctx.synchronize()


def test_a_stream_switch_is_ordered_without_the_host_waiting():
    """A call on stream B after iris's work on stream A reads what that work wrote, and
    the switch does not wait on the host for A's 50 ms sleep."""
    with iris_rs.Context(heap_bytes=64 << 20) as ctx:
        first = ctx.zeros(N, "float32")
        second = ctx.zeros(N, "float32")
        first_view = torch.as_tensor(first, device="cuda")
        a, b = torch.cuda.Stream(), torch.cuda.Stream()
        for step in range(1, 6):
            with torch.cuda.stream(a):
                src = torch.full((N,), float(step), device="cuda")
                torch.cuda._sleep(SLEEP_CYCLES)
                ctx.put(src, first, peer=0)
            with torch.cuda.stream(b):
                t0 = time.perf_counter()
                ctx.put(first_view, second, peer=0)  # reads what the put on `a` wrote
                waited_ms = (time.perf_counter() - t0) * 1e3
            torch.cuda.synchronize()
            got = torch.as_tensor(second, device="cuda")
            assert torch.all(got == float(step)), f"step {step}: the call on stream b overtook iris's work on a"
            assert waited_ms < 25.0, f"step {step}: the switch waited {waited_ms:.1f} ms on the host"
        ctx.synchronize()


if __name__ == "__main__":
    # One rank of the world-2 test (started by it with IRIS_RANK etc.).
    replays, wrong = replay_and_check()
    print(f"rank {os.environ.get('IRIS_RANK', '0')}: {replays} graph replays, {wrong} wrong values", flush=True)
