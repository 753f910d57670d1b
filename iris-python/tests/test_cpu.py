"""The extension on the cpu backend: no GPU, no PyTorch. Argument checks, errors, iris's
own heap, adoption through a handle-shaped object, and two ranks as processes."""

import json
import os
import subprocess
import sys
import textwrap
import uuid

import numpy as np
import pytest

import iris_rs
from iris_rs import IrisError


@pytest.fixture(scope="module")
def ctx():
    with iris_rs.Context(backend="cpu", heap_bytes=1 << 20) as c:
        yield c


class Handle:
    """What torch.distributed._symmetric_memory.rendezvous returns, as adopt reads it."""

    def __init__(self, ptrs, rank=0, world_size=1, buffer_size=None):
        self.buffer_ptrs, self.rank, self.world_size = ptrs, rank, world_size
        if buffer_size is not None:
            self.buffer_size = buffer_size


def ptr(a):
    return a.__array_interface__["data"][0]


def test_context(ctx):
    assert (ctx.rank, ctx.world_size, ctx.backend) == (0, 1, "cpu")
    assert ctx.provider == "heap" and not ctx.is_process_world
    assert issubclass(IrisError, RuntimeError)
    assert "Context(rank=0" in repr(ctx)


def test_heap_buffers_and_views(ctx):
    a = iris_rs.from_numpy(ctx, np.arange(16, dtype=np.float32))
    assert (a.numel, a.dtype, a.nbytes, a.provider, len(a)) == (16, "float32", 64, "heap", 16)
    assert a.data_ptr() == a.peer_ptrs[0] != 0
    view = np.asarray(a)  # zero copy
    view[0] = 42.0
    assert iris_rs.to_numpy(a)[0] == 42.0
    a.write(np.full(16, 3, dtype=np.float32).tobytes())
    assert (view == 3).all()
    b = ctx.zeros(4, "int64", provider="ipc")
    assert b.provider == "ipc" and (np.asarray(b) == 0).all()
    a.free()
    a.free()  # idempotent
    assert a.freed
    with pytest.raises(IrisError, match="was freed"):
        a.read()


@pytest.mark.parametrize("dtype", ["float32", "float64", "int32", "uint32", "int64", "uint64", "float16"])
def test_collectives_and_put(ctx, dtype):
    data = (np.arange(37) % 11).astype(dtype)
    x = iris_rs.from_numpy(ctx, data)
    out, gathered = ctx.zeros(37, dtype), ctx.zeros(37, dtype)
    for algo in ("one_shot", "two_shot"):
        ctx.all_reduce(x, out, op="max", algo=algo)
        assert (np.asarray(out) == data).all()
    for algo in ("push", "pull"):
        ctx.all_gather(x, gathered, algo=algo)
        assert (np.asarray(gathered) == data).all()
    scattered, broadcast = ctx.zeros(37, dtype), ctx.zeros(37, dtype)
    ctx.reduce_scatter(x, scattered, op="min")  # one rank: the whole input is its chunk
    assert (np.asarray(scattered) == data).all()
    ctx.broadcast(x, broadcast, root=0)
    assert (np.asarray(broadcast) == data).all()
    src = np.full(5, 9, dtype=dtype)  # an ordinary array: read through its raw address
    ctx.put(src, out, peer=0, offset=30)
    assert (np.asarray(out)[30:35] == 9).all() and (np.asarray(out)[:30] == data[:30]).all()
    ctx.put(x, gathered, peer=0)  # a symmetric buffer as the source
    ctx.synchronize()


