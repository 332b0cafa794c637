"""Statistics: average, cov, corrcoef, median, quantile/percentile (and the
NaN-ignoring variants), interp, gradient, trapezoid, histogram2d/histogramdd.

Concrete inputs run NumPy directly. Traced inputs are composed from sorts,
gathers (``take_along_axis``), slices and elementwise ops, so ``grad``
flows through them as in ``jax.numpy`` (a quantile's derivative goes to the
two order statistics it interpolates between).
"""
from __future__ import annotations

import math
import operator

import numpy as np

from tracejit.core import dtypes
from tracejit.numpy._util import aval, canonicalize_axes, canonicalize_axis, convert, eager, is_tracer, to_operand
from tracejit.numpy import ufuncs as U
from tracejit.numpy import reductions as R
from tracejit.numpy.misc import clip, where
from tracejit.numpy.shape import (broadcast_to, concatenate, expand_dims, moveaxis, ravel, reshape, stack,
                                  transpose)

__all__ = ["average", "cov", "corrcoef", "median", "nanmedian", "quantile", "nanquantile", "percentile",
           "nanpercentile", "interp", "gradient", "trapezoid", "histogram2d", "histogramdd"]


def _array(x):
    x = to_operand(x)
    return x if is_tracer(x) or isinstance(x, np.ndarray) else np.asarray(x)


def _scalar(v, dtype):
    return np.asarray(v, dtype)[()]


def _axes_last(x, axis):
    """Move the reduced ``axis`` (None, int or tuple) to one trailing axis.

    Returns ``(x2, batch_shape, keep_shape)``: ``x2`` has shape
    ``batch_shape + (n,)``; ``keep_shape`` is the keepdims result shape.
    """
    shape = aval(x).shape
    nd = len(shape)
    if nd == 0 and axis is not None and axis != ():
        raise np.exceptions.AxisError(f"axis {axis} is out of bounds for array of dimension 0")
    axes = canonicalize_axes(axis, nd) if axis is not None else tuple(range(nd))
    keep = tuple(1 if i in axes else s for i, s in enumerate(shape))
    rest = [i for i in range(nd) if i not in axes]
    batch = tuple(shape[i] for i in rest)
    if rest + list(axes) != list(range(nd)):
        x = transpose(x, rest + list(axes))
    n = math.prod(shape[i] for i in axes)
    return reshape(x, batch + (n,)), batch, keep


# --------------------------------------------------------------------------- average / cov / corrcoef

def average(a, axis=None, weights=None, returned=False, *, keepdims=False):
    """Weighted average along ``axis`` (``numpy.average``).

    With ``returned=True`` the sum of the weights is returned too, broadcast
    to the average's shape. Under jit a zero weight sum gives inf/NaN instead
    of NumPy's ``ZeroDivisionError`` (it depends on the values).

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> float(jnp.average(jnp.array([1.0, 2.0, 4.0]), weights=jnp.array([1.0, 1.0, 2.0])))
    2.75
    """
    if eager(a, weights):
        return np.average(a, axis=axis, weights=weights, returned=returned, keepdims=keepdims)
    x = _array(a)
    nd = aval(x).ndim
    if weights is None:
        avg = R.mean(x, axis=axis, keepdims=keepdims)
        n = aval(x).size // max(aval(avg).size, 1) if aval(avg).size else 0
        scl = _scalar(n, aval(avg).dtype)
        if returned:
            return avg, broadcast_to(scl, aval(avg).shape)
        return avg
    w = _array(weights)
    xd, wd = aval(x).dtype, aval(w).dtype
    if dtypes.is_integer(xd) or dtypes.is_bool(xd):
        rd = np.result_type(xd, wd, np.float64)
    else:
        rd = np.result_type(xd, wd)
    if aval(x).shape != aval(w).shape:
        if axis is None:
            raise TypeError("Axis must be specified when shapes of a and weights differ.")
        axes = canonicalize_axes(axis, nd)
        if aval(w).shape != tuple(aval(x).shape[i] for i in axes):
            raise ValueError("Shape of weights must be consistent with shape of a along specified axis.")
        # Line the weights up with the reduced axes, as NumPy does.
        wshape = [1] * nd
        for i in axes:
            wshape[i] = aval(x).shape[i]
        order = sorted(range(len(axes)), key=lambda k: axes[k])
        w = reshape(transpose(w, order) if order != list(range(len(axes))) else w, tuple(wshape))
        w = broadcast_to(w, aval(x).shape)
    w = convert(w, rd)
    scl = R.sum(w, axis=axis, keepdims=keepdims)
    avg = U.true_divide(R.sum(U.multiply(convert(x, rd), w), axis=axis, keepdims=keepdims), scl)
    if returned:
        if aval(scl).shape != aval(avg).shape:
            scl = broadcast_to(scl, aval(avg).shape)
        return avg, scl
    return avg


