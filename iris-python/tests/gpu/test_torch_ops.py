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
