"""Array creation. Eagerly these are NumPy's functions; under tracing they
stage ``broadcast_in_dim``/``iota`` equations, so a ``zeros((4096, 4096))``
inside jit is fused into its consumers instead of becoming a constant."""
from __future__ import annotations

import operator

import numpy as np

from tracejit.array import Array
from tracejit.core import dtypes
from tracejit.ops.elementwise import iota_p
from tracejit.ops.structural import broadcast_in_dim_p
from tracejit.numpy._util import aval, convert, eager, is_tracer, to_operand
from tracejit.numpy.shape import _shape_arg


def _dtype_or(dtype, default):
    # (enable_x64 off: a traced creation makes JAX's 32-bit type; eager results narrow on the way out)
    return dtypes.narrow(dtypes.canonical(dtype) if dtype is not None else default)


def full(shape, fill_value, dtype=None, *, order="C"):
    """Array of ``shape`` filled with ``fill_value``."""
    if eager(fill_value):
        return np.full(shape, fill_value, dtype=dtype)
    shape = _shape_arg(shape)
    v = to_operand(fill_value)
    d = _dtype_or(dtype, aval(v).dtype)
    v = convert(v, d)
    if aval(v).shape == shape:
        return v
    from tracejit.numpy.shape import broadcast_to
    return broadcast_to(v, shape)


def _filled(value, shape, dtype):
    shape = _shape_arg(shape)
    d = _dtype_or(dtype, dtypes.float64)
    return broadcast_in_dim_p.bind(np.asarray(value, d)[()], shape=shape, broadcast_dimensions=())


def zeros(shape, dtype=None, *, order="C"):
    """Array of zeros (float64 unless ``dtype`` is given)."""
    if eager():
        return np.zeros(shape, dtype=dtype)
    return _filled(0, shape, dtype)


def ones(shape, dtype=None, *, order="C"):
    """Array of ones (float64 unless ``dtype`` is given)."""
    if eager():
        return np.ones(shape, dtype=dtype)
    return _filled(1, shape, dtype)


def empty(shape, dtype=None, *, order="C"):
    """An array whose values are unspecified: zeros, as JAX's (eagerly too, so that nothing reads
    memory it has not written and eager and jit agree)."""
    if eager():
        return np.zeros(shape, dtype=dtype)
    return _filled(0, shape, dtype)


def _like(np_fn, value):
    def fn(a, dtype=None, shape=None, *args, **kwargs):
        if eager(a, *args):
            return np_fn(a, *args, dtype=dtype, shape=shape)
        x = to_operand(a)
        s = aval(x).shape if shape is None else shape
        d = aval(x).dtype if dtype is None else dtype
        if value is None:
            return full(s, args[0] if args else kwargs["fill_value"], dtype=d)
        return _filled(value, s, d)
    fn.__name__ = np_fn.__name__
    fn.__doc__ = f"``numpy.{np_fn.__name__}``: an array shaped like ``a``."
    return fn


zeros_like = _like(np.zeros_like, 0)
ones_like = _like(np.ones_like, 1)
empty_like = _like(np.zeros_like, 0)      # zeros, as JAX's (and jnp.empty)
empty_like.__name__ = "empty_like"
empty_like.__doc__ = "``numpy.empty_like``: an array shaped like ``a``, of zeros (as JAX's ``jnp.empty_like``)."


def full_like(a, fill_value, dtype=None, shape=None):
    """Array shaped like ``a`` filled with ``fill_value``."""
    if eager(a, fill_value):
        return np.full_like(a, fill_value, dtype=dtype, shape=shape)
    x = to_operand(a)
    return full(aval(x).shape if shape is None else shape, fill_value,
                dtype=aval(x).dtype if dtype is None else dtype)


def _static_scalar(v, what):
    if is_tracer(v):
        raise TypeError(f"{what} must be a static (concrete) value under jit; got a traced array. "
                        "Pass it as a static argument (static_argnums) or compute the array outside jit.")
    return v