def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None, *, dtype=None):
    """Covariance matrix of the variables in the rows (``rowvar``) of ``m``.

    Results are float64 for integer and float32 inputs, as NumPy's. Under
    jit, ``fweights`` are not checked for being non-negative integers.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.cov(jnp.array([[0.0, 1.0, 2.0], [2.0, 1.0, 0.0]]))
    Array([[ 1., -1.],
           [-1.,  1.]])
    """
    if eager(m, y, fweights, aweights):
        return np.cov(m, y, rowvar, bias, ddof, fweights, aweights, dtype=dtype)
    if ddof is not None and ddof != int(ddof):
        raise ValueError("ddof must be integer")
    X = _array(m)
    if aval(X).ndim > 2:
        raise ValueError("m has more than 2 dimensions")
    if dtype is None:
        dtype = np.result_type(aval(X).dtype, np.float64) if y is None else \
            np.result_type(aval(X).dtype, dtype_of_any(y), np.float64)
    from tracejit.numpy.shape import atleast_2d
    m_ndim = aval(X).ndim
    X = convert(atleast_2d(X), dtype)
    if not rowvar and m_ndim != 1:
        X = transpose(X)
    if aval(X).shape[0] == 0:
        return np.array([]).reshape(0, 0)
    if y is not None:
        Y = _array(y)
        if aval(Y).ndim > 2:
            raise ValueError("y has more than 2 dimensions")
        Y = convert(atleast_2d(Y), dtype)
        if not rowvar and aval(Y).shape[0] != 1:
            Y = transpose(Y)
        X = concatenate((X, Y), axis=0)
    if ddof is None:
        ddof = 0 if bias else 1
    nobs = aval(X).shape[1]
    w = aw = None
    if fweights is not None:
        fw = convert(_array(fweights), dtypes.float64)
        if aval(fw).ndim > 1:
            raise RuntimeError("cannot handle multidimensional fweights")
        if aval(fw).shape[0] != nobs:
            raise RuntimeError("incompatible numbers of samples and fweights")
        w = fw
    if aweights is not None:
        aw = convert(_array(aweights), dtypes.float64)
        if aval(aw).ndim > 1:
            raise RuntimeError("cannot handle multidimensional aweights")
        if aval(aw).shape[0] != nobs:
            raise RuntimeError("incompatible numbers of samples and aweights")
        w = aw if w is None else U.multiply(w, aw)
    avg, w_sum = average(X, axis=1, weights=w, returned=True)
    if w is None:
        fact = np.float64(max(nobs - ddof, 0))
    else:
        w_sum = w_sum[0]
        if ddof == 0:
            fact = w_sum
        elif aweights is None:
            fact = U.subtract(w_sum, np.float64(ddof))
        else:
            fact = U.subtract(w_sum, U.true_divide(U.multiply(np.float64(ddof), R.sum(U.multiply(w, aw))), w_sum))
        fact = where(U.less_equal(fact, 0.0), np.float64(0.0), fact)
    X = U.subtract(X, reshape(avg, (aval(avg).shape[0], 1)))
    X_T = transpose(X) if w is None else transpose(U.multiply(X, w))
    from tracejit.numpy.contractions import dot
    c = dot(X, U.conjugate(X_T))
    c = convert(U.multiply(c, U.true_divide(np.float64(1.0), fact)), aval(c).dtype)
    from tracejit.numpy.shape import squeeze
    return squeeze(c)


def dtype_of_any(x):
    return aval(to_operand(x)).dtype


def corrcoef(x, y=None, rowvar=True, *, dtype=None):
    """Pearson correlation coefficients (``numpy.corrcoef``), clipped to [-1, 1].

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.corrcoef(jnp.array([[0.0, 1.0, 2.0], [2.0, 1.0, 0.5]])).round(3)
    Array([[ 1.   , -0.982],
           [-0.982,  1.   ]])
    """
    if eager(x, y):
        return np.corrcoef(x, y, rowvar, dtype=dtype)
    c = cov(x, y, rowvar, dtype=dtype)
    if aval(c).ndim == 0:
        return U.true_divide(c, c)
    from tracejit.numpy.extra import diag
    from tracejit.numpy.misc import real, imag
    d = diag(c)
    stddev = U.sqrt(real(d))
    c = U.true_divide(c, reshape(stddev, (-1, 1)))
    c = U.true_divide(c, reshape(stddev, (1, -1)))
    if dtypes.is_complex(aval(c).dtype):
        one = _scalar(1.0, aval(real(c)).dtype)
        re = clip(real(c), U.negative(one), one)
        im = clip(imag(c), U.negative(one), one)
        return U.add(convert(re, aval(c).dtype), U.multiply(convert(im, aval(c).dtype), 1j))
    one = _scalar(1.0, aval(c).dtype)
    return clip(c, U.negative(one), one)


