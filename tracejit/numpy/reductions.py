"""Reductions: sum, prod, mean, var, std, max, min, argmax, argmin, all,
any, cumulative sums/products, and NaN-aware variants."""
from __future__ import annotations

import builtins
import functools
import math

import numpy as np

from tracejit.core import dtypes
from tracejit.ops.elementwise import binary_prims
from tracejit.ops.reductions import argmax_p, argmin_p, cumulative_prims, reduce_prims
from tracejit.numpy._util import aval, canonicalize_axes, canonicalize_axis, convert, eager, to_operand
from tracejit.numpy import ufuncs as U


@functools.lru_cache(maxsize=None)
def _numpy_result_dtype(fn_name: str, in_dtype: np.dtype, dtype) -> np.dtype:
    """Ask NumPy which dtype ``np.<fn_name>`` returns (e.g. int32 sums widen to int64)."""
    kw = {} if dtype is None else {"dtype": dtype}
    with np.errstate(all="ignore"):
        return np.asarray(getattr(np, fn_name)(np.ones((1,), in_dtype), **kw)).dtype


def _full_shape(out, axes, ndim):
    it = iter(aval(out).shape)
    return tuple(1 if i in axes else next(it) for i in range(ndim))


# NumPy reduces over no axes (a 0-d array, ``axis=()``) by combining each element with the
# identity: a sum of -0.0 is +0.0, and a complex product is a full complex multiply by 1+0j
# (NaN from an infinite part).
_EMPTY_REDUCTION = {"reduce_sum": ("add", 0), "reduce_prod": ("mul", 1)}


def _reduce(prim_name, x, axes, keepdims):
    ndim = aval(x).ndim
    if axes:
        out = reduce_prims[prim_name].bind(x, axes=axes)
    elif prim_name in _EMPTY_REDUCTION and dtypes.is_inexact(aval(x).dtype):
        op, identity = _EMPTY_REDUCTION[prim_name]
        out = binary_prims[op].bind(np.asarray(identity, aval(x).dtype)[()], x)
    else:
        out = x
    if keepdims:
        from tracejit.numpy.shape import reshape
        out = reshape(out, _full_shape(out, axes, ndim))
    return out


def reduction_mask(where, x):
    """A reduction's ``where=`` mask as a bool array of ``x``'s shape (NumPy broadcasts it)."""
    from tracejit.numpy.shape import broadcast_to
    return broadcast_to(convert(to_operand(where), dtypes.bool_), aval(x).shape)


def _masked(x, where, fill):
    """``x`` with the elements ``where`` is False replaced by ``fill``, the reduction's identity."""
    if where is None:
        return x
    from tracejit.numpy.misc import where as select
    return select(reduction_mask(where, x), x, np.asarray(fill, aval(x).dtype)[()])


def _mask_count(x, where, axes, keepdims):
    """How many elements each result reduces: a Python int without a mask, else the mask's count."""
    if where is None:
        return _count(x, axes)
    return _reduce("reduce_sum", convert(reduction_mask(where, x), dtypes.int64), axes, keepdims)


def _eager_call(np_name, *args, **kwargs):
    return getattr(np, np_name)(*args, **{k: v for k, v in kwargs.items() if v is not None or k == "axis"})


def sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    """Sum of array elements over the given axes (``numpy.sum``)."""
    if eager(a):
        return _eager_call("sum", a, axis=axis, dtype=dtype, out=out, keepdims=keepdims, initial=initial, where=where)
    x = to_operand(a)
    rd = _numpy_result_dtype("sum", aval(x).dtype, dtype)
    x = _masked(convert(x, rd), where, 0)
    axes = canonicalize_axes(axis, aval(x).ndim)
    out = _reduce("reduce_sum", x, axes, keepdims)
    return out if initial is None else U.add(out, initial)


def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    """Product of array elements over the given axes (``numpy.prod``)."""
    if eager(a):
        return _eager_call("prod", a, axis=axis, dtype=dtype, out=out, keepdims=keepdims, initial=initial, where=where)
    x = to_operand(a)
    x = _masked(convert(x, _numpy_result_dtype("prod", aval(x).dtype, dtype)), where, 1)
    out = _reduce("reduce_prod", x, canonicalize_axes(axis, aval(x).ndim), keepdims)
    return out if initial is None else U.multiply(out, initial)


