"""The Tracer: a stand-in for an array during tracing.

It behaves like a NumPy array: Python operators, array methods and the
NumPy protocols (``__array_ufunc__``, ``__array_function__``) all route to
``tracejit.numpy``, so ``np.sin(t)`` or ``t.sum(axis=0)`` on a tracer is
recorded in the program. Anything that needs the concrete value raises an
error that explains the fix -- unless the tracer's trace knows the value: autodiff
transformations applied eagerly (``grad(f)(x)`` outside ``jit``) trace with concrete
inputs, so ``bool()``, ``int()``, ``float()``, ``.item()``... work there, as in JAX
(see ``StagingTrace.concrete_value_of``).
"""
from __future__ import annotations

import operator

import numpy as np

from tracejit.core import errors

# "No concrete value known": what ``Trace.concrete_value_of`` answers for an abstract value.
NO_VALUE = object()


def _jnp():
    import tracejit.numpy as jnp
    return jnp


def _ufuncs():
    from tracejit.numpy import ufuncs
    return ufuncs


def _op(name, *args):
    # Operators keep Python scalars weak (``t * 2`` with a traced Python float stays a Python
    # float); ``jnp.multiply(t, 2)`` returns a strong value, as NumPy's ufuncs do.
    return _ufuncs().operator(name, *args)


