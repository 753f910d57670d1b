"""iris's collectives as PyTorch operators: ``torch.ops.iris.all_reduce``,
``all_gather``, ``put``, ``reduce_scatter``, ``broadcast``, ``all_to_all_v``,
``all_reduce_rmsnorm``, the fused GEMMs (``all_gather_matmul``, ``matmul_reduce_scatter``,
``matmul_all_reduce``) and the MoE exchange (``moe_dispatch``, ``moe_combine``, with the id
``ctx.moe(...)`` returned), with fake implementations, so
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

# (data_ptr, numel, dtype) of a registered tensor -> (context, symmetric buffer, whether
# the operators run on PyTorch's stream: every GPU backend).
_known = {}


def _key(t):
    return (t.data_ptr(), t.numel(), t.dtype)


class _Bits:
    """``buf``'s memory as 16-bit integers through the array interfaces: ``bfloat16`` has
    no array-interface type string, so a ``bfloat16`` view is made from this one with
    ``Tensor.view(torch.bfloat16)`` (the same bytes). Holds ``buf``, so the view keeps the
    buffer alive as a direct view does."""

    def __init__(self, buf, gpu):
        self.buf = buf
        interface = {
            "shape": (buf.numel,),
            "typestr": "<i2",
            "data": (buf.data_ptr(), False),
            "strides": None,
            "version": 2 if gpu else 3,
        }
        setattr(self, "__cuda_array_interface__" if gpu else "__array_interface__", interface)


def tensor(ctx, buf):
    """A ``torch.Tensor`` viewing symmetric buffer ``buf`` of ``ctx`` (no copy), usable
    with the ``torch.ops.iris`` operators; ``bfloat16`` buffers included."""
    gpu = ctx.backend != "cpu"
    source = _Bits(buf, gpu) if buf.dtype == "bfloat16" else buf
    if gpu:
        t = torch.as_tensor(source, device=f"cuda:{ctx.device}")
    else:
        import numpy  # the cpu backend's buffers offer the NumPy array interface

        t = torch.from_numpy(numpy.asarray(source))
    if source is not buf:
        t = t.view(torch.bfloat16)
    _known[_key(t)] = (ctx, buf, ctx.backend != "cpu")
    return t


def adopt(ctx, t, handle):
    """``ctx.adopt(t, handle)`` (PyTorch symmetric memory), remembered so that ``t`` can be
    passed to the ``torch.ops.iris`` operators; returns the symmetric buffer."""
    buf = ctx.adopt(t, handle)
    _known[_key(t)] = (ctx, buf, ctx.backend != "cpu")
    return buf


def _lookup(t, what):
    try:
        return _known[_key(t)]
    except KeyError:
        raise IrisError(
            f"torch.ops.iris: {what} is not a view of a symmetric buffer (make it with "
            "iris_rs.torch_ops.tensor or adopt; under torch.compile use the default inductor "
            "backend, which hands the operators the tensors themselves: aot_eager passes a copy)"
        ) from None


# The operators are defined by schema and implemented with `Library.impl`, not
# `torch.library.custom_op`: the dispatcher then calls the Python function directly, which
# costs a few microseconds per call instead of tens (these are latency-bound collectives).
# `Tensor(a!)` marks what each one writes, so `torch.compile` functionalizes them.
_lib = torch.library.Library("iris", "DEF")
_lib.define("all_reduce(Tensor input, Tensor(a!) output, str op='sum', str algo='one_shot') -> ()")
_lib.define("all_gather(Tensor input, Tensor(a!) output, str algo='push') -> ()")
_lib.define("put(Tensor src, Tensor(a!) dst, int peer, int offset=0) -> ()")
_lib.define("reduce_scatter(Tensor input, Tensor(a!) output, str op='sum') -> ()")
_lib.define("broadcast(Tensor input, Tensor(a!) output, int root=0) -> ()")
_lib.define(
    "all_to_all_v(Tensor input, Tensor send_counts, Tensor(a!) output, Tensor(b!) recv_counts) -> ()"
)
_lib.define(
    "all_reduce_rmsnorm(Tensor input, Tensor(a!) residual, Tensor gamma, Tensor(b!) output, "
    "float eps=1e-6, str algo='one_shot') -> ()"
)
_lib.define("all_gather_matmul(Tensor a, Tensor b, Tensor(a!) c, int k, bool transposed=False) -> ()")
_lib.define(
    "matmul_reduce_scatter(Tensor a, Tensor b, Tensor(a!) staging, Tensor(b!) c, int k, "
    "bool transposed=False) -> ()"
)
_lib.define(
    "matmul_all_reduce(Tensor a, Tensor b, Tensor(a!) staging, Tensor(b!) c, int k, "
    "bool transposed=False) -> ()"
)
_lib.define("moe_dispatch(int moe, Tensor x, Tensor idx, Tensor(a!) recv) -> ()")
_lib.define(
    "moe_combine(int moe, Tensor expert_out, Tensor idx, Tensor weights, Tensor(a!) out) -> ()"
)


def all_reduce(input, output, op="sum", algo="one_shot"):
    """``torch.ops.iris.all_reduce``: the element-wise ``op`` of every rank's ``input``
    into every rank's ``output``."""
    ctx, bi, gpu = _lookup(input, "input")
    bo = _lookup(output, "output")[1]
    ctx.all_reduce(bi, bo, op, algo, None, gpu)


