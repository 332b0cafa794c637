"""NaN-ignoring reductions and scans missing from ``reductions``: ``nanargmax``,
``nanargmin``, ``nancumsum``, ``nancumprod``, ``nanvar``, ``nanstd``; and ``ptp``.

``nanargmax``/``nanargmin`` follow ``jax.numpy``: an all-NaN slice gives -1 (NumPy
raises, which a compiled program cannot do), eagerly and under ``jit`` alike.
``nanvar`` follows NumPy's algorithm step for step (sum of the non-NaN values, divided by
their count in the count's float type, squared deviations summed), so results match
NumPy to summation order; a slice with ``count - ddof <= 0`` gives NaN.
"""
from __future__ import annotations

import numpy as np

from tracejit.core import dtypes
from tracejit.numpy._util import aval, canonicalize_axes, convert, eager, to_operand
from tracejit.numpy import reductions as R
from tracejit.numpy import ufuncs as U

__all__ = ["nanargmax", "nanargmin", "nancumsum", "nancumprod", "nanvar", "nanstd", "ptp"]


def _where(c, x, y):
    from tracejit.numpy.misc import where
    return where(c, x, y)


def _operand(a):
    x = to_operand(a)
    return np.asarray(x) if eager(x) else x


def _nan_arg(a, axis, keepdims, fill, base):
    x = _operand(a)
    d = aval(x).dtype
    if not dtypes.is_inexact(d):
        return base(x, axis=axis, keepdims=bool(keepdims))
    nan = U.isnan(x)
    res = base(_where(nan, np.asarray(fill, d)[()], x), axis=axis, keepdims=bool(keepdims))
    all_nan = R.all(nan, axis=axis, keepdims=bool(keepdims))
    out = _where(all_nan, np.int64(-1), res)
    return out[()] if isinstance(out, np.ndarray) and out.ndim == 0 else out


def nanargmax(a, axis=None, out=None, keepdims=None):
    """Index of the maximum along ``axis``, ignoring NaNs; -1 for an all-NaN slice (as JAX).

    Examples
    --------
    >>> import numpy as np
    >>> import tracejit.numpy as jnp
    >>> jnp.nanargmax(np.array([[1.0, np.nan, 3.0], [np.nan, np.nan, np.nan]]), axis=1)
    Array([ 2, -1])
    """
    if out is not None:
        raise NotImplementedError("nanargmax: the out= argument is not supported; use the returned array")
    return _nan_arg(a, axis, keepdims, -np.inf, R.argmax)


def nanargmin(a, axis=None, out=None, keepdims=None):
    """Index of the minimum along ``axis``, ignoring NaNs; -1 for an all-NaN slice (as JAX).

    Examples
    --------
    >>> import numpy as np
    >>> import tracejit.numpy as jnp
    >>> jnp.nanargmin(np.array([np.nan, 2.0, 1.0]))
    Array(2)
    """
    if out is not None:
        raise NotImplementedError("nanargmin: the out= argument is not supported; use the returned array")
    return _nan_arg(a, axis, keepdims, np.inf, R.argmin)


def _nan_scan(np_name, base, fill, a, axis, dtype, out):
    if out is not None:
        raise NotImplementedError(f"{np_name}: the out= argument is not supported; use the returned array")
    if eager(a):
        return getattr(np, np_name)(a, axis=axis, dtype=dtype)
    x = to_operand(a)
    d = aval(x).dtype
    if dtypes.is_inexact(d):
        x = _where(U.isnan(x), np.asarray(fill, d)[()], x)
    return base(x, axis=axis, dtype=dtype)


def nancumsum(a, axis=None, dtype=None, out=None):
    """Cumulative sum along ``axis`` (flattened when None), NaNs counted as zero.

    Examples
    --------
    >>> import numpy as np
    >>> import tracejit.numpy as jnp
    >>> jnp.nancumsum(np.array([1.0, np.nan, 2.0]))
    Array([1., 1., 3.])
    """
    return _nan_scan("nancumsum", R.cumsum, 0, a, axis, dtype, out)


def nancumprod(a, axis=None, dtype=None, out=None):
    """Cumulative product along ``axis`` (flattened when None), NaNs counted as one.

    Examples
    --------
    >>> import numpy as np
    >>> import tracejit.numpy as jnp
    >>> jnp.nancumprod(np.array([2.0, np.nan, 3.0]))
    Array([2., 2., 6.])
    """
    return _nan_scan("nancumprod", R.cumprod, 1, a, axis, dtype, out)


