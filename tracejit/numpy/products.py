"""Vector products and polynomial division: ``vecdot``, ``matvec``, ``vecmat``,
``einsum_path``, ``polydiv``.

The products are ``matmul`` with a unit axis added (so batch dimensions broadcast as
in NumPy's gufuncs, and they differentiate and batch as matmul does). ``einsum_path``
needs only shapes, so it works on traced operands too. ``polydiv`` is long division
unrolled over the static degrees, exactly NumPy's arithmetic.
"""
from __future__ import annotations

import numpy as np

from tracejit.core import dtypes
from tracejit.core.errors import ConcretizationTypeError
from tracejit.numpy._util import aval, canonicalize_axis, convert, eager, is_tracer, promote, to_operand
from tracejit.numpy import ufuncs as U
from tracejit.numpy.contractions import matmul
from tracejit.numpy.shape import concatenate, moveaxis, reshape, stack

__all__ = ["vecdot", "matvec", "vecmat", "einsum_path", "polydiv"]


def _array(x):
    x = to_operand(x)
    return x if is_tracer(x) or isinstance(x, np.ndarray) else np.asarray(x)


def _expand(x, axis):
    shape = aval(x).shape
    axis = axis % (len(shape) + 1)
    return reshape(x, shape[:axis] + (1,) + shape[axis:])


def _conj(x):
    return U.conjugate(x) if dtypes.is_complex(aval(x).dtype) else x


def _preferred(x1, x2, preferred_element_type):
    if preferred_element_type is None:
        return x1, x2
    d = dtypes.canonical(preferred_element_type)
    return convert(x1, d), convert(x2, d)


def vecdot(x1, x2, /, *, axis=-1, precision=None, preferred_element_type=None):
    """Dot product of vectors along ``axis`` (the first argument conjugated), batch axes broadcast.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.vecdot(jnp.array([[1, 2], [3, 4]]), jnp.array([1, 1]))
    Array([3, 7])
    """
    a, b = _array(x1), _array(x2)
    if eager(a, b) and preferred_element_type is None:
        return np.vecdot(a, b, axis=axis)
    a, b = _preferred(a, b, preferred_element_type)
    if aval(a).ndim == 0 or aval(b).ndim == 0:
        raise ValueError("vecdot: inputs must be at least one-dimensional")
    a = moveaxis(a, canonicalize_axis(axis, aval(a).ndim), -1)
    b = moveaxis(b, canonicalize_axis(axis, aval(b).ndim), -1)
    if aval(a).shape[-1] != aval(b).shape[-1]:
        raise ValueError(f"vecdot: axes must have equal length, got {aval(a).shape[-1]} and {aval(b).shape[-1]}")
    out = matmul(_expand(_conj(a), -2), _expand(b, -1))
    return out[..., 0, 0]


def matvec(x1, x2, /):
    """Matrix-vector product over the last axes: ``(..., m, n) x (..., n) -> (..., m)``.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.matvec(jnp.array([[1, 2], [3, 4]]), jnp.array([1, -1]))
    Array([-1, -1])
    """
    a, b = _array(x1), _array(x2)
    if eager(a, b):
        return np.matvec(a, b)
    if aval(a).ndim < 2 or aval(b).ndim < 1:
        raise ValueError(f"matvec: x1 must be at least 2-d and x2 at least 1-d, got shapes "
                         f"{aval(a).shape} and {aval(b).shape}")
    return matmul(a, _expand(b, -1))[..., 0]


def vecmat(x1, x2, /):
    """Vector-matrix product over the last axes (the vector conjugated): ``(..., n) x (..., n, m)
    -> (..., m)``.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.vecmat(jnp.array([1, -1]), jnp.array([[1, 2], [3, 4]]))
    Array([-2, -2])
    """
    a, b = _array(x1), _array(x2)
    if eager(a, b):
        return np.vecmat(a, b)
    if aval(a).ndim < 1 or aval(b).ndim < 2:
        raise ValueError(f"vecmat: x1 must be at least 1-d and x2 at least 2-d, got shapes "
                         f"{aval(a).shape} and {aval(b).shape}")
    return matmul(_expand(_conj(a), -2), b)[..., 0, :]


def einsum_path(subscripts, *operands, optimize="greedy"):
    """The contraction order ``einsum`` would use, and a report (``numpy.einsum_path``).

    Only the operands' shapes matter, so traced operands are accepted.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> path, report = jnp.einsum_path("ij,jk,kl->il", jnp.ones((2, 3)), jnp.ones((3, 4)), jnp.ones((4, 5)))
    >>> path[0], len(path)
    ('einsum_path', 3)
    """
    stand_ins = []
    for o in operands:
        o = _array(o)
        stand_ins.append(np.broadcast_to(np.zeros((), aval(o).dtype), aval(o).shape) if is_tracer(o) else o)
    return np.einsum_path(subscripts, *stand_ins, optimize=optimize)


def polydiv(u, v, *, trim_leading_zeros=False):
    """Quotient and remainder of polynomial division ``u / v`` (coefficients highest power first).

    As in ``jax.numpy``, the remainder keeps ``u``'s length (leading zeros included) unless
    ``trim_leading_zeros=True``, which trims them as NumPy does and needs concrete inputs.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> q, r = jnp.polydiv(jnp.array([1.0, 3.0, 5.0]), jnp.array([1.0, 1.0]))
    >>> q, r
    (Array([1., 2.]), Array([0., 0., 3.]))
    """
    uu, vv = _array(u), _array(v)
    uu = reshape(uu, (1,)) if aval(uu).ndim == 0 else uu
    vv = reshape(vv, (1,)) if aval(vv).ndim == 0 else vv
    if aval(uu).ndim != 1 or aval(vv).ndim != 1:
        raise ValueError("polydiv: u and v must be 1-D coefficient arrays")
    uu, vv = U.add(uu, 0.0), U.add(vv, 0.0)            # NumPy: atleast_1d(u) + 0.0
    w = dtypes.canonical(np.result_type(aval(uu).dtype, aval(vv).dtype))
    m, n = aval(uu).shape[0] - 1, aval(vv).shape[0] - 1
    scale = U.true_divide(1.0, vv[0])
    r = convert(uu, w)
    q = []
    for k in range(m - n + 1):
        d = U.multiply(scale, r[k])
        q.append(convert(d, w))
        r = concatenate([r[:k], U.subtract(r[k:k + n + 1], U.multiply(d, vv)), r[k + n + 1:]])
    q = stack(q) if q else np.zeros((1,), w)
    if trim_leading_zeros:
        if is_tracer(r):
            raise ConcretizationTypeError(
                "jnp.polydiv(..., trim_leading_zeros=True): the remainder's length depends on its values, "
                "which are not known under jit; use trim_leading_zeros=False.")
        r = np.asarray(r)
        while np.allclose(r[0], 0, rtol=1e-14) and r.shape[-1] > 1:
            r = r[1:]
    return q, r