def test_argument_errors(ctx):
    a, b = ctx.zeros(8), ctx.zeros(8)
    cases = [
        (lambda: ctx.zeros(4, "complex64"), "not supported"),
        (lambda: ctx.zeros(4, provider="external"), "adopt"),
        (lambda: ctx.zeros(4, provider="nvshmem"), "shmem"),
        (lambda: ctx.zeros(4, provider="shmem"), "no SHMEM engine runs on the cpu backend"),
        (lambda: ctx.from_bytes(b"abc", "float32"), "whole number"),
        (lambda: a.write(b"1234"), "got 4 bytes"),
        (lambda: ctx.all_reduce(a, a), "same buffer"),
        (lambda: ctx.all_reduce(a, ctx.zeros(8, "int32")), "input holds float32"),
        (lambda: ctx.all_reduce(a, b, op="prod"), "sum, min or max"),
        (lambda: ctx.all_reduce(a, b, algo="ring"), "one_shot, two_shot or auto"),
        (lambda: ctx.all_gather(a, b, algo="ring"), "push, pull or auto"),
        (lambda: ctx.all_gather(a, ctx.zeros(4)), "all_gather"),  # needs world * n
        (lambda: ctx.reduce_scatter(a, b, op="prod"), "reduce_scatter: op must be"),
        (lambda: ctx.reduce_scatter(a, ctx.zeros(4)), "reduce_scatter"),
        (lambda: ctx.broadcast(a, b, root=1), "root 1"),
        (lambda: ctx.all_to_all_v(a, ctx.zeros(1), b, ctx.zeros(1)), "uint64"),
        (lambda: ctx.all_to_all_v(a, ctx.zeros(2, "uint64"), b, ctx.zeros(2, "uint64")), "one per rank"),
        (lambda: ctx.all_reduce_rmsnorm(a, b, ctx.zeros(3), ctx.zeros(4), algo="x"), "one_shot, two_shot or auto"),
        (lambda: ctx.all_reduce_rmsnorm(a, b, ctx.zeros(3), ctx.zeros(4)), "whole rows"),
        (lambda: ctx.all_reduce_rmsnorm(*(ctx.zeros(4, "int32") for _ in range(4))), "float32, float16 or bfloat16"),
        (lambda: ctx.moe(4, 8, 2, 0, 8), "spread evenly"),
        (lambda: ctx.moe_dispatch(999, a, ctx.zeros(8, "int64"), ctx.zeros(4)), "does not exist"),
        (lambda: ctx.moe_dispatch(ctx.moe(4, 8, 2, 2, 8), a, ctx.zeros(8), ctx.zeros(64)), "int64"),
        (lambda: ctx.all_gather_matmul(a, b, ctx.zeros(4), 64), "bfloat16 or float16"),
        (lambda: ctx.all_gather_matmul(ctx.zeros(100, "float16"), ctx.zeros(64, "float16"), ctx.zeros(4), 64), "whole rows of k"),
        (lambda: ctx.put(np.zeros(4, np.int32), a, peer=0), "src holds int32"),
        (lambda: ctx.put(np.zeros(4, np.float32), a, peer=1), "peer 1"),
        (lambda: ctx.put(np.zeros(4, np.float32), a, peer=0, offset=6), "do not fit"),
        (lambda: ctx.put(np.zeros(8, np.float32)[::2], a, peer=0), "not C-contiguous"),
        (lambda: ctx.put(np.zeros(4, np.uint8), a, peer=0), "not supported"),
        (lambda: ctx.put("text", a, peer=0), "expected a tensor"),
        (lambda: iris_rs.Context(backend="tpu"), "unknown backend"),
        (lambda: iris_rs.Context(backend="cpu", timeout=-1), "timeout"),
    ]
    for call, text in cases:
        with pytest.raises(IrisError, match=text):
            call()
            print("did not raise:", text)


def test_adopt_checks(ctx):
    mem = np.arange(64, dtype=np.float32)
    buf = ctx.adopt(mem, Handle([ptr(mem)], buffer_size=mem.nbytes))
    assert buf.provider == "external" and buf.adopted is mem
    assert buf.peer_ptrs == [ptr(mem)]
    # a view with an offset: its copies start at the same offset
    tail = mem[16:]
    view = ctx.adopt(tail, Handle([ptr(mem)], buffer_size=mem.nbytes))
    assert view.peer_ptrs == [ptr(mem) + 64]
    out = ctx.zeros(48)
    ctx.all_reduce(view, out)
    assert (np.asarray(out) == tail).all()
    ctx.put(np.full(4, -1, np.float32), buf, peer=0)
    assert (mem[:4] == -1).all()
    other = np.zeros(64, dtype=np.float32)
    refusals = [
        (lambda: ctx.adopt(mem), "not rendezvoused"),
        (lambda: ctx.adopt(mem, None), "not rendezvoused"),
        (lambda: ctx.adopt(mem, object()), "no buffer_ptrs"),
        (lambda: ctx.adopt(other, Handle([ptr(mem)], buffer_size=mem.nbytes)), "not rendezvoused with this handle"),
        (lambda: ctx.adopt(tail, Handle([ptr(mem)])), "not rendezvoused with this handle"),
        (lambda: ctx.adopt(mem, Handle([ptr(mem)], buffer_size=16)), "not rendezvoused with this handle"),
        (lambda: ctx.adopt(mem, Handle([ptr(mem)], rank=1, world_size=2)), "rank 1 of a group of 2"),
        (lambda: ctx.adopt(mem, Handle([ptr(mem), 0])), "2 buffer_ptrs"),
        (lambda: ctx.adopt(mem[:0], Handle([ptr(mem)])), "empty"),
        (lambda: ctx.adopt(mem.reshape(8, 8).T, Handle([ptr(mem)])), "not C-contiguous"),
        (lambda: ctx.adopt(mem.view(np.uint8), Handle([ptr(mem)])), "not supported"),
        (lambda: ctx.adopt(FakeCudaTensor(), Handle([1])), "GPU memory"),
    ]
    for call, text in refusals:
        with pytest.raises(IrisError, match=text):
            call()
    buf.free()
    view.free()


