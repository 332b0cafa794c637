"""Python operators and array methods of traced arrays, and the methods of ``tracejit.Array``
that compute with ``tracejit.numpy``.

As in JAX (``jax/_src/numpy/array_methods.py``), the array types are defined below the
NumPy layer -- :class:`tracejit.core.tracer.Tracer` holds the trace-level behaviour
(metadata, ``repr``, concretization), :class:`tracejit.array.Array` the immutable
host array -- and the behaviour that computes is defined here, on top of
``tracejit.numpy``, and attached to those classes when ``tracejit.numpy`` is imported
(its ``__init__`` imports this module last). Importing ``tracejit`` imports
``tracejit.numpy``, so every tracer and Array has these methods.

The attached methods are plain functions: a Python operator on a tracer calls its
ufunc's operator entry point directly (no per-call lookup), and an array method calls
the public ``tracejit.numpy`` function of the same name.
"""
from __future__ import annotations

import numpy as np

from tracejit import numpy as jnp   # the public functions (strong results; Arrays outside a trace)
from tracejit.array import Array, _ResultsAsArrays, _plain, as_array_result
from tracejit.core.tracer import Tracer
from tracejit.numpy import sorting
from tracejit.numpy.indexing import IndexUpdateHelper, getitem
from tracejit.numpy.ufuncs import UFUNCS, power_operator

__all__: list[str] = []   # nothing to import from here: the module's effect is attaching methods


def _attach(cls, name, fn, doc=None):
    """Set ``fn`` as ``cls.name``, named as a method of ``cls`` (for tracebacks and ``help``)."""
    if not isinstance(fn, property):
        fn.__name__ = name
        fn.__qualname__ = f"{cls.__name__}.{name}"
        if doc is not None:
            fn.__doc__ = doc
    setattr(cls, name, fn)


# ---------------------------------------------------------------------------------- operators
# Each operator is the ufunc's ``_operator`` entry point: Python scalar operands stay weakly
# typed (``t * 2`` with a traced Python float is a Python float), whereas ``jnp.multiply(t, 2)``
# returns a strong value, as NumPy's ufuncs do (see ``Ufunc._operator``).

def _unary(ufunc_name):
    op = UFUNCS[ufunc_name]._operator

    def method(self):
        return op(self)
    return method


def _defers(other) -> bool:
    """Whether a binary operator leaves ``other`` to its reflected method: an object that is no
    array but claims priority over arrays (``__array_priority__``, as a sparse BCOO does), so that
    ``traced_x @ bcoo`` is ``bcoo.__rmatmul__(traced_x)`` as in JAX."""
    if isinstance(other, (Tracer, np.ndarray, np.generic)):
        return False
    priority = getattr(type(other), "__array_priority__", 0)
    return isinstance(priority, (int, float)) and priority > 0


def _binary(ufunc_name):
    op = UFUNCS[ufunc_name]._operator

    def method(self, other):
        if _defers(other):
            return NotImplemented
        return op(self, other)
    return method


def _reflected(ufunc_name):
    op = UFUNCS[ufunc_name]._operator

    def method(self, other):
        return op(other, self)
    return method


_UNARY_OPERATORS = {"__neg__": "negative", "__pos__": "positive", "__abs__": "absolute",
                    "__invert__": "invert"}
# Binary operators with a reflected form (``__radd__``...).
_BINARY_OPERATORS = {"add": "add", "sub": "subtract", "mul": "multiply", "truediv": "true_divide",
                     "floordiv": "floor_divide", "mod": "remainder", "divmod": "divmod",
                     "and": "bitwise_and", "or": "bitwise_or", "xor": "bitwise_xor",
                     "lshift": "left_shift", "rshift": "right_shift"}
_COMPARISONS = {"__eq__": "equal", "__ne__": "not_equal", "__lt__": "less", "__le__": "less_equal",
                "__gt__": "greater", "__ge__": "greater_equal"}


def _pow(self, other):
    # ``t ** 2`` is ``square``, ``t ** -1`` ``reciprocal``, ``t ** 0.5`` ``sqrt``, as ``ndarray.__pow__``.
    return power_operator(self, other)


_power = UFUNCS["power"]._operator


def _rpow(self, other):
    return _power(other, self)


def _matmul(self, other):
    if _defers(other):
        return NotImplemented
    return jnp.matmul(self, other)


def _rmatmul(self, other):
    return jnp.matmul(other, self)


def _getitem(self, index):
    return getitem(self, index)


