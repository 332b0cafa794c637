"""The legacy polynomial API on coefficient arrays (highest power first):
polyval, polyfit, poly, polyadd, polysub, polymul, polyder, polyint, roots,
vander.

Coefficient counts are static (they are array lengths), so everything but
``roots`` (whose output dtype and length depend on the values) traces.
"""
from __future__ import annotations

import operator

import numpy as np

from tracejit.core import dtypes
from tracejit.numpy._util import aval, convert, eager, is_tracer, to_operand
from tracejit.numpy import ufuncs as U
from tracejit.numpy.shape import concatenate, reshape, stack

__all__ = ["polyval", "polyfit", "poly", "polyadd", "polysub", "polymul", "polyder", "polyint", "roots", "vander"]


def _array(x):
    x = to_operand(x)
    return x if is_tracer(x) or isinstance(x, np.ndarray) else np.asarray(x)


def _1d(x):
    x = _array(x)
    return reshape(x, (1,)) if aval(x).ndim == 0 else x


def polyval(p, x):
    """Evaluate the polynomial with coefficients ``p`` at ``x`` by Horner's rule (``numpy.polyval``).

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.polyval(jnp.array([1.0, 0.0, -1.0]), jnp.array([2.0, 3.0]))
    Array([3., 8.])
    """
    if eager(p, x):
        return np.polyval(p, x)
    from tracejit.numpy.creation import zeros_like
    pa = _array(p)
    xa = _array(x)
    y = zeros_like(xa)
    for i in range(aval(pa).shape[0] if aval(pa).ndim else 1):
        pv = pa[i] if aval(pa).ndim else pa
        y = U.add(U.multiply(y, xa), pv)
    return y


def polyadd(a1, a2):
    """Sum of two polynomials (``numpy.polyadd``).

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.polyadd(jnp.array([1, 2]), jnp.array([1, 0, 0]))
    Array([1, 1, 2])
    """
    if eager(a1, a2):
        return np.polyadd(a1, a2)
    return _pad_combine(a1, a2, U.add)


def polysub(a1, a2):
    """Difference of two polynomials (``numpy.polysub``).

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.polysub(jnp.array([1, 2]), jnp.array([1, 0, 0]))
    Array([-1,  1,  2])
    """
    if eager(a1, a2):
        return np.polysub(a1, a2)
    return _pad_combine(a1, a2, U.subtract)


def _pad_combine(a1, a2, op):
    a1, a2 = _1d(a1), _1d(a2)
    diff = aval(a2).shape[0] - aval(a1).shape[0]
    if diff > 0:
        a1 = concatenate([np.zeros((diff,), aval(a1).dtype), a1])
    elif diff < 0:
        a2 = concatenate([np.zeros((-diff,), aval(a2).dtype), a2])
    return op(a1, a2)


def polymul(a1, a2):
    """Product of two polynomials (``numpy.polymul``; a convolution).

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.polymul(jnp.array([1, 1]), jnp.array([1, -1]))
    Array([ 1,  0, -1])
    """
    if eager(a1, a2):
        return np.polymul(a1, a2)
    from tracejit.numpy.convolve import convolve
    return convolve(_1d(a1), _1d(a2))


def polyder(p, m=1):
    """``m``-th derivative of a polynomial (``numpy.polyder``).

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.polyder(jnp.array([1, 1, 1, 1]))
    Array([3, 2, 1])
    """
    if eager(p):
        return np.polyder(p, m)
    m = operator.index(m)
    if m < 0:
        raise ValueError("Order of derivative must be positive (see polyint)")
    val = _1d(p)
    for _ in range(m):
        n = aval(val).shape[0] - 1
        val = U.multiply(val[:-1], np.arange(n, 0, -1))
    return val


def polyint(p, m=1, k=None):
    """``m``-th antiderivative of a polynomial, integration constants ``k`` (``numpy.polyint``).

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.polyint(jnp.array([3.0, 2.0, 1.0]))
    Array([1., 1., 1., 0.])
    """
    if eager(p, k):
        return np.polyint(p, m, k)
    m = operator.index(m)
    if m < 0:
        raise ValueError("Order of integral must be positive (see polyder)")
    if k is None:
        k = np.zeros(m, float)
    k = _array(k)
    if aval(k).ndim == 0:
        k = U.multiply(k, np.ones(m, float))
    if aval(k).shape[0] < m:
        raise ValueError("k must be a scalar or a rank-1 array of length 1 or >m.")
    y = _1d(p)
    for i in range(m):
        y = concatenate([U.true_divide(y, np.arange(aval(y).shape[0], 0, -1)), reshape(k[i], (1,))])
    return y


