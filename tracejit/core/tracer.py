"""The Tracer: a stand-in for an array during tracing.

It behaves like a NumPy array. This module holds what belongs to the trace: the
metadata (``shape``, ``dtype``, ``aval``...), ``repr``, hashing and immutability,
and concretization. Python operators, array methods and the NumPy protocols
(``__array_ufunc__``, ``__array_function__``) compute with ``tracejit.numpy``, which
is above this layer: ``tracejit/numpy/array_methods.py`` defines them and attaches
them to :class:`Tracer` when ``tracejit.numpy`` is imported (as JAX's
``jax/_src/numpy/array_methods.py`` does), so ``np.sin(t)`` or ``t.sum(axis=0)`` on
a tracer is recorded in the program.

Anything that needs the concrete value raises an error that explains the fix --
unless the tracer's trace knows the value: autodiff transformations applied eagerly
(``grad(f)(x)`` outside ``jit``) trace with concrete inputs, so ``bool()``, ``int()``,
``float()``, ``.item()``... work there, as in JAX (see ``StagingTrace.concrete_value_of``).
"""
from __future__ import annotations

import operator

import numpy as np

from tracejit.core import dtypes, errors

# "No concrete value known": what ``Trace.concrete_value_of`` answers for an abstract value.
NO_VALUE = object()

# JAX's error for ``x[idx] = y`` on one of its arrays (tracers included).
IMMUTABLE_MESSAGE = ("'{}' object does not support item assignment. JAX arrays are immutable. Instead "
                     "of ``x[idx] = y``, use ``x = x.at[idx].set(y)`` or another .at[] method: "
                     "https://docs.jax.dev/en/latest/_autosummary/jax.numpy.ndarray.at.html")


class Tracer:
    """An abstract array value that belongs to one trace."""

    # ``_np``: None for a JAX-semantics (immutable) value; for a NumPy-semantics value (an
    # ``np.ndarray`` argument of a jitted function, an ``np.*`` result) the state object of
    # ``tracejit.functionalize``, which replaces ``_v`` when the array is written in place.
    __slots__ = ("_trace", "aval", "_v", "_np", "__weakref__")
    __array_priority__ = 1000

    def __init__(self, trace, aval, var, np_state=None):
        self._trace = trace
        self.aval = aval
        self._v = var
        self._np = np_state

    @property
    def _var(self):
        """The program variable holding this array's current value. A NumPy-semantics view whose
        base was written since its value was derived re-derives it first (``sync``), so every
        reader of a tracer sees the latest in-place update, as NumPy's aliasing would."""
        state = self._np
        if state is not None:
            state.sync(self)
        return self._v

    @_var.setter
    def _var(self, var):
        self._v = var

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
            if not dtypes.is_inexact(self.aval.dtype):
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
        # JAX semantics (NumPy-semantics tracers get theirs from tracejit/functionalize).
        raise TypeError(IMMUTABLE_MESSAGE.format(type(self)))

    # Operators, array methods, ``.T``/``.mT``/``.real``/``.imag``/``.at``, ``__getitem__`` and the
    # NumPy protocols are attached by tracejit/numpy/array_methods.py.

    def block_until_ready(self):
        """Tracers have no pending computation: returns the tracer itself."""
        return self


def jax_value(x):
    """``x`` as a JAX-semantics value: a NumPy-semantics tracer (an ``np.ndarray`` argument under
    ``jit``, which ``x += 1`` writes in place) becomes a plain tracer of the same value. A
    ``jnp``/``lax`` function that hands back its argument (``jnp.asarray(x)``, a no-op cast)
    returns a JAX array, as in JAX; other values are returned unchanged.

    Examples
    --------
    >>> jax_value(3.0)
    3.0
    """
    if isinstance(x, Tracer) and x._np is not None:
        return Tracer(x._trace, x.aval, x._var)
    return x