class FakeCudaTensor:
    """A tensor-shaped object that says it lives on a GPU."""

    class device:
        type, index = "cuda", 0

    dtype = "torch.float32"

    def data_ptr(self):
        return 4096

    def numel(self):
        return 4

    def is_contiguous(self):
        return True


def test_trace(tmp_path, monkeypatch):
    """IRIS_TRACE reaches contexts made from Python: the world's trace.json holds the call."""
    monkeypatch.setenv("IRIS_TRACE", str(tmp_path))
    with iris_rs.Context(backend="cpu", heap_bytes=1 << 20) as c:
        x = iris_rs.from_numpy(c, np.ones(64, dtype=np.float32))
        out = c.zeros(64, "float32")
        c.all_reduce(x, out, op="sum", algo="one_shot")
    trace = json.loads((tmp_path / "trace.json").read_text())
    calls = [e for e in trace["traceEvents"] if e.get("name") == "ccl::all_reduce"]
    assert calls and all(e["pid"] == 0 for e in calls)


def test_other_context_and_closed():
    with iris_rs.Context(backend="cpu", heap_bytes=1 << 20) as one:
        a = one.zeros(4)
        with iris_rs.Context(backend="cpu", heap_bytes=1 << 20) as two:
            with pytest.raises(IrisError, match="another Context"):
                two.put(np.zeros(4, np.float32), a, peer=0)
    assert one.closed
    with pytest.raises(IrisError, match="closed"):
        one.zeros(4)