def all_gather(input, output, algo="push"):
    """``torch.ops.iris.all_gather``: every rank's ``input``, in rank order, into every
    rank's ``output``."""
    ctx, bi, gpu = _lookup(input, "input")
    bo = _lookup(output, "output")[1]
    ctx.all_gather(bi, bo, algo, None, gpu)


def put(src, dst, peer, offset=0):
    """``torch.ops.iris.put``: ``src`` into rank ``peer``'s copy of ``dst`` from element
    ``offset`` on."""
    ctx, bd, gpu = _lookup(dst, "dst")
    ctx.put(src, bd, peer, offset, None, gpu)


def reduce_scatter(input, output, op="sum"):
    """``torch.ops.iris.reduce_scatter``: chunk ``r`` of every rank's ``input``, combined
    with ``op`` in rank order, into rank ``r``'s ``output``."""
    ctx, bi, gpu = _lookup(input, "input")
    bo = _lookup(output, "output")[1]
    ctx.reduce_scatter(bi, bo, op, None, gpu)


def broadcast(input, output, root=0):
    """``torch.ops.iris.broadcast``: rank ``root``'s ``input`` into every rank's
    ``output``."""
    ctx, bi, gpu = _lookup(input, "input")
    bo = _lookup(output, "output")[1]
    ctx.broadcast(bi, bo, root, None, gpu)


def all_to_all_v(input, send_counts, output, recv_counts):
    """``torch.ops.iris.all_to_all_v``: ``send_counts[p]`` elements of ``input`` (peer
    after peer) to each rank ``p``, received source after source into ``output``;
    ``recv_counts`` set on the device (uint64 counts, read when the kernel runs)."""
    ctx, bi, gpu = _lookup(input, "input")
    bs, bo, br = (_lookup(t, n)[1] for t, n in ((send_counts, "send_counts"), (output, "output"), (recv_counts, "recv_counts")))
    ctx.all_to_all_v(bi, bs, bo, br, None, gpu)


def all_reduce_rmsnorm(input, residual, gamma, output, eps=1e-6, algo="one_shot"):
    """``torch.ops.iris.all_reduce_rmsnorm``: ``residual += all_reduce(input)``, then
    ``output = rmsnorm(residual) * gamma`` per row of ``gamma.numel()``, in one kernel."""
    ctx, bi, gpu = _lookup(input, "input")
    br, bg, bo = (_lookup(t, n)[1] for t, n in ((residual, "residual"), (gamma, "gamma"), (output, "output")))
    ctx.all_reduce_rmsnorm(bi, br, bg, bo, eps, algo, None, gpu)


