"""Set operations on 1-D arrays: isin, in1d, intersect1d, union1d,
setdiff1d, setxor1d.

``isin`` has a static output shape and is traceable as is. The others
return as many values as the data dictate, so under jit they need the static
``size=`` argument (as in ``jax.numpy``): the sorted result is truncated or
padded to ``size`` with ``fill_value`` (default: the smallest result value,
or 0 when the result is empty).
"""
from __future__ import annotations

import numpy as np

from tracejit.core import dtypes
from tracejit.numpy._util import aval, concrete, convert, eager, is_tracer, promote, to_operand
from tracejit.numpy import ufuncs as U
from tracejit.numpy import reductions as R
from tracejit.numpy.misc import where
from tracejit.numpy.shape import concatenate, ravel, reshape

__all__ = ["isin", "in1d", "intersect1d", "union1d", "setdiff1d", "setxor1d"]


def _array(x):
    x = to_operand(x)
    return x if is_tracer(x) or isinstance(x, np.ndarray) else np.asarray(x)


def _needs_size(fn):
    from tracejit.core.errors import ConcretizationTypeError
    return ConcretizationTypeError(
        f"{fn}: the number of result values depends on the values of the input, but under jit every shape "
        f"must be static. Pass a static size=N (the sorted result is truncated or padded with fill_value), "
        f"e.g. jnp.{fn}(a, b, size=a.size).")


def _pad_eager(res, size, fill_value):
    """NumPy's result truncated or padded to ``size``, as the traced version gives it."""
    res = np.asarray(res)
    if fill_value is None:
        fill_value = res[0] if res.size else 0
    out = np.full((size,), fill_value, dtype=res.dtype)
    k = min(size, res.size)
    out[:k] = res[:k]
    return out


def _sized_eager(res, size, fill_value, fn):
    """An eager set operation's result, padded to ``size`` when given (as under jit)."""
    return res if size is None else _pad_eager(res, _check_size(size, fn), fill_value)


def _check_size(size, fn):
    from tracejit.numpy.sorting import _check_size as check
    return check(size, fn)


def _first_of_runs(s):
    """True at the first element of each run of equal values of sorted ``s`` (NaNs equal, as np.unique)."""
    n = aval(s).shape[0]
    if n == 0:
        return convert(s, dtypes.bool_)
    neq = U.not_equal(s[1:], s[:-1])
    if dtypes.is_inexact(aval(s).dtype):
        neq = U.logical_and(neq, U.logical_not(U.logical_and(U.isnan(s[1:]), U.isnan(s[:-1]))))
    return concatenate([np.ones((1,), bool), neq])


def _compact(values, mask, size, fill_value):
    """The values where ``mask``, sorted, truncated/padded to ``size`` with ``fill_value``."""
    from tracejit.numpy.sorting import lexsort
    from tracejit.numpy.indexing_api import take
    from tracejit.numpy.creation import full
    n = aval(values).shape[0]
    dt = aval(values).dtype
    if size == 0:
        return np.zeros((0,), dt)
    if n == 0:
        fv = 0 if fill_value is None else fill_value
        return full((size,), convert(to_operand(fv), dt), dtype=dt)
    order = lexsort((values, convert(U.logical_not(mask), dtypes.int8)))
    srt = take(values, order)
    if size <= n:
        srt = srt[:size]
    else:
        from tracejit.numpy.shape import broadcast_to
        srt = concatenate([srt, broadcast_to(srt[:1], (size - n,))])
    count = R.sum(convert(mask, dtypes.int64))
    from tracejit.numpy.sorting import _iota
    valid = U.less(_iota(dtypes.int64, (size,), 0), count)
    if fill_value is None:
        fv = where(U.greater(count, np.int64(0)), srt[0], convert(np.asarray(0), dt))
    else:
        fv = convert(to_operand(fill_value), dt)
    return where(valid, srt, fv)


def isin(element, test_elements, assume_unique=False, invert=False, *, kind=None):
    """Boolean mask: which values of ``element`` occur in ``test_elements`` (``numpy.isin``).

    NaN is never found (NaN != NaN), as in NumPy.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.isin(jnp.array([1, 2, 3]), jnp.array([3, 1]))
    Array([ True, False,  True])
    """
    if eager(element, test_elements):
        return np.isin(element, test_elements, assume_unique=assume_unique, invert=invert, kind=kind)
    e, t = promote(_array(element), _array(test_elements))
    e, t = _array(e), ravel(_array(t))
    m = aval(t).shape[0]
    if m == 0:
        from tracejit.numpy.creation import full
        res = full(aval(e).shape, False, dtype=bool)
    elif dtypes.is_complex(aval(e).dtype) or kind == "table" or m <= 16:
        # Compare against every test value.
        res = R.any(U.equal(reshape(e, aval(e).shape + (1,)), t), axis=-1)
    else:
        from tracejit.numpy.sorting import searchsorted, sort
        from tracejit.numpy.indexing_api import take
        from tracejit.numpy.misc import clip
        st = sort(t)
        pos = clip(searchsorted(st, e), np.int64(0), np.int64(m - 1))
        res = U.equal(take(st, pos), e)
    return U.logical_not(res) if invert else res


