"""``convolve`` and ``correlate`` of 1-D sequences (NumPy's modes): one product of the kernel with
the stacked shifted windows of the zero-padded input (the im2col form of a 1-D convolution)."""
from __future__ import annotations

import numpy as np

from tracejit.core import dtypes
from tracejit.numpy._util import aval, eager, promote
from tracejit.numpy.contractions import matmul
from tracejit.numpy.extra import pad
from tracejit.numpy.shape import flip, stack
from tracejit.numpy.ufuncs import UFUNCS
from tracejit.ops.convolution import exact_zero_padded_product

__all__ = ["convolve", "correlate"]


def _full_correlation(a, v):
    """All M + N - 1 overlaps of ``a`` with ``v`` slid across it (no conjugation); a tap of ``v``
    beyond the ends of ``a`` adds nothing, even an inf or NaN one (as NumPy's)."""
    n = aval(v).shape[0]
    return exact_zero_padded_product(_padded_correlation, a, v, padded=n > 1)


def _padded_correlation(a, v):
    m, n = aval(a).shape[0], aval(v).shape[0]
    padded = pad(a, (n - 1, n - 1))
    windows = stack([padded[j:j + m + n - 1] for j in range(n)])     # (n, m + n - 1)
    return matmul(v, windows)


def _mode_slice(full, m, n, mode, centre_low):
    lo, hi = min(m, n), max(m, n)
    if mode == "full":
        return full
    if mode == "valid":
        return full[lo - 1:hi]
    if mode == "same":
        start = (lo - 1) // 2 if centre_low else lo // 2
        return full[start:start + hi]
    raise ValueError(f"mode must be 'full', 'same' or 'valid', got {mode!r}")


def _operands(a, v, name):
    a, v = promote(a, v)
    if aval(a).ndim != 1 or aval(v).ndim != 1:
        raise ValueError(f"{name}: object too deep for desired array (both inputs must be 1-D)")
    if aval(a).shape[0] == 0 or aval(v).shape[0] == 0:
        raise ValueError(f"{name}: inputs cannot be empty")
    return a, v


def convolve(a, v, mode="full", *, precision=None, preferred_element_type=None):
    """Discrete linear convolution of two 1-D sequences (``numpy.convolve``).

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.convolve([1.0, 2.0, 3.0], [0.0, 1.0, 0.5])
    Array([0. , 1. , 2.5, 4. , 1.5])
    """
    if eager(a, v):
        return np.convolve(a, v, mode)
    a, v = _operands(a, v, "convolve")
    m, n = aval(a).shape[0], aval(v).shape[0]
    out = _mode_slice(_full_correlation(a, flip(v, 0)), m, n, mode, True)
    return out.astype(preferred_element_type) if preferred_element_type else out


def correlate(a, v, mode="valid", *, precision=None, preferred_element_type=None):
    """Cross-correlation of two 1-D sequences, ``c[k] = sum_n a[n + k] * conj(v[n])`` (``numpy.correlate``).

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.correlate([1.0, 2.0, 3.0], [0.0, 1.0, 0.5])
    Array([3.5])
    """
    if eager(a, v):
        return np.correlate(a, v, mode)
    a, v = _operands(a, v, "correlate")
    m, n = aval(a).shape[0], aval(v).shape[0]
    if dtypes.is_complex(aval(v).dtype):
        v = UFUNCS["conjugate"](v)
    out = _mode_slice(_full_correlation(a, v), m, n, mode, m >= n)
    return out.astype(preferred_element_type) if preferred_element_type else out