# ------------------------------------------------------------------------------ NumPy protocols
def _tracer_array_ufunc(self, ufunc, method, *inputs, **kwargs):
    # ``np.sin(t)``, ``np.add.reduce(t)``: the tracejit.numpy ufunc of the same name.
    if kwargs.get("out") is not None:
        raise TypeError(f"np.{ufunc.__name__}(..., out=...) cannot write into a traced array; "
                        "use the returned value instead")
    kwargs.pop("out", None)
    fn = getattr(jnp, ufunc.__name__, None)
    if fn is None:
        raise NotImplementedError(f"NumPy ufunc np.{ufunc.__name__} is not supported by "
                                  "tracejit.numpy on traced arrays")
    if method == "__call__":
        return fn(*inputs, **kwargs)
    impl = getattr(fn, method, None)
    if impl is None:
        raise NotImplementedError(f"np.{ufunc.__name__}.{method} is not supported on traced arrays")
    return impl(*inputs, **kwargs)


def _tracer_array_function(self, func, types, args, kwargs):
    # ``np.concatenate([t, u])``, ``np.linalg.inv(t)``: the tracejit.numpy function of the same name.
    module = func.__module__ or ""
    target = jnp
    for sub in ("linalg", "fft"):
        if module.endswith(sub):
            target = getattr(jnp, sub)
    fn = getattr(target, func.__name__, None)
    if fn is None or not callable(fn):
        raise NotImplementedError(f"NumPy function {module}.{func.__name__} is not supported "
                                  "by tracejit.numpy on traced arrays")
    return fn(*args, **kwargs)


# ---------------------------------------------------------------------------------- properties
def _T(self):
    return jnp.transpose(self)


def _mT(self):
    return jnp.swapaxes(self, -1, -2)


def _real(self):
    return jnp.real(self)


def _imag(self):
    return jnp.imag(self)


def _tracer_at(self):
    return IndexUpdateHelper(self)


# ------------------------------------------------------------------------------- array methods
def _sum(self, axis=None, dtype=None, keepdims=False): return jnp.sum(self, axis=axis, dtype=dtype, keepdims=keepdims)
def _prod(self, axis=None, dtype=None, keepdims=False): return jnp.prod(self, axis=axis, dtype=dtype, keepdims=keepdims)
def _mean(self, axis=None, dtype=None, keepdims=False): return jnp.mean(self, axis=axis, dtype=dtype, keepdims=keepdims)
def _var(self, axis=None, dtype=None, ddof=0, keepdims=False): return jnp.var(self, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims)
def _std(self, axis=None, dtype=None, ddof=0, keepdims=False): return jnp.std(self, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims)
def _max(self, axis=None, keepdims=False): return jnp.max(self, axis=axis, keepdims=keepdims)
def _min(self, axis=None, keepdims=False): return jnp.min(self, axis=axis, keepdims=keepdims)
def _argmax(self, axis=None, keepdims=False): return jnp.argmax(self, axis=axis, keepdims=keepdims)
def _argmin(self, axis=None, keepdims=False): return jnp.argmin(self, axis=axis, keepdims=keepdims)
def _all(self, axis=None, keepdims=False): return jnp.all(self, axis=axis, keepdims=keepdims)
def _any(self, axis=None, keepdims=False): return jnp.any(self, axis=axis, keepdims=keepdims)
def _cumsum(self, axis=None, dtype=None): return jnp.cumsum(self, axis=axis, dtype=dtype)
def _cumprod(self, axis=None, dtype=None): return jnp.cumprod(self, axis=axis, dtype=dtype)
def _astype(self, dtype, copy=True): return jnp.astype(self, dtype)
def _swapaxes(self, a, b): return jnp.swapaxes(self, a, b)
def _squeeze(self, axis=None): return jnp.squeeze(self, axis)
def _flatten(self, order="C"): return jnp.ravel(self, order=order)
def _ravel(self, order="C"): return jnp.ravel(self, order=order)
def _clip(self, min=None, max=None): return jnp.clip(self, min, max)
def _round(self, decimals=0): return jnp.round(self, decimals)
def _conj(self): return jnp.conj(self)
def _conjugate(self): return jnp.conj(self)
def _dot(self, other): return jnp.dot(self, other)
def _copy(self): return jnp.array(self, copy=True)
def _sort(self, axis=-1): return jnp.sort(self, axis=axis)
def _argsort(self, axis=-1): return jnp.argsort(self, axis=axis)
def _trace(self, offset=0, axis1=0, axis2=1): return jnp.trace(self, offset, axis1, axis2)
def _nonzero(self, *, size=None, fill_value=None): return jnp.nonzero(self, size=size, fill_value=fill_value)
def _take(self, indices, axis=None, mode=None): return jnp.take(self, indices, axis=axis, mode=mode)
def _repeat(self, repeats, axis=None): return jnp.repeat(self, repeats, axis=axis)


def _reshape(self, *shape, order="C"):
    # ``t.reshape(2, 3)`` and ``t.reshape((2, 3))``, as ``ndarray.reshape``.
    if len(shape) == 1 and not isinstance(shape[0], int):
        shape = shape[0]
    return jnp.reshape(self, shape, order=order)


def _transpose(self, *axes):
    # ``t.transpose()``, ``t.transpose(1, 0)`` and ``t.transpose((1, 0))``, as ``ndarray.transpose``.
    if len(axes) == 1 and (axes[0] is None or not isinstance(axes[0], int)):
        axes = axes[0]
    return jnp.transpose(self, axes or None)