# --------------------------------------------------------------------------- median / quantile

_SUPPORTED_METHODS = ("linear", "lower", "higher", "nearest", "midpoint")
_NUMPY_METHODS = ("inverted_cdf", "averaged_inverted_cdf", "closest_observation", "interpolated_inverted_cdf",
                  "hazen", "weibull", "median_unbiased", "normal_unbiased")


def _check_method(fn, method):
    if method in _SUPPORTED_METHODS:
        return
    if method in _NUMPY_METHODS:
        raise NotImplementedError(f"{fn}: method={method!r} is not supported on traced arrays; supported: "
                                  f"{', '.join(_SUPPORTED_METHODS)} (call it outside jit for the others)")
    raise ValueError(f"{method!r} is not a valid method. Use one of: {_SUPPORTED_METHODS + _NUMPY_METHODS}")


def _quantile_traced(fn, a, q, axis, method, keepdims, ignore_nan, weak_q, weights):
    _check_method(fn, method)
    if weights is not None:
        raise NotImplementedError(f"{fn}: weights= (method='inverted_cdf') is not supported on traced arrays")
    from tracejit.numpy.sorting import sort
    from tracejit.numpy.indexing_api import take_along_axis
    x = _array(a)
    d = aval(x).dtype
    if dtypes.is_complex(d):
        raise TypeError("a must be an array of real numbers")
    if dtypes.is_bool(d) and method in ("linear", "midpoint"):
        raise TypeError("numpy boolean subtract, the `-` operator, is not supported")
    if ignore_nan and aval(x).size == 0:
        return R.nanmean(x, axis=axis, keepdims=keepdims)  # NumPy's nanquantile of an empty array
    q = to_operand(q)
    qa = aval(q)
    q_shape = qa.shape
    x, batch, keep = _axes_last(x, axis)
    n = aval(x).shape[-1]
    nb = len(batch)
    inexact = dtypes.is_inexact(d)
    xs = sort(x, axis=-1)
    if ignore_nan and inexact:
        valid = R.sum(convert(U.logical_not(U.isnan(x)), dtypes.int64), axis=-1, keepdims=True)
    else:
        if n == 0:
            raise IndexError("index -1 is out of bounds for axis 0 with size 0")
        valid = np.int64(n)
    last = U.subtract(valid, np.int64(1))  # index of the last valid value (batch + (1,), or a scalar)
    qf = reshape(q, (1,) * nb + (math.prod(q_shape),))
    int_q = not dtypes.is_inexact(qa.dtype)
    vdt = qa.dtype if dtypes.is_float(qa.dtype) else dtypes.float64
    if int_q and method == "linear":
        v = U.multiply(last, convert(qf, dtypes.int64))
        method = "lower"
    else:
        v = U.multiply(convert(last, vdt), convert(qf, vdt))

    def gather(idx):
        idx = clip(idx, np.int64(0), U.maximum(last, np.int64(0)))
        idx = broadcast_to(idx, batch + (aval(idx).shape[-1],))
        return take_along_axis(xs, idx, axis=-1)

    if method in ("lower", "higher", "nearest"):
        rnd = {"lower": U.floor, "higher": U.ceil, "nearest": U.rint}[method]
        res = gather(convert(v if int_q else rnd(v), dtypes.int64))
    else:
        prev = U.floor(v)
        above = U.greater_equal(v, convert(last, vdt))
        below = U.less(v, _scalar(0, vdt))
        nanv = U.isnan(v)
        prev_g = where(U.logical_or(above, nanv), _scalar(-1, vdt), where(below, _scalar(0, vdt), prev))
        prev_i = where(U.logical_or(above, nanv), convert(last, vdt), where(below, _scalar(0, vdt), prev))
        next_i = where(U.logical_or(above, nanv), convert(last, vdt),
                       where(below, _scalar(0, vdt), U.add(prev, _scalar(1, vdt))))
        lo = gather(convert(prev_i, dtypes.int64))
        hi = gather(convert(next_i, dtypes.int64))
        if method == "midpoint":
            gamma = where(U.equal(U.remainder(v, _scalar(1, vdt)), _scalar(0, vdt)), _scalar(0.0, vdt),
                          _scalar(0.5, vdt))
        else:
            gamma = U.subtract(v, prev_g)
        if weak_q:
            # A Python-scalar q is weak: the interpolation runs in the data's float dtype (as NumPy 2 and
            # jax). Converted to that dtype, not to a weak float64: eagerly under jvp/grad gamma is a concrete
            # NumPy array, which carries no weak type, so float32 data gave a float64 result there (float32
            # under jit and without tracers).
            gamma = convert(gamma, d) if dtypes.is_float(d) else convert(gamma, dtypes.float64, weak_type=True)
        diff = U.subtract(hi, lo)
        low = U.add(lo, U.multiply(diff, gamma))
        high = U.subtract(hi, U.multiply(diff, U.subtract(1, gamma)))
        res = where(U.greater_equal(gamma, 0.5), convert(high, aval(low).dtype), low)
    if inexact:
        nan = _scalar(np.nan, aval(res).dtype)
        if ignore_nan:
            res = where(U.equal(valid, np.int64(0)), nan, res)
        elif n:
            res = where(U.isnan(xs[..., -1:]), nan, res)
    res = moveaxis(res, -1, 0)
    out_batch = keep if keepdims else batch
    return reshape(res, q_shape + out_batch)