def arange(start, stop=None, step=None, dtype=None):
    """Evenly spaced values in ``[start, stop)`` (bounds must be static)."""
    for v in (start, stop, step):
        _static_scalar(v, "arange bounds")
    if eager():
        return np.arange(start, stop, step, dtype=dtype)
    begin, end = (0, start) if stop is None else (start, stop)
    stride = 1 if step is None else step
    if stride == 0:
        raise ValueError("arange: step must not be zero")
    n = max(0, int(np.ceil((end - begin) / stride)))
    d = _dtype_or(dtype, np.arange(begin, begin + stride, stride).dtype)
    if dtypes.is_bool(d):
        return np.arange(start, stop, step, dtype=d)  # at most two elements; a constant
    # As NumPy: the first two values are cast to the dtype, the rest are first + i * (second - first)
    # computed in the dtype (so arange(0.5, 2, 0.5, dtype=int32) is [0, 1, 2]).
    with np.errstate(all="ignore"):
        first, second = np.asarray(begin, d)[()], np.asarray(begin + stride, d)[()]
        delta = second - first
    base = iota_p.bind(dtype=d, shape=(n,), dimension=0)
    if delta != 1:
        base = base * delta
    if first != 0:
        base = base + first
    if n > 1 and first + delta != second:
        from tracejit.numpy.misc import where
        base = where(iota_p.bind(dtype=dtypes.int64, shape=(n,), dimension=0) == 1, second, base)
    return base


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0):
    """``num`` evenly spaced samples over ``[start, stop]``."""
    if eager(start, stop):
        return np.linspace(start, stop, num, endpoint=endpoint, retstep=retstep, dtype=dtype, axis=axis)
    from tracejit.numpy import ufuncs as U
    from tracejit.numpy.misc import where
    num = operator.index(num)
    if axis != 0:
        raise NotImplementedError("linspace(axis != 0) is not supported on traced bounds")
    start, stop = to_operand(start), to_operand(stop)
    # As NumPy, compute in result_type(start, stop, float) -- a Python float is weak (NEP 50), so
    # float32 bounds compute in float32 -- and only then cast to ``dtype``.
    comp = np.result_type(1.0, *(aval(v).dtype for v in (start, stop) if not aval(v).weak_type))
    comp = dtypes.narrow(comp)
    out_dtype = _dtype_or(dtype, comp)
    start, stop = convert(start, comp), convert(stop, comp)
    div = (num - 1) if endpoint else num
    idx = iota_p.bind(dtype=comp, shape=(num,), dimension=0)
    step = U.true_divide(U.subtract(stop, start), np.asarray(max(div, 1), comp)[()])
    from tracejit.numpy.shape import reshape
    shp = aval(start).shape
    idx = reshape(idx, (num,) + (1,) * len(shp))
    out = U.add(start, U.multiply(idx, step))
    if endpoint and num > 1:
        last = iota_p.bind(dtype=dtypes.int64, shape=(num,), dimension=0)
        last = reshape(last, (num,) + (1,) * len(shp))
        out = where(U.equal(last, num - 1), stop, out)
    if dtypes.is_integer(out_dtype):
        out = U.floor(out)  # NumPy 2 floors (not truncates) for integer dtypes
    out = convert(out, out_dtype)
    return (out, step) if retstep else out


def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
    """Numbers spaced evenly on a log scale."""
    if eager(start, stop):
        return np.logspace(start, stop, num, endpoint=endpoint, base=base, dtype=dtype, axis=axis)
    from tracejit.numpy import ufuncs as U
    y = linspace(start, stop, num, endpoint=endpoint, axis=axis)
    out = U.power(convert(np.asarray(base), aval(y).dtype), y)
    return convert(out, dtype) if dtype is not None else out


