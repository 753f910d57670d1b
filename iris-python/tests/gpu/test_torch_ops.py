"""``torch.ops.iris`` (GPU, PyTorch): the operators give the same results eagerly and
inside ``torch.compile``. Skipped, saying why, without PyTorch or a CUDA device.

    python -m pytest -q iris-python/tests/gpu/test_torch_ops.py
"""

import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

import iris_rs  # noqa: E402
import iris_rs.torch_ops as iris_ops  # noqa: E402

N = 4096


def step(x, out, gathered):
    # The operators read and write the symmetric tensors themselves (an intermediate
    # PyTorch made, such as `x * 2`, is not symmetric memory and would be refused).
    torch.ops.iris.all_reduce(x, out, "sum")
    torch.ops.iris.all_gather(out, gathered)
    return gathered * 2.0 + 1.0


def test_compiled_function_with_iris_ops_matches_eager():
    with iris_rs.Context(heap_bytes=64 << 20) as ctx:
        x = iris_ops.tensor(ctx, ctx.zeros(N, "float32"))
        out = iris_ops.tensor(ctx, ctx.zeros(N, "float32"))
        gathered = iris_ops.tensor(ctx, ctx.zeros(N * ctx.world_size, "float32"))
        compiled = torch.compile(step)
        for i in range(3):
            x.copy_(torch.arange(N, device=x.device, dtype=torch.float32) + i)
            eager = step(x, out, gathered).clone()
            out.zero_()
            gathered.zero_()
            got = compiled(x, out, gathered)
            want = (torch.arange(N, device=x.device, dtype=torch.float32) + i) * 2.0 + 1.0
            assert torch.equal(eager, want)
            assert torch.equal(got, eager)
        ctx.synchronize()


def test_a_tensor_iris_does_not_know_is_refused():
    with iris_rs.Context(heap_bytes=64 << 20) as ctx:
        out = iris_ops.tensor(ctx, ctx.zeros(N, "float32"))
        stranger = torch.zeros(N, device=out.device)
        with pytest.raises(iris_rs.IrisError, match="not a view of a symmetric buffer"):
            torch.ops.iris.all_reduce(stranger, out, "sum")


def newer_ops(x, residual, gamma, y, send, counts, got, got_counts, scattered, copied):
    torch.ops.iris.all_reduce_rmsnorm(x, residual, gamma, y, 1e-6, "one_shot")
    torch.ops.iris.all_to_all_v(send, counts, got, got_counts)
    torch.ops.iris.reduce_scatter(got, scattered, "sum")
    torch.ops.iris.broadcast(scattered, copied, 0)
    return y * 1.0 + copied.sum()


def test_the_newer_operators_match_eager_and_the_reference():
    with iris_rs.Context(heap_bytes=64 << 20) as ctx:
        w = ctx.world_size
        rows, hidden = 4, 256
        t = lambda n, dtype="float32": iris_ops.tensor(ctx, ctx.zeros(n, dtype))  # noqa: E731
        x, residual, y = t(rows * hidden, "float16"), t(rows * hidden, "float16"), t(rows * hidden, "float16")
        gamma = t(hidden, "float16")
        send, got = t(64 * w), t(64 * w)
        counts, got_counts = t(w, "uint64"), t(w, "uint64")
        scattered, copied = t(64), t(64)
        compiled = torch.compile(newer_ops)
        results = []
        for fn in (newer_ops, compiled):
            x.copy_(torch.linspace(-1, 1, rows * hidden, device=x.device).to(torch.float16))
            residual.fill_(0.5)
            gamma.fill_(2.0)
            send.copy_(torch.arange(64 * w, device=x.device, dtype=torch.float32))
            counts.fill_(64)
            results.append(fn(x, residual, gamma, y, send, counts, got, got_counts, scattered, copied).clone())
            ctx.synchronize()
            # The reference for one rank: the norm of x + 0.5, times 2.
            r = (torch.linspace(-1, 1, rows * hidden, device=x.device).to(torch.float16).float() + 0.5).to(torch.float16).float().view(rows, hidden)
            want = (r * torch.rsqrt(r.pow(2).mean(-1, keepdim=True) + 1e-6) * 2.0).to(torch.float16).flatten()
            if w == 1:
                assert torch.equal(residual.view(rows, hidden).float(), r)
                assert torch.allclose(y.float(), want.float(), rtol=2e-2, atol=2e-2)
                assert torch.equal(got, send) and got_counts.tolist() == [64]
                assert torch.equal(scattered, send) and torch.equal(copied, send)
        assert torch.allclose(results[0].float(), results[1].float())