def _extremum(name, prim, a, axis, keepdims, initial, where):
    if eager(a):
        return _eager_call(name, a, axis=axis, keepdims=keepdims, initial=initial, where=where)
    x = to_operand(a)
    if where is not None:
        if initial is None:
            raise ValueError(f"reduction operation '{'maximum' if name == 'max' else 'minimum'}' does not have "
                             "an identity, so to use a where mask one has to specify 'initial'")
        x = _masked(x, where, initial)
    xa = aval(x)
    axes = canonicalize_axes(axis, xa.ndim)
    if initial is None and builtins.any(xa.shape[i] == 0 for i in axes):
        raise ValueError(f"zero-size array to reduction operation {'maximum' if name == 'max' else 'minimum'} "
                         "which has no identity")
    if dtypes.is_complex(xa.dtype):
        raise NotImplementedError(f"{name} of complex traced arrays is not supported")
    if xa.size == 0:
        from tracejit.numpy.creation import full
        shape = tuple(1 if i in axes else s for i, s in enumerate(xa.shape) if keepdims or i not in axes)
        # No reduced axis is empty here (or initial is given), so without initial the result is empty.
        return full(shape, 0 if initial is None else initial, dtype=xa.dtype)
    out = _reduce(prim, x, axes, keepdims)
    if initial is not None:
        out = (U.maximum if name == "max" else U.minimum)(out, initial)
    return out


def max(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    """Maximum along the given axes; NaN propagates (``numpy.max``)."""
    return _extremum("max", "reduce_max", a, axis, keepdims, initial, where)


def min(a, axis=None, out=None, keepdims=False, initial=None, where=None):
    """Minimum along the given axes; NaN propagates (``numpy.min``)."""
    return _extremum("min", "reduce_min", a, axis, keepdims, initial, where)


amax, amin = max, min


def _logical_reduce(name, prim, a, axis, keepdims, where):
    if eager(a):
        return _eager_call(name, a, axis=axis, keepdims=keepdims, where=where)
    x = _masked(convert(to_operand(a), dtypes.bool_), where, name == "all")
    return _reduce(prim, x, canonicalize_axes(axis, aval(x).ndim), keepdims)


def all(a, axis=None, out=None, keepdims=False, *, where=None):
    """True where all elements along ``axis`` are true (``numpy.all``)."""
    return _logical_reduce("all", "reduce_and", a, axis, keepdims, where)


def any(a, axis=None, out=None, keepdims=False, *, where=None):
    """True where any element along ``axis`` is true (``numpy.any``)."""
    return _logical_reduce("any", "reduce_or", a, axis, keepdims, where)


def _count(x, axes):
    return math.prod(aval(x).shape[i] for i in axes)


def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=None):
    """Arithmetic mean along the given axes (``numpy.mean``)."""
    if eager(a):
        return _eager_call("mean", a, axis=axis, dtype=dtype, out=out, keepdims=keepdims, where=where)
    x = to_operand(a)
    rd = _numpy_result_dtype("mean", aval(x).dtype, dtype)
    # float16 means accumulate in float32, as NumPy does (and bfloat16 ones, as JAX does).
    acc = dtypes.float32 if rd in dtypes.HALF_FLOATS else rd
    x = convert(x, acc)
    axes = canonicalize_axes(axis, aval(x).ndim)
    n = _mask_count(x, where, axes, keepdims)
    total = _reduce("reduce_sum", _masked(x, where, 0), axes, keepdims)
    return convert(_divide_by_count(total, n, acc), rd)  # float16: rounds via float32, as NumPy


def _divide_by_count(total, n, out_dtype, ddof=0):
    # NumPy divides by an intp count, so the division runs in (dtype, int64)'s promoted type
    # (float32 sums divide in float64) and is cast back; a zero count gives IEEE inf/nan. A
    # masked reduction's count is an array (``_mask_count``), and NumPy clips count - ddof at 0 too.
    div_dtype = np.result_type(aval(total).dtype, np.intp)
    if isinstance(n, int):
        count = np.asarray(builtins.max(n - ddof, 0), div_dtype)[()]
    else:
        count = U.maximum(convert(U.subtract(n, np.asarray(ddof, aval(n).dtype)[()]), div_dtype),
                          np.asarray(0, div_dtype)[()])
    out = U.true_divide(convert(total, div_dtype), count)
    return convert(out, out_dtype)