class Tracer:
    """An abstract array value that belongs to one trace."""

    __slots__ = ("_trace", "aval", "_var", "__weakref__")
    __array_priority__ = 1000

    def __init__(self, trace, aval, var):
        self._trace = trace
        self.aval = aval
        self._var = var

    # ------------------------------------------------------------------ metadata
    @property
    def shape(self):
        return self.aval.shape

    @property
    def dtype(self):
        return self.aval.dtype

    @property
    def ndim(self):
        return self.aval.ndim

    @property
    def size(self):
        return self.aval.size

    @property
    def weak_type(self):
        return self.aval.weak_type

    @property
    def T(self):
        return _jnp().transpose(self)

    @property
    def mT(self):
        return _jnp().swapaxes(self, -1, -2)

    @property
    def real(self):
        return _jnp().real(self)

    @property
    def imag(self):
        return _jnp().imag(self)

    @property
    def at(self):
        from tracejit.numpy.indexing import IndexUpdateHelper
        return IndexUpdateHelper(self)

    def _describe(self) -> str:
        return f"traced array {self.aval.str_short()}"

    def __repr__(self):
        r = f"Traced<{self.aval.str_short()}{'{weak}' if self.aval.weak_type else ''}>with<{self._trace.name}>"
        try:
            val = self._trace.concrete_value_of(self._var)
        except Exception:  # a repr never fails; the value is only a debugging aid
            val = NO_VALUE
        return r if val is NO_VALUE else f"{r}(value={np.asarray(val)!r})"

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of unsized object (a 0-d traced array)")
        return self.shape[0]

    def __iter__(self):
        if not self.shape:
            raise TypeError("iteration over a 0-d traced array")
        return (self[i] for i in range(self.shape[0]))

    # ------------------------------------------------------------------ concretization
    def _concrete(self, error, what):
        """The value this tracer stands for, when its trace knows it (eager autodiff);
        otherwise ``error`` (the concretization error for ``what``)."""
        val = self._trace.concrete_value_of(self._var)
        if val is NO_VALUE:
            raise error(errors.concretization_message(what, self))
        return np.asarray(val)

    def __bool__(self):
        return bool(self._concrete(errors.TracerBoolConversionError,
                                   "Python `bool()` of a traced array (e.g. `if x > 0:` or `x and y`)"))

    def __int__(self):
        return int(self._concrete(errors.TracerIntegerConversionError, "`int()`"))

    def __index__(self):
        return operator.index(self._concrete(
            errors.TracerIntegerConversionError,
            "Using a traced array as a Python index (`__index__`, e.g. `range(x)` or `lst[x]`)"))

    def __float__(self):
        return float(self._concrete(errors.ConcretizationTypeError, "`float()`"))

    def __complex__(self):
        return complex(self._concrete(errors.ConcretizationTypeError, "`complex()`"))

    def item(self, *args):
        return self._concrete(errors.ConcretizationTypeError, "`.item()`").item(*args)

    def tolist(self):
        return self._concrete(errors.ConcretizationTypeError, "`.tolist()`").tolist()

    def __array__(self, dtype=None, copy=None):
        val = self._trace.concrete_value_of(self._var)
        if val is not NO_VALUE:
            # Eager autodiff: an integer or boolean value carries no derivative, so it converts
            # (in JAX it is a plain array there). A floating one would silently lose its
            # derivative: that raises, as in JAX.
            if self.aval.dtype.kind not in "fc":
                arr = np.asarray(val, dtype=dtype)
                return arr.copy() if copy else arr
            raise errors.TracerArrayConversionError(
                f"The numpy.ndarray conversion method __array__() was called on {self._describe()}, "
                "which is being differentiated: converting it to a NumPy array would drop its "
                "derivative (JAX raises here too). Use tracejit.numpy functions (or NumPy functions "
                "that dispatch to them, such as np.sin(x)); float(x) or x.item() give its current "
                "value as a Python number (without derivative).")
        raise errors.TracerArrayConversionError(
            f"The numpy.ndarray conversion method __array__() was called on {self._describe()}. "
            "A traced array cannot become a NumPy array: its values are not known while tracing. "
            "Use tracejit.numpy functions (or NumPy functions that dispatch to them, such as "
            "np.sin(x)) instead of code that needs real NumPy arrays, or move this computation "
            "outside of the jitted function.")

    __hash__ = None  # traced arrays are unhashable, like NumPy arrays

    def __setitem__(self, idx, value):
        raise TypeError("traced arrays are immutable; instead of `x[idx] = y` use "
                        "`x = x.at[idx].set(y)` (this is an in-place update under jit)")

    # ------------------------------------------------------------------ NumPy protocols
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        jnp = _jnp()
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

    def __array_function__(self, func, types, args, kwargs):
        jnp = _jnp()
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

    # ------------------------------------------------------------------ operators
    def __neg__(self): return _op("negative", self)
    def __pos__(self): return _op("positive", self)
    def __abs__(self): return _op("absolute", self)
    def __invert__(self): return _op("invert", self)
    def __add__(self, o): return _op("add", self, o)
    def __radd__(self, o): return _op("add", o, self)
    def __sub__(self, o): return _op("subtract", self, o)
    def __rsub__(self, o): return _op("subtract", o, self)
    def __mul__(self, o): return _op("multiply", self, o)
    def __rmul__(self, o): return _op("multiply", o, self)
    def __truediv__(self, o): return _op("true_divide", self, o)
    def __rtruediv__(self, o): return _op("true_divide", o, self)
    def __floordiv__(self, o): return _op("floor_divide", self, o)
    def __rfloordiv__(self, o): return _op("floor_divide", o, self)
    def __mod__(self, o): return _op("remainder", self, o)
    def __rmod__(self, o): return _op("remainder", o, self)
    def __divmod__(self, o): return _op("divmod", self, o)
    def __rdivmod__(self, o): return _op("divmod", o, self)
    def __pow__(self, o): return _ufuncs().power_operator(self, o)
    def __rpow__(self, o): return _op("power", o, self)
    def __matmul__(self, o): return _jnp().matmul(self, o)
    def __rmatmul__(self, o): return _jnp().matmul(o, self)
    def __and__(self, o): return _op("bitwise_and", self, o)
    def __rand__(self, o): return _op("bitwise_and", o, self)
    def __or__(self, o): return _op("bitwise_or", self, o)
    def __ror__(self, o): return _op("bitwise_or", o, self)
    def __xor__(self, o): return _op("bitwise_xor", self, o)
    def __rxor__(self, o): return _op("bitwise_xor", o, self)
    def __lshift__(self, o): return _op("left_shift", self, o)
    def __rlshift__(self, o): return _op("left_shift", o, self)
    def __rshift__(self, o): return _op("right_shift", self, o)
    def __rrshift__(self, o): return _op("right_shift", o, self)
    def __eq__(self, o): return _op("equal", self, o)
    def __ne__(self, o): return _op("not_equal", self, o)
    def __lt__(self, o): return _op("less", self, o)
    def __le__(self, o): return _op("less_equal", self, o)
    def __gt__(self, o): return _op("greater", self, o)
    def __ge__(self, o): return _op("greater_equal", self, o)

    def __getitem__(self, idx):
        from tracejit.numpy.indexing import getitem
        return getitem(self, idx)

    # ------------------------------------------------------------------ array methods
    def sum(self, axis=None, dtype=None, keepdims=False): return _jnp().sum(self, axis=axis, dtype=dtype, keepdims=keepdims)
    def prod(self, axis=None, dtype=None, keepdims=False): return _jnp().prod(self, axis=axis, dtype=dtype, keepdims=keepdims)
    def mean(self, axis=None, dtype=None, keepdims=False): return _jnp().mean(self, axis=axis, dtype=dtype, keepdims=keepdims)
    def var(self, axis=None, dtype=None, ddof=0, keepdims=False): return _jnp().var(self, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims)
    def std(self, axis=None, dtype=None, ddof=0, keepdims=False): return _jnp().std(self, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims)
    def max(self, axis=None, keepdims=False): return _jnp().max(self, axis=axis, keepdims=keepdims)
    def min(self, axis=None, keepdims=False): return _jnp().min(self, axis=axis, keepdims=keepdims)
    def argmax(self, axis=None, keepdims=False): return _jnp().argmax(self, axis=axis, keepdims=keepdims)
    def argmin(self, axis=None, keepdims=False): return _jnp().argmin(self, axis=axis, keepdims=keepdims)
    def all(self, axis=None, keepdims=False): return _jnp().all(self, axis=axis, keepdims=keepdims)
    def any(self, axis=None, keepdims=False): return _jnp().any(self, axis=axis, keepdims=keepdims)
    def cumsum(self, axis=None, dtype=None): return _jnp().cumsum(self, axis=axis, dtype=dtype)
    def cumprod(self, axis=None, dtype=None): return _jnp().cumprod(self, axis=axis, dtype=dtype)
    def astype(self, dtype, copy=True): return _jnp().astype(self, dtype)
    def reshape(self, *shape, order="C"):
        if len(shape) == 1 and not isinstance(shape[0], int):
            shape = shape[0]
        return _jnp().reshape(self, shape, order=order)
    def transpose(self, *axes):
        if len(axes) == 1 and (axes[0] is None or not isinstance(axes[0], int)):
            axes = axes[0]
        return _jnp().transpose(self, axes or None)
    def swapaxes(self, a, b): return _jnp().swapaxes(self, a, b)
    def squeeze(self, axis=None): return _jnp().squeeze(self, axis)
    def flatten(self, order="C"): return _jnp().ravel(self, order=order)
    def ravel(self, order="C"): return _jnp().ravel(self, order=order)
    def clip(self, min=None, max=None): return _jnp().clip(self, min, max)
    def round(self, decimals=0): return _jnp().round(self, decimals)
    def conj(self): return _jnp().conj(self)
    def conjugate(self): return _jnp().conj(self)
    def dot(self, other): return _jnp().dot(self, other)
    def copy(self): return _jnp().array(self, copy=True)
    def sort(self, axis=-1): return _jnp().sort(self, axis=axis)
    def argsort(self, axis=-1): return _jnp().argsort(self, axis=axis)
    def trace(self, offset=0, axis1=0, axis2=1): return _jnp().trace(self, offset, axis1, axis2)
    def nonzero(self, *, size=None, fill_value=None): return _jnp().nonzero(self, size=size, fill_value=fill_value)
    def take(self, indices, axis=None, mode=None): return _jnp().take(self, indices, axis=axis, mode=mode)
    def repeat(self, repeats, axis=None): return _jnp().repeat(self, repeats, axis=axis)
    def block_until_ready(self): return self