def poly(seq_of_zeros):
    """Coefficients of the monic polynomial with the given roots (``numpy.poly``).

    Under jit, complex roots give a complex result even when they come in
    conjugate pairs (NumPy then returns real coefficients; that depends on
    the values), and a square matrix argument is not supported (its
    eigenvalues would be needed).

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.poly(jnp.array([1.0, -1.0]))
    Array([ 1.,  0., -1.])
    """
    if eager(seq_of_zeros):
        return np.poly(seq_of_zeros)
    from tracejit.numpy.convolve import convolve
    z = _array(seq_of_zeros)
    sh = aval(z).shape
    if len(sh) == 2 and sh[0] == sh[1] and sh[0] != 0:
        raise NotImplementedError("poly of a (traced) square matrix needs its eigenvalues, which are not "
                                  "traceable; call it outside jit or pass the eigenvalues")
    if len(sh) == 0:
        return np.float64(1.0)
    if len(sh) != 1:
        raise ValueError("input must be 1d or non-empty square 2d array.")
    if sh[0] == 0:
        return np.float64(1.0)
    dt = aval(z).dtype
    if not dtypes.is_inexact(dt):  # NumPy's mintypecode: integers and bools become float64
        dt = dtypes.float64
        z = convert(z, dt)
    a = np.ones((1,), dt)
    for i in range(sh[0]):
        a = convolve(a, stack([np.ones((), dt), U.negative(z[i])]), mode="full")
    return a


def roots(p):
    """Roots of the polynomial with coefficients ``p`` (``numpy.roots``; eager only).

    Leading zeros are stripped and the result is real or complex depending on
    the values, which a static program cannot express: under jit this raises.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.roots(jnp.array([1.0, -3.0, 2.0]))
    Array([2., 1.])
    """
    if eager(p):
        return np.roots(p)
    raise NotImplementedError(
        "roots is not supported under jit: the number of roots (leading/trailing zeros are stripped) and "
        "whether they are real depend on the values, and general eigenvalues (linalg.eigvals) are not "
        "traceable. Call it outside jit.")


def vander(x, N=None, increasing=False):
    """Vandermonde matrix: columns are powers of ``x`` (``numpy.vander``).

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.vander(jnp.array([1, 2, 3]), 3).tolist()
    [[1, 1, 1], [4, 2, 1], [9, 3, 1]]
    """
    if eager(x):
        return np.vander(x, N, increasing)
    xa = _array(x)
    if aval(xa).ndim != 1:
        raise ValueError("x must be a one-dimensional array or sequence.")
    n = aval(xa).shape[0] if N is None else operator.index(N)
    xa = convert(xa, np.promote_types(aval(xa).dtype, np.int64))
    from tracejit.numpy.creation import ones_like
    cols = []
    cur = ones_like(xa)
    for i in range(n):
        cols.append(cur)
        if i + 1 < n:
            cur = U.multiply(cur, xa)
    if not cols:
        return np.zeros((aval(xa).shape[0], 0), aval(xa).dtype)
    if not increasing:
        cols = cols[::-1]
    return stack(cols, axis=1)


def polyfit(x, y, deg, rcond=None, full=False, w=None, cov=False):
    """Least-squares polynomial fit of degree ``deg`` (``numpy.polyfit``).

    Under jit ``cov=True`` is not supported, and the rank-deficiency warning
    is not issued.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.polyfit(jnp.array([0.0, 1.0, 2.0]), jnp.array([1.0, 3.0, 5.0]), 1).round(6)
    Array([2., 1.])
    """
    if eager(x, y, w):
        return np.polyfit(x, y, deg, rcond=rcond, full=full, w=w, cov=cov)
    if cov:
        raise NotImplementedError("polyfit(cov=True) is not supported under jit")
    from tracejit.numpy.linalg import lstsq
    from tracejit.numpy.reductions import sum as sum_
    order = operator.index(deg) + 1
    xa = U.add(_array(x), 0.0)
    ya = U.add(_array(y), 0.0)
    if deg < 0:
        raise ValueError("expected deg >= 0")
    if aval(xa).ndim != 1:
        raise TypeError("expected 1D vector for x")
    if aval(xa).size == 0:
        raise TypeError("expected non-empty vector for x")
    if aval(ya).ndim < 1 or aval(ya).ndim > 2:
        raise TypeError("expected 1D or 2D array for y")
    if aval(xa).shape[0] != aval(ya).shape[0]:
        raise TypeError("expected x and y to have same length")
    if rcond is None:
        rcond = aval(xa).shape[0] * np.finfo(aval(xa).dtype).eps
    lhs = vander(xa, order)
    rhs = ya
    if w is not None:
        wa = U.add(_array(w), 0.0)
        if aval(wa).ndim != 1:
            raise TypeError("expected a 1-d array for weights")
        if aval(wa).shape[0] != aval(ya).shape[0]:
            raise TypeError("expected w and y to have the same length")
        lhs = U.multiply(lhs, reshape(wa, (-1, 1)))
        rhs = U.multiply(rhs, reshape(wa, (-1, 1)) if aval(rhs).ndim == 2 else wa)
    scale = U.sqrt(sum_(U.multiply(lhs, lhs), axis=0))
    lhs = U.true_divide(lhs, scale)
    c, resids, rank, s = lstsq(lhs, rhs, float(rcond))
    c = U.true_divide(c, reshape(scale, (-1, 1)) if aval(c).ndim == 2 else scale)
    if full:
        return c, resids, rank, s, rcond
    return c