def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None, mean=None, correction=None):
    """Variance along the given axes (``numpy.var``), with ``ddof``."""
    if correction is not None:
        ddof = correction
    if eager(a):
        return _eager_call("var", a, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims, where=where, mean=mean)
    x = to_operand(a)
    rd = _numpy_result_dtype("var", aval(x).dtype, dtype)
    in_dtype = dtype if dtype is not None else (aval(x).dtype if dtypes.is_inexact(aval(x).dtype) else rd)
    x = convert(x, dtypes.float32 if in_dtype in dtypes.HALF_FLOATS else in_dtype)
    axes = canonicalize_axes(axis, aval(x).ndim)
    # NumPy's ``mean=``: the mean to center on, of keepdims shape (it is not checked).
    center = _mean_keep(x, axes, where) if mean is None else convert(to_operand(mean), aval(x).dtype)
    centered = U.subtract(x, center)
    if dtypes.is_complex(aval(x).dtype):
        # |z|^2 as re^2 + im^2, the way NumPy's var computes it for complex input.
        from tracejit.numpy.misc import imag, real
        sq = U.add(U.square(real(centered)), U.square(imag(centered)))
    else:
        sq = U.square(centered)
    # Masked after squaring, as JAX orders it: a row with nothing selected has a NaN mean, and its
    # gradient is NaN in every element, as JAX's.
    total = _reduce("reduce_sum", _masked(sq, where, 0), axes, keepdims)
    return _divide_by_count(total, _mask_count(x, where, axes, keepdims), rd, ddof)


def _mean_keep(x, axes, where=None):
    total = _reduce("reduce_sum", _masked(x, where, 0), axes, True)
    return _divide_by_count(total, _mask_count(x, where, axes, True), aval(x).dtype)


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None, mean=None, correction=None):
    """Standard deviation along the given axes (``numpy.std``), with ``ddof``."""
    if correction is not None:
        ddof = correction
    if eager(a):
        return _eager_call("std", a, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims, where=where, mean=mean)
    return U.sqrt(var(a, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims, where=where, mean=mean))


def _arg_extremum(name, prim, a, axis, keepdims):
    if eager(a):
        return getattr(np, name)(a, axis=axis, keepdims=keepdims)
    from tracejit.numpy.shape import ravel, reshape
    x = to_operand(a)
    xa = aval(x)
    if dtypes.is_complex(xa.dtype):
        raise NotImplementedError(f"{name} of complex traced arrays is not supported")
    if axis is None or (xa.ndim == 0 and axis in (0, -1)):
        # (NumPy takes axis 0 of a 0-d array as its one element, as argmax of the flattened array.)
        flat = ravel(x)
        if aval(flat).size == 0:
            raise ValueError(f"attempt to get {name} of an empty sequence")
        out = prim.bind(flat, axes=(0,), index_dtype=dtypes.int64)
        return reshape(out, (1,) * xa.ndim) if keepdims else out
    ax = canonicalize_axis(axis, xa.ndim)
    out = prim.bind(x, axes=(ax,), index_dtype=dtypes.int64)
    return reshape(out, _full_shape(out, (ax,), xa.ndim)) if keepdims else out


def argmax(a, axis=None, out=None, *, keepdims=False):
    """Index of the maximum along ``axis`` (first NaN wins, as NumPy)."""
    return _arg_extremum("argmax", argmax_p, a, axis, keepdims)


def argmin(a, axis=None, out=None, *, keepdims=False):
    """Index of the minimum along ``axis`` (first NaN wins, as NumPy)."""
    return _arg_extremum("argmin", argmin_p, a, axis, keepdims)


def _cumulative(name, np_name, a, axis, dtype):
    if eager(a):
        if np_name in ("cumsum", "cumprod"):
            return getattr(np, np_name)(a, axis=axis, dtype=dtype)
        fn = np.maximum if name == "cummax" else np.minimum
        return fn.accumulate(np.ravel(a) if axis is None else a, axis=0 if axis is None else axis)  # None: flattened
    from tracejit.numpy.shape import ravel
    x = to_operand(a)
    if axis is None:
        x, axis = ravel(x), 0
    if np_name in ("cumsum", "cumprod"):
        x = convert(x, _numpy_result_dtype(np_name, aval(x).dtype, dtype))
    ax = canonicalize_axis(axis, aval(x).ndim)
    return cumulative_prims[name].bind(x, axis=ax, reverse=False)


def cumsum(a, axis=None, dtype=None, out=None):
    """Cumulative sum along ``axis`` (flattened when None)."""
    return _cumulative("cumsum", "cumsum", a, axis, dtype)


def cumprod(a, axis=None, dtype=None, out=None):
    """Cumulative product along ``axis`` (flattened when None)."""
    return _cumulative("cumprod", "cumprod", a, axis, dtype)


def cummax(a, axis=None):
    """Cumulative maximum along ``axis`` (flattened when None, as ``cumsum``)."""
    return _cumulative("cummax", "cummax", a, axis, None)


def cummin(a, axis=None):
    """Cumulative minimum along ``axis`` (flattened when None, as ``cumsum``)."""
    return _cumulative("cummin", "cummin", a, axis, None)