RANK_SCRIPT = textwrap.dedent(
    """
    import numpy as np, iris_rs
    ctx = iris_rs.Context(backend="cpu", heap_bytes=1 << 20, provider="{provider}")
    r, w = ctx.rank, ctx.world_size
    x = iris_rs.from_numpy(ctx, np.arange(10, dtype=np.float32) + 100 * r)
    s, g = ctx.zeros(10), ctx.zeros(10 * w)
    ctx.all_reduce(x, s)
    ctx.all_gather(x, g, algo="pull")
    ctx.put(np.full(2, r, np.int64), m := ctx.zeros(2 * w, "int64"), peer=(r + 1) % w, offset=2 * r)
    ctx.barrier()
    expect = sum(np.arange(10, dtype=np.float32) + 100 * k for k in range(w))
    assert (np.asarray(s) == expect).all(), np.asarray(s)
    assert (np.asarray(g) == np.concatenate([np.arange(10) + 100 * k for k in range(w)])).all()
    prev = (r - 1) % w
    assert (np.asarray(m)[2 * prev:2 * prev + 2] == prev).all(), np.asarray(m)
    # all_to_all_v: rank r sends r + p + 1 elements to rank p, counts read on the device.
    sc = iris_rs.from_numpy(ctx, np.array([r + p + 1 for p in range(w)], np.uint64))
    rc = ctx.zeros(w, "uint64")
    send = iris_rs.from_numpy(ctx, np.arange(20, dtype=np.float32) + 1000 * r)
    got = ctx.zeros(20)
    ctx.all_to_all_v(send, sc, got, rc)
    want = []
    for s in range(w):
        start = sum(s + q + 1 for q in range(r))
        want += list(np.arange(start, start + s + r + 1, dtype=np.float32) + 1000 * s)
    assert (np.asarray(rc) == [s + r + 1 for s in range(w)]).all(), np.asarray(rc)
    assert (np.asarray(got)[:len(want)] == want).all(), np.asarray(got)
    # all_reduce_rmsnorm: rows of 8; inputs r + 1, residual 1, so every sum is the same.
    xin = iris_rs.from_numpy(ctx, np.full(16, r + 1, np.float32))
    res = iris_rs.from_numpy(ctx, np.ones(16, np.float32))
    gam = iris_rs.from_numpy(ctx, np.full(8, 2, np.float32))
    y = ctx.zeros(16)
    ctx.all_reduce_rmsnorm(xin, res, gam, y, eps=0.0, algo="two_shot")
    assert (np.asarray(res) == w * (w + 1) / 2 + 1).all(), np.asarray(res)
    assert np.allclose(np.asarray(y), 2.0), np.asarray(y)
    # MoE: 4 tokens of 8 a rank, each to experts (t, t + 1) of 2 * w; combined with
    # weights 0.25 and 0.5 from the rows as dispatched (the experts do nothing).
    moe = ctx.moe(tokens=4, hidden=8, top_k=2, experts=2 * w, capacity=8 * w)
    tok = iris_rs.from_numpy(ctx, np.repeat(np.arange(4, dtype=np.float32) + 10 * r, 8))
    ids = iris_rs.from_numpy(ctx, np.array([[t % (2 * w), (t + 1) % (2 * w)] for t in range(4)], np.int64).ravel())
    recv = ctx.zeros(8 * w * 8)
    ctx.moe_dispatch(moe, tok, ids, recv)
    ctx.moe_check(moe)
    mine = sum(1 for t in range(4) for e in (t, t + 1) if e % (2 * w) // 2 == r)  # per source
    assert sum(ctx.moe_recv_counts(moe)) == w * mine, ctx.moe_recv_counts(moe)
    wts = iris_rs.from_numpy(ctx, np.tile(np.array([0.25, 0.5], np.float32), 4))
    out = ctx.zeros(32)
    ctx.moe_combine(moe, recv, ids, wts, out)
    assert np.allclose(np.asarray(out), np.repeat(np.arange(4, dtype=np.float32) + 10 * r, 8) * 0.75), np.asarray(out)
    # all_gather_matmul: 128 rows of ones a rank, times B = 2 (k = 64): every entry 128.
    a = ctx.zeros(128 * 64, "float16")
    a.write(np.ones(128 * 64, np.float16).tobytes())
    bm = ctx.zeros(64 * 128, "float16")
    bm.write(np.full(64 * 128, 2, np.float16).tobytes())
    cm = ctx.zeros(w * 128 * 128)
    ctx.all_gather_matmul(a, bm, cm, 64)
    assert (np.asarray(cm) == 128).all(), np.asarray(cm)[:4]
    # matmul_all_reduce with Bᵀ (256 x 64 of twos): each rank's partial is 128, summed.
    ar = ctx.zeros(w * 128 * 64, "float16")
    ar.write(np.ones(w * 128 * 64, np.float16).tobytes())
    bt = ctx.zeros(256 * 64, "float16")
    bt.write(np.full(256 * 64, 2, np.float16).tobytes())
    st = ctx.zeros(w * 128 * 256)
    cw = ctx.zeros(w * 128 * 256)
    ctx.matmul_all_reduce(ar, bt, st, cw, 64, transposed=True)
    assert (np.asarray(cw) == 128 * w).all(), np.asarray(cw)[:4]
    print("rank", r, "ok", ctx.is_process_world)
    ctx.close()
    """
)


@pytest.mark.parametrize("provider", ["heap", "ipc"])
def test_two_processes(provider):
    job = uuid.uuid4().hex
    procs = []
    for rank in range(2):
        env = dict(os.environ, IRIS_RANK=str(rank), IRIS_WORLD_SIZE="2", IRIS_LOCAL_RANK=str(rank),
                   IRIS_LOCAL_WORLD_SIZE="2", IRIS_JOB_ID=job, IRIS_TIMEOUT="60")
        procs.append(subprocess.Popen([sys.executable, "-c", RANK_SCRIPT.format(provider=provider)],
                                      env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    outs = [p.communicate(timeout=120)[0] for p in procs]
    for rank, (p, out) in enumerate(zip(procs, outs)):
        assert p.returncode == 0, out
        assert f"rank {rank} ok True" in out, out