def in1d(ar1, ar2, assume_unique=False, invert=False, *, kind=None):
    """``isin`` of the flattened ``ar1`` (``numpy.in1d``, removed from NumPy 2.4; prefer ``isin``).

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.in1d(jnp.array([[1, 2], [3, 4]]), jnp.array([4, 1]))
    Array([ True, False, False,  True])
    """
    if eager(ar1, ar2):
        return np.isin(np.ravel(ar1), ar2, assume_unique=assume_unique, invert=invert, kind=kind)
    return isin(ravel(_array(ar1)), ar2, assume_unique=assume_unique, invert=invert, kind=kind)


def union1d(ar1, ar2, *, size=None, fill_value=None):
    """Sorted unique values present in either array (``numpy.union1d``).

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.union1d(jnp.array([3, 1]), jnp.array([2, 1]))
    Array([1, 2, 3])
    """
    if concrete(ar1, ar2):
        res = np.union1d(ar1, ar2)
        return _sized_eager(res, size, fill_value, "union1d")
    if size is None:
        raise _needs_size("union1d")
    a, b = promote(ravel(_array(ar1)), ravel(_array(ar2)))
    return setop_values(concatenate([a, b]), None, size, fill_value, "union1d")


def setop_values(c, keep, size, fill_value, fn):
    from tracejit.numpy.sorting import sort
    size = _check_size(size, fn)
    s = sort(c)
    mask = _first_of_runs(s)
    if keep is not None:
        mask = U.logical_and(mask, keep(s))
    return _compact(s, mask, size, fill_value)


def intersect1d(ar1, ar2, assume_unique=False, return_indices=False, *, size=None, fill_value=None):
    """Sorted unique values present in both arrays (``numpy.intersect1d``).

    With ``return_indices`` the indices of the first occurrences in ``ar1``
    and ``ar2`` come too (padded indices are 0 under jit).

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.intersect1d(jnp.array([1, 3, 4, 3]), jnp.array([3, 1, 2, 1]))
    Array([1, 3])
    """
    if concrete(ar1, ar2):
        res = np.intersect1d(ar1, ar2, assume_unique=assume_unique, return_indices=return_indices)
        if size is None:
            return res
        size = _check_size(size, "intersect1d")
        if return_indices:
            return (_pad_eager(res[0], size, fill_value), _pad_eager(res[1], size, 0),
                    _pad_eager(res[2], size, 0))
        return _pad_eager(res, size, fill_value)
    if size is None:
        raise _needs_size("intersect1d")
    a, b = promote(ravel(_array(ar1)), ravel(_array(ar2)))
    a, b = _array(a), _array(b)
    vals = setop_values(a, lambda s: isin(s, b), size, fill_value, "intersect1d")
    if not return_indices:
        return vals
    return vals, _first_index(a, vals), _first_index(b, vals)


def _first_index(arr, vals):
    """Index of the first occurrence in ``arr`` of each of ``vals`` (0 when absent)."""
    from tracejit.numpy.sorting import argsort, searchsorted
    from tracejit.numpy.indexing_api import take
    from tracejit.numpy.misc import clip
    n = aval(arr).shape[0]
    if n == 0:
        return np.zeros(aval(vals).shape, np.int64)
    order = argsort(arr)
    srt = take(arr, order)
    pos = clip(searchsorted(srt, vals), np.int64(0), np.int64(n - 1))
    found = U.equal(take(srt, pos), vals)
    return where(found, take(order, pos), np.int64(0))


def setdiff1d(ar1, ar2, assume_unique=False, *, size=None, fill_value=None):
    """Sorted unique values of ``ar1`` that are not in ``ar2`` (``numpy.setdiff1d``).

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.setdiff1d(jnp.array([1, 2, 3, 2]), jnp.array([2]))
    Array([1, 3])
    """
    if concrete(ar1, ar2):
        res = np.setdiff1d(ar1, ar2, assume_unique=assume_unique)
        return _sized_eager(res, size, fill_value, "setdiff1d")
    if size is None:
        raise _needs_size("setdiff1d")
    a = ravel(_array(ar1))
    b = _array(ar2)
    return setop_values(a, lambda s: isin(s, b, invert=True), size, fill_value, "setdiff1d")


def setxor1d(ar1, ar2, assume_unique=False, *, size=None, fill_value=None):
    """Sorted unique values in exactly one of the arrays (``numpy.setxor1d``).

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.setxor1d(jnp.array([1, 2, 3]), jnp.array([2, 3, 4]))
    Array([1, 4])
    """
    if concrete(ar1, ar2):
        res = np.setxor1d(ar1, ar2, assume_unique=assume_unique)
        return _sized_eager(res, size, fill_value, "setxor1d")
    if size is None:
        raise _needs_size("setxor1d")
    from tracejit.numpy.sorting import sort
    a, b = promote(ravel(_array(ar1)), ravel(_array(ar2)))
    a, b = _array(a), _array(b)
    sa, sb = sort(a), sort(b)
    ma = U.logical_and(_first_of_runs(sa), isin(sa, b, invert=True))
    mb = U.logical_and(_first_of_runs(sb), isin(sb, a, invert=True))
    # NaN != NaN, so a NaN of each array is kept, as in NumPy.
    return _compact(concatenate([sa, sb]), concatenate([ma, mb]), _check_size(size, "setxor1d"), fill_value)