def _buffers(*named):
    """The context of the first tensor and the symmetric buffer of each ``(tensor, name)``."""
    found = [_lookup(t, n) for t, n in named]
    return found[0][0], found[0][2], [f[1] for f in found]


def all_gather_matmul(a, b, c, k, transposed=False):
    """``torch.ops.iris.all_gather_matmul``: ``c`` (float32, ``world * m x n``) = every
    rank's ``a`` (``m x k``, bfloat16 or float16) times this rank's ``b`` (``k x n``; Bᵀ,
    ``n x k``, with ``transposed``); the GEMM on this rank's own rows runs while the
    peers arrive."""
    ctx, gpu, (ba, bb, bc) = _buffers((a, "a"), (b, "b"), (c, "c"))
    ctx.all_gather_matmul(ba, bb, bc, k, transposed, None, gpu)


def matmul_reduce_scatter(a, b, staging, c, k, transposed=False):
    """``torch.ops.iris.matmul_reduce_scatter``: every rank's ``a @ b``, summed in rank
    order; rank ``r`` gets its rows in ``c`` (float32); ``staging`` float32, ``M x n``."""
    ctx, gpu, (ba, bb, bs, bc) = _buffers((a, "a"), (b, "b"), (staging, "staging"), (c, "c"))
    ctx.matmul_reduce_scatter(ba, bb, bs, bc, k, transposed, None, gpu)


def matmul_all_reduce(a, b, staging, c, k, transposed=False):
    """``torch.ops.iris.matmul_all_reduce``: every rank's ``a @ b``, summed in rank order,
    into every rank's ``c`` (float32, ``M x n``)."""
    ctx, gpu, (ba, bb, bs, bc) = _buffers((a, "a"), (b, "b"), (staging, "staging"), (c, "c"))
    ctx.matmul_all_reduce(ba, bb, bs, bc, k, transposed, None, gpu)


def moe_dispatch(moe, x, idx, recv):
    """``torch.ops.iris.moe_dispatch``: each token of ``x`` to the ranks of the experts
    ``idx`` (int64, read on the device) names, into their ``recv``; ``moe`` is the id
    ``ctx.moe(...)`` returned."""
    ctx, gpu, (bx, bi, br) = _buffers((x, "x"), (idx, "idx"), (recv, "recv"))
    ctx.moe_dispatch(moe, bx, bi, br, None, gpu)


def moe_combine(moe, expert_out, idx, weights, out):
    """``torch.ops.iris.moe_combine``: ``out[t]`` = the sum over token ``t``'s slots of
    ``weights`` (float32) times the row its expert's rank left in ``expert_out``."""
    named = ((expert_out, "expert_out"), (idx, "idx"), (weights, "weights"), (out, "out"))
    ctx, gpu, (be, bi, bw, bo) = _buffers(*named)
    ctx.moe_combine(moe, be, bi, bw, bo, None, gpu)


def _nothing(*args, **kwargs):
    """The fake (meta) implementation: the operators write into their arguments and
    return nothing, so tracing needs no computation."""
    return None


for _name, _impl in (
    ("all_reduce", all_reduce),
    ("all_gather", all_gather),
    ("put", put),
    ("reduce_scatter", reduce_scatter),
    ("broadcast", broadcast),
    ("all_to_all_v", all_to_all_v),
    ("all_reduce_rmsnorm", all_reduce_rmsnorm),
    ("all_gather_matmul", all_gather_matmul),
    ("matmul_reduce_scatter", matmul_reduce_scatter),
    ("matmul_all_reduce", matmul_all_reduce),
    ("moe_dispatch", moe_dispatch),
    ("moe_combine", moe_combine),
):
    _lib.impl(_name, _impl, "CompositeExplicitAutograd")
    torch.library.register_fake(f"iris::{_name}", _nothing, lib=_lib)