def _quantile_api(fn, np_fn, scale):
    def impl(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *,
             weights=None, interpolation=None):
        if interpolation is not None:
            method = interpolation
        if out is not None:
            raise NotImplementedError(f"{fn}: out= is not supported")
        if eager(a, q, weights):
            kw = {} if weights is None else {"weights": weights}
            return np_fn(a, q, axis=axis, overwrite_input=overwrite_input, method=method, keepdims=keepdims, **kw)
        weak_q = type(q) in (int, float)
        if scale != 1:
            q = U.true_divide(to_operand(q), scale) if is_tracer(q) else np.true_divide(q, scale)
            if weak_q:
                q = float(q)
        return _quantile_traced(fn, a, q, axis, method, keepdims, np_fn.__name__.startswith("nan"), weak_q, weights)
    impl.__name__ = fn
    return impl


_quantile = _quantile_api("quantile", np.quantile, 1)
_nanquantile = _quantile_api("nanquantile", np.nanquantile, 1)
_percentile = _quantile_api("percentile", np.percentile, 100)
_nanpercentile = _quantile_api("nanpercentile", np.nanpercentile, 100)


def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *,
             weights=None, interpolation=None):
    """``q``-th quantiles (``q`` in [0, 1]) of ``a`` along ``axis`` (``numpy.quantile``).

    Under jit ``method`` may be 'linear' (default), 'lower', 'higher',
    'nearest' or 'midpoint'; the other NumPy methods raise
    ``NotImplementedError``. The output shape is ``q.shape`` followed by the
    reduced shape. Quantiles outside [0, 1] are not checked under jit.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.quantile(jnp.array([1.0, 2.0, 3.0, 4.0]), jnp.array([0.25, 0.5]))
    Array([1.75, 2.5 ])
    """
    return _quantile(a, q, axis, out, overwrite_input, method, keepdims, weights=weights,
                     interpolation=interpolation)


def nanquantile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *,
                weights=None, interpolation=None):
    """Quantiles ignoring NaNs (``numpy.nanquantile``); an all-NaN slice gives NaN.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> float(jnp.nanquantile(jnp.array([1.0, jnp.nan, 3.0]), 0.5))
    2.0
    """
    return _nanquantile(a, q, axis, out, overwrite_input, method, keepdims, weights=weights,
                        interpolation=interpolation)


def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *,
               weights=None, interpolation=None):
    """``q``-th percentiles (``q`` in [0, 100]) of ``a`` (``numpy.percentile``).

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> float(jnp.percentile(jnp.array([1.0, 2.0, 3.0, 4.0]), 50))
    2.5
    """
    return _percentile(a, q, axis, out, overwrite_input, method, keepdims, weights=weights,
                       interpolation=interpolation)


def nanpercentile(a, q, axis=None, out=None, overwrite_input=False, method="linear", keepdims=False, *,
                  weights=None, interpolation=None):
    """Percentiles ignoring NaNs (``numpy.nanpercentile``).

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> float(jnp.nanpercentile(jnp.array([1.0, jnp.nan, 3.0]), 100))
    3.0
    """
    return _nanpercentile(a, q, axis, out, overwrite_input, method, keepdims, weights=weights,
                          interpolation=interpolation)


def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """Median along ``axis`` (``numpy.median``): the mean of the two middle values for even counts.

    A slice containing NaN gives NaN; an empty slice gives NaN.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> float(jnp.median(jnp.array([3.0, 1.0, 4.0, 2.0])))
    2.5
    """
    if eager(a):
        return np.median(a, axis=axis, overwrite_input=overwrite_input, keepdims=keepdims)
    from tracejit.numpy.sorting import sort
    x = _array(a)
    d = aval(x).dtype
    x, batch, keep = _axes_last(x, axis)
    n = aval(x).shape[-1]
    xs = sort(x, axis=-1)
    h = n // 2
    mid = xs[..., h - 1:h + 1] if n % 2 == 0 else xs[..., h:h + 1]
    res = R.mean(mid, axis=-1)
    if dtypes.is_inexact(d) and n:
        res = where(U.isnan(xs[..., -1]), _scalar(np.nan, aval(res).dtype), res)
    return reshape(res, keep if keepdims else batch)


def nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=False):
    """Median ignoring NaNs (``numpy.nanmedian``); an all-NaN slice gives NaN.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> float(jnp.nanmedian(jnp.array([3.0, jnp.nan, 1.0])))
    2.0
    """
    if eager(a):
        return np.nanmedian(a, axis=axis, overwrite_input=overwrite_input, keepdims=keepdims)
    x = _array(a)
    if not dtypes.is_inexact(aval(x).dtype):
        return median(x, axis=axis, keepdims=keepdims)
    from tracejit.numpy.sorting import sort
    from tracejit.numpy.indexing_api import take_along_axis
    x, batch, keep = _axes_last(x, axis)
    xs = sort(x, axis=-1)
    valid = R.sum(convert(U.logical_not(U.isnan(x)), dtypes.int64), axis=-1, keepdims=True)
    lo = U.maximum(U.floor_divide(U.subtract(valid, np.int64(1)), np.int64(2)), np.int64(0))
    hi = U.floor_divide(valid, np.int64(2))
    if aval(x).shape[-1] == 0:
        res = R.mean(xs, axis=-1)
    else:
        hi = U.minimum(hi, np.int64(aval(x).shape[-1] - 1))
        both = take_along_axis(xs, concatenate([lo, hi], axis=-1), axis=-1)
        res = where(U.equal(valid[..., 0], np.int64(0)), _scalar(np.nan, aval(x).dtype), R.mean(both, axis=-1))
    return reshape(res, keep if keepdims else batch)


# --------------------------------------------------------------------------- interp

def interp(x, xp, fp, left=None, right=None, period=None):
    """One-dimensional piecewise-linear interpolation (``numpy.interp``).

    Results are float64 (complex128 for complex ``fp``), as NumPy's. ``xp``
    must be increasing (not checked). Differentiable in ``x``, ``xp`` and
    ``fp``.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.interp(jnp.array([0.5, 2.5]), jnp.array([0.0, 1.0, 2.0]), jnp.array([0.0, 10.0, 20.0]))
    Array([ 5., 20.])
    """
    if eager(x, xp, fp, left, right, period):
        return np.interp(x, xp, fp, left=left, right=right, period=period)
    fpa = _array(fp)
    cplx = dtypes.is_complex(aval(fpa).dtype)
    out_dt = dtypes.complex128 if cplx else dtypes.float64
    xa = convert(_array(x), dtypes.float64)
    xpa = convert(_array(xp), dtypes.float64)
    fpa = convert(fpa, out_dt)
    if aval(xpa).ndim != 1 or aval(fpa).ndim != 1:
        raise ValueError("object too deep for desired array" if aval(xpa).ndim > 1 else "xp and fp must be 1-D")
    if aval(xpa).shape[0] != aval(fpa).shape[0]:
        raise ValueError("fp and xp are not of the same length.")
    if aval(xpa).shape[0] == 0:
        raise ValueError("array of sample points is empty")
    if period is not None:
        if is_tracer(period) is False and period == 0:
            raise ValueError("period must be a non-zero value")
        per = U.absolute(convert(to_operand(period), dtypes.float64))
        left = right = None
        xa = U.remainder(xa, per)
        xpm = U.remainder(xpa, per)
        from tracejit.numpy.sorting import argsort
        from tracejit.numpy.indexing_api import take
        order = argsort(xpm)
        xpm, fps = take(xpm, order), take(fpa, order)
        xpa = concatenate([U.subtract(xpm[-1:], per), xpm, U.add(xpm[0:1], per)])
        fpa = concatenate([fps[-1:], fps, fps[0:1]])
    if cplx:
        from tracejit.numpy.misc import real, imag
        lr = [None if v is None else convert(to_operand(v), dtypes.complex128) for v in (left, right)]
        re = _interp_real(xa, xpa, real(fpa), *[None if v is None else real(v) for v in lr])
        im = _interp_real(xa, xpa, imag(fpa), *[None if v is None else imag(v) for v in lr])
        return U.add(convert(re, out_dt), U.multiply(convert(im, out_dt), 1j))
    return _interp_real(xa, xpa, fpa, left, right)