def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None, mean=None,
           correction=None):
    """Variance along ``axis`` of the non-NaN values, with ``ddof``; NaN where fewer than
    ``ddof + 1`` values remain.

    Examples
    --------
    >>> import numpy as np
    >>> import tracejit.numpy as jnp
    >>> jnp.nanvar(np.array([1.0, np.nan, 3.0]))
    Array(1.)
    """
    if correction is not None:
        ddof = correction
    if out is not None:
        raise NotImplementedError("nanvar: the out= argument is not supported; use the returned array")
    if eager(a):
        import warnings
        extra = {k: v for k, v in (("where", where), ("mean", mean)) if v is not None}
        with warnings.catch_warnings(), np.errstate(invalid="ignore", divide="ignore"):
            warnings.simplefilter("ignore", RuntimeWarning)   # all-NaN slices are NaN, as under jit
            return np.nanvar(a, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims, **extra)
    x = to_operand(a)
    d = aval(x).dtype
    if not dtypes.is_inexact(d):
        return R.var(x, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims, where=where, mean=mean)
    axes = canonicalize_axes(axis, aval(x).ndim)
    if where is not None or mean is not None:
        # The masked variance over the non-NaN selected values; NaN where fewer than ddof + 1.
        keep = U.logical_not(U.isnan(x))
        if where is not None:
            keep = U.logical_and(keep, R.reduction_mask(where, x))
        var = R.var(_where(keep, x, np.asarray(0, d)[()]), axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims,
                    where=keep, mean=mean)
        dof = U.subtract(R.sum(keep, axis=axes, dtype=dtypes.int64, keepdims=keepdims), np.int64(ddof))
        return _where(U.less_equal(dof, np.int64(0)), np.asarray(np.nan, aval(var).dtype)[()], var)
    nan = U.isnan(x)
    arr = _where(nan, np.asarray(0, d)[()], x)
    cnt = R.sum(U.logical_not(nan), axis=axes, dtype=dtypes.int64, keepdims=True)
    total = R.sum(arr, axis=axes, dtype=dtype, keepdims=True)
    avg = _divide(total, cnt)
    dev = _where(nan, np.asarray(0, d)[()], convert(U.subtract(arr, avg), d))
    if dtypes.is_complex(d):
        from tracejit.numpy.misc import real
        sqr = real(U.multiply(dev, U.conjugate(dev)))
    else:
        sqr = U.multiply(dev, dev)
    var = R.sum(sqr, axis=axes, dtype=dtype, keepdims=keepdims)
    if not keepdims:
        cnt = R.sum(U.logical_not(nan), axis=axes, dtype=dtypes.int64, keepdims=False)
    dof = U.subtract(cnt, np.int64(ddof))
    var = _divide(var, dof)
    return _where(U.less_equal(dof, np.int64(0)), np.asarray(np.nan, aval(var).dtype)[()], var)


def _divide(total, count):
    """NumPy's ``_divide_by_count``: the division runs in (dtype, intp)'s type, cast back."""
    d = aval(total).dtype
    div = np.result_type(d, np.intp)
    return convert(U.true_divide(convert(total, div), convert(count, div)), d)


def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None, mean=None,
           correction=None):
    """Standard deviation along ``axis`` of the non-NaN values (the square root of ``nanvar``).

    Examples
    --------
    >>> import numpy as np
    >>> import tracejit.numpy as jnp
    >>> jnp.nanstd(np.array([1.0, np.nan, 3.0]))
    Array(1.)
    """
    return U.sqrt(nanvar(a, axis=axis, dtype=dtype, out=out, ddof=ddof, keepdims=keepdims, where=where,
                         mean=mean, correction=correction))


def ptp(a, axis=None, out=None, keepdims=False):
    """Range (maximum minus minimum) along ``axis``.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.ptp(jnp.array([[4, 9, 2], [3, 3, 3]]), axis=1)
    Array([7, 0])
    """
    if out is not None:
        raise NotImplementedError("ptp: the out= argument is not supported; use the returned array")
    if eager(a):
        return np.ptp(a, axis=axis, keepdims=keepdims)
    x = to_operand(a)
    return U.subtract(R.max(x, axis=axis, keepdims=keepdims), R.min(x, axis=axis, keepdims=keepdims))
