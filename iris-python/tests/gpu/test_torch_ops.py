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


def fused_and_moe(a, b, bt, staging, c_ag, c_rs, c_ar, moe, x, idx, recv, weights, out, k):
    torch.ops.iris.all_gather_matmul(a, b, c_ag, k)
    torch.ops.iris.matmul_reduce_scatter(a, bt, staging, c_rs, k, True)
    torch.ops.iris.matmul_all_reduce(a, b, staging, c_ar, k)
    torch.ops.iris.moe_dispatch(moe, x, idx, recv)
    torch.ops.iris.moe_combine(moe, recv, idx, weights, out)
    return torch.cat([c_ag, c_rs, c_ar, out.float()]) * 1.0


def test_fused_gemms_and_moe_on_bfloat16_views_match_eager_and_the_reference():
    with iris_rs.Context(heap_bytes=256 << 20) as ctx:
        if ctx.world_size != 1:
            pytest.skip("the reference below is for a world of one rank")
        m, n, k = 128, 256, 64
        t = lambda count, dtype: iris_ops.tensor(ctx, ctx.zeros(count, dtype))  # noqa: E731
        # bfloat16 buffers have no array-interface type: tensor() views their bits.
        a, b, bt = t(m * k, "bfloat16"), t(k * n, "bfloat16"), t(n * k, "bfloat16")
        assert a.dtype == torch.bfloat16 and a.numel() == m * k
        staging, c_ag, c_rs, c_ar = (t(m * n, "float32") for _ in range(4))
        tokens, hidden, top_k, experts = 8, 64, 2, 4
        moe = ctx.moe(tokens, hidden, top_k, experts, tokens * top_k)
        x, recv, out = t(tokens * hidden, "bfloat16"), t(tokens * top_k * hidden, "bfloat16"), t(tokens * hidden, "bfloat16")
        idx, weights = t(tokens * top_k, "int64"), t(tokens * top_k, "float32")
        dev = a.device
        # Small integers: every product and sum is exact in bfloat16 inputs and float32 sums.
        am = (torch.arange(m * k, device=dev) % 7 - 3).to(torch.bfloat16)
        bm = (torch.arange(k * n, device=dev) % 5 - 2).to(torch.bfloat16)
        xs = (torch.arange(tokens * hidden, device=dev) % 17 - 8).to(torch.bfloat16)
        ids = torch.tensor([[i % experts, (i + 1) % experts] for i in range(tokens)], device=dev).flatten()
        want_c = am.float().view(m, k) @ bm.float().view(k, n)
        want_out = (xs.float() * 0.75).to(torch.bfloat16)
        results = []
        for fn in (fused_and_moe, torch.compile(fused_and_moe)):
            a.copy_(am)
            b.copy_(bm)
            bt.copy_(bm.view(k, n).t().contiguous().flatten())
            x.copy_(xs)
            idx.copy_(ids)
            weights.copy_(torch.tensor([0.25, 0.5], device=dev).repeat(tokens))
            for o in (c_ag, c_rs, c_ar, recv, out):
                o.zero_()
            results.append(fn(a, b, bt, staging, c_ag, c_rs, c_ar, moe, x, idx, recv, weights, out, k).clone())
            ctx.synchronize()
            ctx.moe_check(moe)
            for c in (c_ag, c_rs, c_ar):
                assert torch.equal(c.view(m, n), want_c)
            assert torch.equal(out, want_out), (out[:8], want_out[:8])
        assert torch.equal(results[0], results[1])
