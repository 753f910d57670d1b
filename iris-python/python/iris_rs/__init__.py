"""iris from Python: iris kernels and collectives on PyTorch symmetric memory and on
iris's own symmetric heap.

    ctx = iris_rs.Context()                       # this process's rank (torchrun's env)
    buf = ctx.adopt(t, symm_mem.rendezvous(t, dist.group.WORLD))
    ctx.all_reduce(buf_in, buf_out, op="sum")

Every failure raises :class:`IrisError`.
"""

from ._native import (  # noqa: F401
    SUPPORTED_DTYPES,
    Context,
    IrisError,
    SymmetricBuffer,
    __version__,
)

__all__ = [
    "Context",
    "IrisError",
    "SymmetricBuffer",
    "SUPPORTED_DTYPES",
    "from_numpy",
    "to_numpy",
]


def from_numpy(ctx, array, provider=None):
    """A symmetric allocation holding a copy of the NumPy array ``array`` on this rank
    (collective: every rank passes an array of the same size and dtype)."""
    import numpy as np

    array = np.ascontiguousarray(array)
    return ctx.from_bytes(array.tobytes(), dtype=array.dtype.name, provider=provider)


def to_numpy(buf):
    """A NumPy copy of this rank's part of ``buf`` (``numpy.asarray(buf)`` is a zero-copy
    view on the cpu backend)."""
    import numpy as np

    if buf.dtype == "bfloat16":
        raise IrisError("to_numpy: NumPy has no bfloat16")
    return np.frombuffer(buf.read(), dtype=buf.dtype).copy()