def _interp_real(x, xp, fp, left, right):
    f64 = dtypes.float64
    n = aval(xp).shape[0]
    left = fp[0] if left is None else convert(to_operand(left), f64)
    right = fp[-1] if right is None else convert(to_operand(right), f64)
    if n == 1:
        return where(U.less(x, xp[0]), left, where(U.greater(x, xp[0]), right, fp[0]))
    return _interp_with_derivative()(x, xp, fp, left, right)


def _interp_segment(x, xp, fp):
    """The segment of each ``x`` (``xp[j] <= x < xp[j + 1]``, as NumPy's binary search; the first
    and last segments beyond the ends) and its slope."""
    from tracejit.numpy.indexing_api import take
    from tracejit.numpy.sorting import searchsorted
    n = aval(xp).shape[0]
    j = clip(U.subtract(searchsorted(xp, x, side="right"), np.int64(1)), np.int64(0), np.int64(n - 2))
    xj, xj1 = take(xp, j), take(xp, U.add(j, np.int64(1)))
    fj, fj1 = take(fp, j), take(fp, U.add(j, np.int64(1)))
    dx = U.subtract(xj1, xj)
    zero_dx = U.equal(dx, 0.0)
    slope = U.true_divide(U.subtract(fj1, fj), where(zero_dx, 1.0, dx))
    return xj, xj1, fj, fj1, zero_dx, slope


def _interp_value(x, xp, fp, left, right):
    """NumPy's values: exact hits of a sample point take its ``fp`` as it is."""
    xj, xj1, fj, fj1, zero_dx, slope = _interp_segment(x, xp, fp)
    res = U.add(U.multiply(slope, U.subtract(x, xj)), fj)
    alt = U.add(U.multiply(slope, U.subtract(x, xj1)), fj1)
    res = where(U.isnan(res), alt, res)
    res = where(U.logical_and(U.isnan(res), U.equal(fj, fj1)), fj, res)
    res = where(U.equal(x, xj), fj, res)  # exact hits (and zero-width steps) take the left value
    res = where(U.equal(x, xp[-1]), fp[-1], res)
    res = where(U.less(x, xp[0]), left, res)
    res = where(U.greater(x, xp[-1]), right, res)
    return where(U.isnan(x), _scalar(np.nan, dtypes.float64), res)


def _interp_linear(x, xp, fp, left, right):
    """The same function without the exact-hit selects (whose derivative in ``x`` and ``xp`` is 0):
    each ``x`` on its segment's line, as JAX's ``jnp.interp``."""
    xj, xj1, fj, fj1, zero_dx, slope = _interp_segment(x, xp, fp)
    res = where(zero_dx, fj1, U.add(U.multiply(slope, U.subtract(x, xj)), fj))
    res = where(U.less(x, xp[0]), left, res)
    return where(U.greater(x, xp[-1]), right, res)


_INTERP: list = []


def _interp_with_derivative():
    """:func:`_interp_value` differentiated as :func:`_interp_linear`: at a sample point ``xp[j]`` the
    derivative is that of the segment to its right (the last segment at ``xp[-1]``), as JAX's; the
    selects of the exact hits made it 0 in ``x`` and ``xp`` there."""
    if not _INTERP:
        from tracejit.transforms.ad_custom import custom_jvp
        from tracejit.transforms.api_ad import jvp as jvp_
        fn = custom_jvp(_interp_value)

        @fn.defjvp
        def _interp_jvp(primals, tangents):
            return fn(*primals), jvp_(_interp_linear, tuple(primals), tuple(tangents))[1]
        _INTERP.append(fn)
    return _INTERP[0]


# --------------------------------------------------------------------------- gradient / trapezoid

def _sl(x, axis, start, stop):
    idx = [slice(None)] * aval(x).ndim
    idx[axis] = slice(start, stop)
    return x[tuple(idx)]


