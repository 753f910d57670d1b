"""iris on PyTorch's stream (GPU, PyTorch): a call on PyTorch memory queues on
``torch.cuda.current_stream()`` behind PyTorch's work and returns without waiting for it;
``sync=True`` and ``torch_stream=False`` wait as before. Skipped, saying why, without
PyTorch or a CUDA device.

    python -m pytest -q iris-python/tests/gpu/test_torch_streams.py
"""

import time

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

import iris_rs  # noqa: E402

N = 1 << 20
# About 50 ms of device time before each call (the GPU's clock counts cycles).
SLEEP_CYCLES = int(torch.cuda.get_device_properties(0).clock_rate * 1e3 * 0.05)


def put_after_sleep(ctx, src, dst, **kw):
    """Queues a long sleep then a write of `src` on PyTorch's stream, then `ctx.put`;
    returns how long the put call took on the host, in ms."""
    torch.cuda._sleep(SLEEP_CYCLES)
    src.add_(1.0)
    t0 = time.perf_counter()
    ctx.put(src, dst, peer=0, **kw)
    return (time.perf_counter() - t0) * 1e3


@pytest.mark.parametrize("on_side_stream", [False, True])
def test_put_runs_on_torch_s_stream_without_waiting(on_side_stream):
    with iris_rs.Context(heap_bytes=64 << 20) as ctx:
        buf = ctx.zeros(N, "float32")
        view = torch.as_tensor(buf, device="cuda")  # iris memory, seen by PyTorch
        stream = torch.cuda.Stream() if on_side_stream else torch.cuda.current_stream()
        with torch.cuda.stream(stream):
            src = torch.zeros(N, device="cuda")
            waits = []
            for step in range(1, 21):
                waits.append(put_after_sleep(ctx, src, buf))
                # PyTorch reads what iris wrote, on the same stream: ordered, no sync.
                assert view[-1].item() == float(step), f"step {step}: iris's put was not ordered after PyTorch's add"
                assert torch.equal(view, src)
        # The put returned before the 50 ms sleep in front of it ended.
        waits.sort()
        assert waits[len(waits) // 2] < 25.0, f"put waited for PyTorch's stream: {waits}"
        ctx.synchronize()


def test_sync_and_torch_stream_false_wait_as_before():
    for kw, ctx_kw in (({"sync": True}, {}), ({}, {"torch_stream": False})):
        with iris_rs.Context(heap_bytes=64 << 20, **ctx_kw) as ctx:
            buf = ctx.zeros(N, "float32")
            src = torch.zeros(N, device="cuda")
            waits = [put_after_sleep(ctx, src, buf, **kw) for _ in range(5)]
            assert min(waits) > 30.0, f"{kw} {ctx_kw}: the call did not wait: {waits}"
            assert torch.equal(torch.as_tensor(buf, device="cuda"), src)