def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
    """Numbers spaced evenly on a log scale, given by end points (``numpy.geomspace``).

    As NumPy computes it: in ``result_type(start, stop, float, dtype or float64)``, on the
    magnitudes relative to ``start``'s sign (so both ends may be negative, or complex), with the
    end points exactly ``start`` and ``stop``. (NumPy raises for a zero end point; under jit the
    values are not known, and a zero gives NaN or inf.)

    Examples
    --------
    >>> import numpy as np, tracejit
    >>> import tracejit.numpy as jnp
    >>> tracejit.jit(lambda a: jnp.geomspace(a, 8.0 * a, 4))(np.float32(-1.0))
    Array([-1., -2., -4., -8.])
    """
    if eager(start, stop):
        return np.geomspace(start, stop, num, endpoint=endpoint, dtype=dtype, axis=axis)
    from tracejit.numpy import ufuncs as U
    from tracejit.numpy.shape import moveaxis
    s, e = to_operand(start), to_operand(stop)
    dt = np.result_type(aval(s).dtype, aval(e).dtype, float(num), np.zeros((), dtype))
    s, e = convert(s, dt), convert(e, dt)
    sign = U.sign(s)
    s, e = U.true_divide(s, sign), U.true_divide(e, sign)
    out = logspace(U.log10(s), U.log10(e), num, endpoint=endpoint, dtype=dt)
    if num > 0:
        out = out.at[0].set(s)
        if num > 1 and endpoint:
            out = out.at[-1].set(e)
    out = U.multiply(sign, out)
    if axis != 0:
        out = moveaxis(out, 0, axis)
    return convert(out, dt if dtype is None else np.dtype(dtype))


def eye(N, M=None, k=0, dtype=float, *, order="C"):
    """2-D array with ones on the ``k``-th diagonal."""
    if eager():
        return np.eye(N, M, k, dtype=dtype)
    M = N if M is None else M
    rows = iota_p.bind(dtype=dtypes.int64, shape=(N, M), dimension=0)
    cols = iota_p.bind(dtype=dtypes.int64, shape=(N, M), dimension=1)
    from tracejit.numpy import ufuncs as U
    return convert(U.equal(U.add(rows, k), cols), _dtype_or(dtype, None))


def identity(n, dtype=None):
    """Square identity matrix."""
    return eye(n, dtype=float if dtype is None else dtype)


def tri(N, M=None, k=0, dtype=float):
    """Ones at and below the ``k``-th diagonal."""
    if eager():
        return np.tri(N, M, k, dtype=dtype)
    M = N if M is None else M
    from tracejit.numpy import ufuncs as U
    rows = iota_p.bind(dtype=dtypes.int64, shape=(N, M), dimension=0)
    cols = iota_p.bind(dtype=dtypes.int64, shape=(N, M), dimension=1)
    return convert(U.greater_equal(U.add(rows, k), cols), dtypes.canonical(dtype))


def array(object, dtype=None, copy=True, ndmin=0, order=None):
    """Create an array; traced inputs stay traced (``jnp.array``)."""
    if eager(object):
        return np.array(object, dtype=dtype, copy=copy, ndmin=ndmin)
    x = to_operand(object)
    if dtype is not None:
        x = convert(x, dtype)
    elif dtypes.is_python_scalar(x):
        x = convert(x, aval(x).dtype)
    if ndmin and aval(x).ndim < ndmin:
        from tracejit.numpy.shape import reshape
        x = reshape(x, (1,) * (ndmin - aval(x).ndim) + aval(x).shape)
    return x


def asarray(a, dtype=None, order=None, copy=None):
    """Convert to an array: an Array of the dtype asked for is returned as is; NumPy arrays are
    copied (outside a trace), so a later write to them does not change the result (JAX's arrays
    are immutable)."""
    if eager(a):
        if type(a) is Array and (dtype is None or a.dtype == dtype):
            return a
        return np.array(a, dtype=dtype) if isinstance(a, np.ndarray) else np.asarray(a, dtype=dtype)
    return array(a, dtype=dtype, copy=False)