def gradient(f, *varargs, axis=None, edge_order=1):
    """Gradient by second-order central differences inside and one-sided
    differences (order ``edge_order``) at the boundaries (``numpy.gradient``).

    Returns one array per axis (a tuple when several axes are requested).

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.gradient(jnp.array([1.0, 2.0, 4.0, 7.0]))
    Array([1. , 1.5, 2.5, 3. ])
    """
    if eager(f, *varargs):
        return np.gradient(f, *varargs, axis=axis, edge_order=edge_order)
    F = _array(f)
    N = aval(F).ndim
    axes = canonicalize_axes(axis, N) if axis is not None else tuple(range(N))
    if axis is not None and not isinstance(axis, (tuple, list)):
        axes = (canonicalize_axis(axis, N),)
    len_axes = len(axes)
    n = len(varargs)
    if n == 0:
        dx = [1.0] * len_axes
    elif n == 1 and aval(_array(varargs[0])).ndim == 0:
        dx = list(varargs) * len_axes
    elif n == len_axes:
        dx = list(varargs)
    else:
        raise TypeError("invalid number of arguments")
    if edge_order > 2:
        raise ValueError("'edge_order' greater than 2 not supported")
    d = aval(F).dtype
    if dtypes.is_bool(d):
        raise TypeError("numpy boolean subtract, the `-` operator, is not supported")
    otype = d if dtypes.is_inexact(d) else dtypes.float64
    F = convert(F, otype)
    outs = []
    for ax, h in zip(axes, dx):
        size = aval(F).shape[ax]
        if size < edge_order + 1:
            raise ValueError("Shape of array too small to calculate a numerical gradient, "
                             "at least (edge_order + 1) elements are required.")
        h = _array(h)
        uniform = aval(h).ndim == 0
        if not uniform:
            if aval(h).ndim != 1:
                raise ValueError("distances must be either scalars or 1d")
            if aval(h).shape[0] != size:
                raise ValueError("when 1d, distances must match the length of the corresponding dimension")
            hd = aval(h).dtype
            if not dtypes.is_inexact(hd):
                h = convert(h, dtypes.float64)
            from tracejit.numpy.extra import diff
            dxs = diff(h)
            if all_equal_static(h):
                h, uniform = dxs[0], True
            else:
                h = dxs
        shp = [1] * N
        shp[ax] = -1

        def bc(v):
            return reshape(v, tuple(shp))
        f0, f1, f2 = _sl(F, ax, None, -2), _sl(F, ax, 1, -1), _sl(F, ax, 2, None)
        if uniform:
            interior = U.true_divide(U.subtract(f2, f0), U.multiply(2.0, h))
        else:
            dx1, dx2 = h[:-1], h[1:]
            a = U.true_divide(U.negative(dx2), U.multiply(dx1, U.add(dx1, dx2)))
            b = U.true_divide(U.subtract(dx2, dx1), U.multiply(dx1, dx2))
            c = U.true_divide(dx1, U.multiply(dx2, U.add(dx1, dx2)))
            interior = U.add(U.add(U.multiply(bc(a), f0), U.multiply(bc(b), f1)), U.multiply(bc(c), f2))
        e = lambda i: _sl(F, ax, i, i + 1 if i != -1 else None)  # noqa: E731
        if edge_order == 1:
            h0 = h if uniform else h[0]
            hn = h if uniform else h[-1]
            first = U.true_divide(U.subtract(e(1), e(0)), h0)
            last = U.true_divide(U.subtract(e(-1), e(-2)), hn)
        else:
            if uniform:
                a, b, c = U.true_divide(-1.5, h), U.true_divide(2.0, h), U.true_divide(-0.5, h)
                first = U.add(U.add(U.multiply(a, e(0)), U.multiply(b, e(1))), U.multiply(c, e(2)))
                a, b, c = U.true_divide(0.5, h), U.true_divide(-2.0, h), U.true_divide(1.5, h)
                last = U.add(U.add(U.multiply(a, e(-3)), U.multiply(b, e(-2))), U.multiply(c, e(-1)))
            else:
                dx1, dx2 = h[0], h[1]
                a = U.negative(U.true_divide(U.add(U.multiply(2.0, dx1), dx2), U.multiply(dx1, U.add(dx1, dx2))))
                b = U.true_divide(U.add(dx1, dx2), U.multiply(dx1, dx2))
                c = U.negative(U.true_divide(dx1, U.multiply(dx2, U.add(dx1, dx2))))
                first = U.add(U.add(U.multiply(a, e(0)), U.multiply(b, e(1))), U.multiply(c, e(2)))
                dx1, dx2 = h[-2], h[-1]
                a = U.true_divide(dx2, U.multiply(dx1, U.add(dx1, dx2)))
                b = U.negative(U.true_divide(U.add(dx2, dx1), U.multiply(dx1, dx2)))
                c = U.true_divide(U.add(U.multiply(2.0, dx2), dx1), U.multiply(dx2, U.add(dx1, dx2)))
                last = U.add(U.add(U.multiply(a, e(-3)), U.multiply(b, e(-2))), U.multiply(c, e(-1)))
        parts = [first, interior, last] if size > 2 else [first, last]
        out = concatenate([convert(p, otype) for p in parts], axis=ax)
        outs.append(out)
    return outs[0] if len_axes == 1 else tuple(outs)


def all_equal_static(h):
    """True when ``h`` is concrete and evenly spaced (NumPy then uses the uniform formulas)."""
    if is_tracer(h):
        return False
    dxs = np.diff(np.asarray(h))
    return dxs.size > 0 and bool((dxs == dxs[0]).all())