_TRACER_METHODS = {
    "sum": _sum, "prod": _prod, "mean": _mean, "var": _var, "std": _std, "max": _max, "min": _min,
    "argmax": _argmax, "argmin": _argmin, "all": _all, "any": _any, "cumsum": _cumsum,
    "cumprod": _cumprod, "astype": _astype, "reshape": _reshape, "transpose": _transpose,
    "swapaxes": _swapaxes, "squeeze": _squeeze, "flatten": _flatten, "ravel": _ravel, "clip": _clip,
    "round": _round, "conj": _conj, "conjugate": _conjugate, "dot": _dot, "copy": _copy, "sort": _sort,
    "argsort": _argsort, "trace": _trace, "nonzero": _nonzero, "take": _take, "repeat": _repeat,
}
# What jnp function a method computes with, when its name differs (for the docstrings).
_METHOD_TARGETS = {"flatten": "ravel", "conjugate": "conj", "copy": "array"}


# ---------------------------------------------------------------------------- tracejit.Array
def _array_sort(self, axis=-1, kind=None, order=None, *, stable=True, descending=False):
    return as_array_result(sorting.sort(_plain(self), axis, kind, order, stable=stable, descending=descending))


def _array_at(self):
    return _ResultsAsArrays(IndexUpdateHelper(_plain(self)))


_ARRAY_GETITEM = Array.__getitem__


def _array_getitem(self, index):
    # A concrete Array indexed with traced indices (a constant table gathered under jit) is a
    # traced gather, as in JAX; other indices keep NumPy's indexing.
    if isinstance(index, Tracer) or (isinstance(index, (tuple, list)) and any(isinstance(i, Tracer) for i in index)):
        return getitem(_plain(self), index)
    return _ARRAY_GETITEM(self, index)


# ----------------------------------------------------------------------------------- attaching
def _attach_tracer_methods() -> None:
    for name, ufunc_name in _UNARY_OPERATORS.items():
        _attach(Tracer, name, _unary(ufunc_name), f"``{ufunc_name}`` of the traced array.")
    for short, ufunc_name in _BINARY_OPERATORS.items():
        _attach(Tracer, f"__{short}__", _binary(ufunc_name), f"``{ufunc_name}(self, other)``.")
        _attach(Tracer, f"__r{short}__", _reflected(ufunc_name), f"``{ufunc_name}(other, self)``.")
    for name, ufunc_name in _COMPARISONS.items():
        _attach(Tracer, name, _binary(ufunc_name), f"``{ufunc_name}(self, other)`` (elementwise).")
    _attach(Tracer, "__pow__", _pow, "``power(self, other)`` (``square``/``reciprocal``/``sqrt`` for 2, -1, 0.5).")
    _attach(Tracer, "__rpow__", _rpow, "``power(other, self)``.")
    _attach(Tracer, "__matmul__", _matmul, "``matmul(self, other)``.")
    _attach(Tracer, "__rmatmul__", _rmatmul, "``matmul(other, self)``.")
    _attach(Tracer, "__getitem__", _getitem, "``self[index]``: basic and advanced indexing.")
    _attach(Tracer, "__array_ufunc__", _tracer_array_ufunc,
            "NumPy's ufunc protocol: ``np.sin(t)`` is ``tracejit.numpy.sin(t)``.")
    _attach(Tracer, "__array_function__", _tracer_array_function,
            "NumPy's function protocol: ``np.f(t, ...)`` is ``tracejit.numpy.f(t, ...)``.")
    _attach(Tracer, "T", property(_T, doc="The transposed array (``tracejit.numpy.transpose``)."))
    _attach(Tracer, "mT", property(_mT, doc="The matrix transpose: the last two axes swapped."))
    _attach(Tracer, "real", property(_real, doc="The real part (``tracejit.numpy.real``)."))
    _attach(Tracer, "imag", property(_imag, doc="The imaginary part (``tracejit.numpy.imag``)."))
    _attach(Tracer, "at", property(_tracer_at, doc="Functional updates: ``t.at[idx].set(v)``, ``.add``, ..."))
    for name, fn in _TRACER_METHODS.items():
        _attach(Tracer, name, fn, f"``tracejit.numpy.{_METHOD_TARGETS.get(name, name)}`` of the traced array.")


def _attach_array_methods() -> None:
    _attach(Array, "__getitem__", _array_getitem, "``self[index]``: NumPy's indexing; traced indices gather.")
    _attach(Array, "sort", _array_sort, "A sorted copy (``jax.Array.sort``; NumPy's ``ndarray.sort`` sorts in place).")
    _attach(Array, "at", property(_array_at, doc="Functional updates: ``x.at[idx].set(v)``, ``.add``, "
                                                 "``.multiply``, ``.min``, ``.max``, ``.get``, ..."))


_attach_tracer_methods()
_attach_array_methods()
