"""iris's collectives as PyTorch operators: ``torch.ops.iris.all_reduce``,
``torch.ops.iris.all_gather`` and ``torch.ops.iris.put``, with fake implementations, so
they run inside ``torch.compile``d code like any torch op (on PyTorch's current stream,
without waiting).

    import iris_rs, iris_rs.torch_ops as iris_ops
    ctx = iris_rs.Context()
    x = iris_ops.tensor(ctx, ctx.zeros(n, "float32"))      # iris memory as a torch.Tensor
    out = iris_ops.tensor(ctx, ctx.zeros(n, "float32"))
    torch.ops.iris.all_reduce(x, out, "sum")                 # eager or under torch.compile

The operators take tensors, so the tensors must be views of symmetric buffers the
module knows: made by :func:`tensor` (iris's heap) or :func:`adopt` (PyTorch symmetric
memory). Any other tensor is refused with :class:`iris_rs.IrisError` naming it.
"""

import torch

from . import IrisError

# (data_ptr, numel, dtype) of a registered tensor -> (context, symmetric buffer).
_known = {}


def _key(t):
    return (t.data_ptr(), t.numel(), t.dtype)


def tensor(ctx, buf):
    """A ``torch.Tensor`` viewing symmetric buffer ``buf`` of ``ctx`` (no copy), usable
    with the ``torch.ops.iris`` operators."""
    device = "cpu" if ctx.backend == "cpu" else f"cuda:{ctx.device}"
    t = torch.as_tensor(buf, device=device)
    _known[_key(t)] = (ctx, buf)
    return t


def adopt(ctx, t, handle):
    """``ctx.adopt(t, handle)`` (PyTorch symmetric memory), remembered so that ``t`` can be
    passed to the ``torch.ops.iris`` operators; returns the symmetric buffer."""
    buf = ctx.adopt(t, handle)
    _known[_key(t)] = (ctx, buf)
    return buf


def _gpu(ctx):
    """Whether the operators run on PyTorch's current stream (every GPU backend)."""
    return ctx.backend != "cpu"


def _lookup(t, what):
    try:
        return _known[_key(t)]
    except KeyError:
        raise IrisError(
            f"torch.ops.iris: {what} is not a view of a symmetric buffer (make it with "
            "iris_rs.torch_ops.tensor or adopt)"
        ) from None


@torch.library.custom_op("iris::all_reduce", mutates_args=("output",))
def all_reduce(input: torch.Tensor, output: torch.Tensor, op: str = "sum", algo: str = "one_shot") -> None:
    """The element-wise ``op`` of every rank's ``input`` into every rank's ``output``."""
    ctx, bi = _lookup(input, "input")
    _, bo = _lookup(output, "output")
    ctx.all_reduce(bi, bo, op=op, algo=algo, on_torch_stream=_gpu(ctx))


@all_reduce.register_fake
def _(input, output, op="sum", algo="one_shot"):
    return None


@torch.library.custom_op("iris::all_gather", mutates_args=("output",))
def all_gather(input: torch.Tensor, output: torch.Tensor, algo: str = "push") -> None:
    """Every rank's ``input``, in rank order, into every rank's ``output``."""
    ctx, bi = _lookup(input, "input")
    _, bo = _lookup(output, "output")
    ctx.all_gather(bi, bo, algo=algo, on_torch_stream=_gpu(ctx))


@all_gather.register_fake
def _(input, output, algo="push"):
    return None


@torch.library.custom_op("iris::put", mutates_args=("dst",))
def put(src: torch.Tensor, dst: torch.Tensor, peer: int, offset: int = 0) -> None:
    """``src`` into rank ``peer``'s copy of ``dst`` from element ``offset`` on."""
    ctx, bd = _lookup(dst, "dst")
    ctx.put(src, bd, peer=peer, offset=offset, on_torch_stream=_gpu(ctx))


@put.register_fake
def _(src, dst, peer, offset=0):
    return None
