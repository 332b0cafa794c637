"""The samplers' operands, in JAX's 32-bit mode too.

With ``enable_x64`` off JAX canonicalizes every input to 32 bits, so a Python-float or float64
parameter (``bernoulli``'s ``p``, ``gamma``'s ``a``) makes a sampler take its float32 path; this
``to_operand`` does the same, so the streams stay JAX's. With x64 on it is
``tracejit.numpy._util.to_operand`` itself.
"""
from __future__ import annotations

from tracejit.core import dtypes
from tracejit.numpy._util import aval, convert
from tracejit.numpy._util import to_operand as _to_operand


def to_operand(x):
    """``numpy._util.to_operand``, narrowed to 32 bits when ``enable_x64`` is off.

    Examples
    --------
    >>> import tracejit
    >>> with tracejit.enable_x64(False):
    ...     aval(to_operand(0.5)).dtype
    dtype('float32')
    """
    x = _to_operand(x)
    if dtypes.x64_off():
        a = aval(x)
        narrow = dtypes.narrow(a.dtype)
        if narrow != a.dtype:
            return convert(x, narrow, weak_type=a.weak_type)
    return x
