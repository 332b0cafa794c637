"""Compositions of primitives that more than one array layer needs (``tracejit.numpy`` and
``tracejit.lax`` both build complex numbers from real parts exactly)."""
from __future__ import annotations

import numpy as np

from tracejit.core.values import get_aval
from tracejit.ops.binders import binary, c, convert, select, un

COMPLEX_OF_REAL = {np.dtype(np.float32): np.dtype(np.complex64), np.dtype(np.float64): np.dtype(np.complex128)}


def complex_from_parts(x, y):
    """``x + 1j * y`` for ``x`` and ``y`` of one dtype, float32 or float64, built exactly: every
    real and imaginary part, signed zeros, infinities and NaN included, lands unchanged (a plain
    ``x + 1j * y`` turns ``-0.0`` into ``+0.0`` and ``1j * inf`` into ``nan + inf j``).

    Examples
    --------
    >>> complex_from_parts(np.array([-0.0]), np.array([np.inf]))
    array([-0.+infj])
    """
    cd = COMPLEX_OF_REAL[get_aval(x).dtype]

    def k(re, im):
        v = np.zeros((), cd)
        v.real, v.imag = re, im
        return v[()]
    # (x, -0.0) plus (-0.0, y) is (x, y) exactly: -0.0 is the identity of IEEE addition.
    base = un("conj", convert(x, cd))
    yc = convert(y, cd)
    # (y, 0) * (c, 1) = (y*c - 0, y + 0*c): with c = -0.0 for y >= +0 and c = +0.0 for y < 0 the real
    # part is -0.0 and the imaginary part y.
    neg = un("signbit", y)
    rot = select(neg, binary("mul", yc, k(0.0, 1.0)), binary("mul", yc, k(-0.0, 1.0)))
    # -0.0, +-inf and NaN do not survive the product: constants.
    zero = binary("eq", y, c(0, y))
    rot = select(binary("and", zero, neg), k(-0.0, -0.0), rot)
    rot = select(binary("eq", y, c(np.inf, y)), k(-0.0, np.inf), rot)
    rot = select(binary("eq", y, c(-np.inf, y)), k(-0.0, -np.inf), rot)
    rot = select(binary("ne", y, y), k(-0.0, np.nan), rot)
    return binary("add", base, rot)