def trapezoid(y, x=None, dx=1.0, axis=-1):
    """Integral of ``y`` along ``axis`` by the trapezoidal rule (``numpy.trapezoid``).

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> float(jnp.trapezoid(jnp.array([1.0, 2.0, 3.0])))
    4.0
    """
    if eager(y, x, dx):
        return np.trapezoid(y, x=x, dx=dx, axis=axis)
    Y = _array(y)
    nd = aval(Y).ndim
    ax = canonicalize_axis(axis, nd)
    if x is None:
        d = to_operand(dx)
    else:
        from tracejit.numpy.extra import diff
        X = _array(x)
        if aval(X).ndim == 1:
            d = diff(X)
            shp = [1] * nd
            shp[ax] = aval(d).shape[0]
            d = reshape(d, tuple(shp))
        else:
            d = diff(X, axis=ax)
    avg = U.true_divide(U.add(_sl(Y, ax, 1, None), _sl(Y, ax, None, -1)), 2.0)
    return R.sum(U.multiply(d, avg), axis=ax)


# --------------------------------------------------------------------------- histogramdd

def histogramdd(sample, bins=10, range=None, density=None, weights=None):
    """Multidimensional histogram (``numpy.histogramdd``): ``(H, edges)``.

    Under jit ``bins`` must be ints or arrays of edges per dimension.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> H, edges = jnp.histogramdd(jnp.array([[0.0, 0.0], [1.0, 1.0]]), bins=2)
    >>> H.tolist()
    [[1.0, 0.0], [0.0, 1.0]]
    """
    if eager(sample, weights) and not (isinstance(bins, (list, tuple)) and any(is_tracer(b) for b in bins)):
        return np.histogramdd(sample, bins=bins, range=range, density=density, weights=weights)
    from tracejit.numpy.sorting import bincount, histogram_bin_edges, searchsorted
    s = _array(sample) if not isinstance(sample, (list, tuple)) or not sample or \
        aval(_array(sample[0])).ndim == 0 else stack([_array(c) for c in sample], axis=-1)
    if aval(s).ndim == 1:
        s = reshape(s, (-1, 1))
    if aval(s).ndim != 2:
        raise ValueError("histogramdd: sample must be 2-D (N, D)")
    N, D = aval(s).shape
    if isinstance(bins, (int, np.integer)) or (isinstance(bins, np.ndarray) and bins.ndim == 0):
        bins = [int(bins)] * D
    if len(bins) != D:
        raise ValueError("The dimension of bins must be equal to the dimension of the sample x.")
    if range is None:
        range = [None] * D
    edges, idx = [], []
    for i in builtins_range(D):
        col = s[:, i]
        e = histogram_bin_edges(col, bins[i], range[i])
        e = _array(e)
        ne = aval(e).shape[0]
        k = searchsorted(e, col, side="right")
        # Values on the rightmost edge fall in the last bin.
        k = where(U.equal(col, e[-1]), np.int64(ne - 1), k)
        edges.append(e)
        idx.append(k)
    nbin = tuple(aval(e).shape[0] + 1 for e in edges)
    flat = np.int64(0)
    for k, nb in zip(idx, nbin):
        flat = U.add(U.multiply(flat, np.int64(nb)), k)
    length = math.prod(nbin)
    w = None if weights is None else convert(ravel(_array(weights)), dtypes.float64)
    hist = convert(bincount(flat, w, length=length), dtypes.float64)
    hist = reshape(hist, nbin)
    hist = hist[tuple(slice(1, -1) for _ in builtins_range(D))]
    if density:
        s_ = R.sum(hist)
        for i in builtins_range(D):
            shp = [1] * D
            shp[i] = aval(hist).shape[i]
            width = convert(U.subtract(edges[i][1:], edges[i][:-1]), dtypes.float64)
            hist = U.true_divide(hist, reshape(width, tuple(shp)))
        hist = U.true_divide(hist, s_)
    return hist, edges


builtins_range = range


def histogram2d(x, y, bins=10, range=None, density=None, weights=None):
    """Two-dimensional histogram (``numpy.histogram2d``): ``(H, xedges, yedges)``.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.histogram2d(jnp.array([0.0, 1.0]), jnp.array([0.0, 1.0]), bins=2)[0].tolist()
    [[1.0, 0.0], [0.0, 1.0]]
    """
    if eager(x, y, weights) and not (isinstance(bins, (list, tuple)) and any(is_tracer(b) for b in bins)):
        return np.histogram2d(x, y, bins=bins, range=range, density=density, weights=weights)
    N = 1
    try:
        N = len(bins)
    except TypeError:
        pass
    if N != 1 and N != 2:
        bins = [bins, bins]  # an array of edges shared by both dimensions
    xa, ya = _array(x), _array(y)
    hist, edges = histogramdd(stack([xa, ya], axis=-1), bins, range, density, weights)
    return hist, edges[0], edges[1]