def _cumulative_with_initial(fn, np_fn, identity, x, axis, dtype, include_initial):
    if eager(x):
        return np_fn(x, axis=axis, dtype=dtype, include_initial=include_initial)
    from tracejit.numpy.creation import full
    from tracejit.numpy.shape import concatenate, ravel
    x = to_operand(x)
    if aval(x).ndim == 0:
        x = ravel(x)                # a 0-d array counts as one element, as NumPy's
    nd = aval(x).ndim
    if axis is None:
        if nd > 1:
            raise ValueError("For arrays which have more than one dimension ``axis`` argument is required.")
        axis = 0
    out = fn(x, axis=axis, dtype=dtype)
    if not include_initial:
        return out
    ax = canonicalize_axis(axis, nd)
    first = tuple(1 if i == ax else s for i, s in enumerate(aval(out).shape))
    return concatenate([full(first, identity, dtype=aval(out).dtype), out], axis=ax)


def cumulative_sum(x, /, *, axis=None, dtype=None, include_initial=False):
    """Cumulative sum (NumPy 2's ``cumulative_sum``): ``axis`` is required above one dimension;
    ``include_initial`` starts with the sum of nothing, 0.

    Examples
    --------
    >>> import numpy as np
    >>> import tracejit.numpy as jnp
    >>> jnp.cumulative_sum(np.arange(4), include_initial=True)
    Array([0, 0, 1, 3, 6])
    """
    return _cumulative_with_initial(cumsum, np.cumulative_sum, 0, x, axis, dtype, include_initial)


def cumulative_prod(x, /, *, axis=None, dtype=None, include_initial=False):
    """Cumulative product (NumPy 2's ``cumulative_prod``): ``axis`` is required above one
    dimension; ``include_initial`` starts with the product of nothing, 1.

    Examples
    --------
    >>> import numpy as np
    >>> import tracejit.numpy as jnp
    >>> jnp.cumulative_prod(np.arange(1, 4), include_initial=True)
    Array([1, 1, 2, 6])
    """
    return _cumulative_with_initial(cumprod, np.cumulative_prod, 1, x, axis, dtype, include_initial)


def _nan_variant(np_name, base, fill):
    def fn(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
        if eager(a):
            return _eager_call(np_name, a, axis=axis, dtype=dtype, keepdims=keepdims, initial=initial, where=where)
        from tracejit.numpy.misc import where as select
        x = to_operand(a)
        d = aval(x).dtype
        if dtypes.is_inexact(d):
            x = select(U.isnan(x), np.asarray(fill(d), d)[()], x)
        return base(x, axis=axis, keepdims=keepdims, initial=initial, where=where, **({"dtype": dtype} if dtype else {}))
    fn.__name__ = np_name
    fn.__doc__ = f"``numpy.{np_name}``: like the base reduction, ignoring NaNs."
    return fn


nansum = _nan_variant("nansum", sum, lambda d: 0)
nanprod = _nan_variant("nanprod", prod, lambda d: 1)


def _nan_extremum(np_name, base, fill_sign):
    def fn(a, axis=None, out=None, keepdims=False, initial=None, where=None):
        if eager(a):
            return _eager_call(np_name, a, axis=axis, keepdims=keepdims, initial=initial, where=where)
        from tracejit.numpy.misc import where as select
        x = to_operand(a)
        d = aval(x).dtype
        if not dtypes.is_inexact(d):
            return base(x, axis=axis, keepdims=keepdims, initial=initial, where=where)
        nan = U.isnan(x)
        filled = select(nan, np.asarray(fill_sign * np.inf, d)[()], x)
        res = base(filled, axis=axis, keepdims=keepdims, initial=initial, where=where)
        if initial is not None:
            return res          # NaNs ignored: an all-NaN slice gives `initial`, as NumPy's fmax.reduce
        all_nan = all(nan, axis=axis, keepdims=keepdims, where=where)
        return select(all_nan, np.asarray(np.nan, d)[()], res)
    fn.__name__ = np_name
    fn.__doc__ = f"``numpy.{np_name}``: ignores NaNs; an all-NaN slice gives NaN."
    return fn


nanmax = _nan_extremum("nanmax", max, -1)
nanmin = _nan_extremum("nanmin", min, 1)


def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=None):
    """Mean ignoring NaNs (``numpy.nanmean``)."""
    if eager(a):
        return _eager_call("nanmean", a, axis=axis, dtype=dtype, keepdims=keepdims, where=where)
    x = to_operand(a)
    if not dtypes.is_inexact(aval(x).dtype):
        return mean(x, axis=axis, dtype=dtype, keepdims=keepdims, where=where)
    valid = U.logical_not(U.isnan(x))
    total = nansum(x, axis=axis, dtype=dtype, keepdims=keepdims, where=where)
    count = sum(valid, axis=axis, keepdims=keepdims, where=where)
    return U.true_divide(total, convert(count, aval(total).dtype))
