"""Type names, type and shape predicates, and printing: the ``jax.numpy`` names
that inspect arrays and dtypes rather than compute on values.

The dtype aliases are NumPy's scalar types (as ``tracejit.numpy.float32`` is);
the predicates accept tracers (they read only ``dtype``/``ndim``, which are
static under ``jit``); the printing options are NumPy's own, since tracejit's
concrete arrays are NumPy arrays.
"""
from __future__ import annotations

import numpy as np

from tracejit.core import dtypes

from tracejit.core.errors import ConcretizationTypeError
from tracejit.numpy._util import aval, broadcast_shapes as _broadcast_shapes, is_tracer, to_operand

__all__ = ["ComplexWarning", "bool", "cdouble", "character", "csingle", "double", "flexible", "object_",
           "single", "isdtype", "iscomplexobj", "isrealobj", "isscalar", "iterable", "get_printoptions",
           "printoptions", "set_printoptions", "array_repr", "array_str", "broadcast_shapes", "result_type"]

ComplexWarning = np.exceptions.ComplexWarning
bool = np.bool_  # noqa: A001  (jnp.bool, as in NumPy 2 and JAX)
cdouble, csingle = np.complex128, np.complex64
double, single = np.float64, np.float32
character, flexible, object_ = np.character, np.flexible, np.object_

# NumPy's print options govern how concrete (NumPy) arrays print.
get_printoptions = np.get_printoptions
printoptions = np.printoptions
set_printoptions = np.set_printoptions

_KINDS = ("bool", "signed integer", "unsigned integer", "integral", "real floating", "complex floating",
          "numeric")


def _as_dtype(d):
    if isinstance(d, str) and d in _KINDS:
        return d
    return np.dtype(d)


def isdtype(dtype, kind):
    """Whether ``dtype`` is of ``kind`` (the array API's ``isdtype``).

    ``kind`` is a dtype, one of ``'bool'``, ``'signed integer'``, ``'unsigned integer'``,
    ``'integral'``, ``'real floating'``, ``'complex floating'``, ``'numeric'``, or a tuple of
    those (any of them matches).

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.isdtype(jnp.float32, 'real floating')
    True
    >>> jnp.isdtype(jnp.int8, ('bool', 'unsigned integer'))
    False
    """
    kinds = tuple(_as_dtype(k) for k in kind) if isinstance(kind, tuple) else _as_dtype(kind)
    return np.isdtype(np.dtype(dtype), kinds)


def _dtype_of(x):
    if x is None:
        return None
    if hasattr(x, "dtype") and not isinstance(x, type):
        return np.dtype(x.dtype)
    try:
        return aval(to_operand(x)).dtype
    except TypeError:
        return np.asarray(x).dtype


_WEAK_SCALAR = {"b": False, "i": 0, "u": 0, "f": 0.0, "c": 0j}


def result_type(*arrays_and_dtypes):
    """The dtype NumPy's promotion gives ``arrays_and_dtypes`` (``numpy.result_type``).

    Traced arrays take part by their dtype; a weakly typed one (a traced Python scalar) as
    a Python scalar of its kind, so it does not widen an array's dtype (NEP 50).

    Examples
    --------
    >>> import numpy as np, tracejit, tracejit.numpy as jnp
    >>> jnp.result_type(np.float32, 1.0)
    dtype('float32')
    >>> tracejit.jit(lambda x: jnp.zeros(2, jnp.result_type(x, 2)))(np.ones(2, np.int8)).dtype
    dtype('int8')
    """
    def for_promotion(a):
        if not is_tracer(a):
            return a
        av = aval(a)
        return _WEAK_SCALAR[dtypes.kind(av.dtype)] if av.weak_type else av.dtype
    return np.result_type(*(for_promotion(a) for a in arrays_and_dtypes))


def iscomplexobj(x):
    """Whether ``x`` has a complex dtype (by type only, not by value).

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.iscomplexobj(jnp.array([1.0, 2.0]))
    False
    >>> jnp.iscomplexobj(1 + 0j)
    True
    """
    d = _dtype_of(x)
    return d is not None and np.issubdtype(d, np.complexfloating)


def isrealobj(x):
    """Whether ``x`` does not have a complex dtype (``not iscomplexobj(x)``).

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.isrealobj(jnp.array([1 + 2j]))
    False
    """
    return not iscomplexobj(x)


def isscalar(element):
    """Whether ``element`` is a scalar: a Python or NumPy scalar, or a 0-d array (as in JAX).

    Unlike ``numpy.isscalar``, a 0-d array (traced or concrete) counts as a scalar.

    Examples
    --------
    >>> import numpy as np
    >>> import tracejit.numpy as jnp
    >>> jnp.isscalar(np.array(3.0)), jnp.isscalar([3.0]), jnp.isscalar("a")
    (True, False, True)
    """
    if np.isscalar(element):
        return True
    if isinstance(element, np.ndarray) or is_tracer(element):
        return element.ndim == 0
    if hasattr(element, "__jax_array__"):
        return np.ndim(element.__jax_array__()) == 0
    return False


def iterable(y):
    """Whether ``y`` can be iterated over (``numpy.iterable``).

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.iterable([1, 2]), jnp.iterable(2)
    (True, False)
    """
    return np.iterable(y)


def _concrete_for_printing(arr, fn):
    if is_tracer(arr):
        raise ConcretizationTypeError(
            f"jnp.{fn}: the values of a traced array are not known while tracing, so it cannot be "
            f"printed. Print it outside jit, or return it from the jitted function.")
    return np.asarray(to_operand(arr))


def array_repr(arr, max_line_width=None, precision=None, suppress_small=None):
    """The string representation of an array (``numpy.array_repr``).

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.array_repr(jnp.array([1.5, 2.0]))
    'array([1.5, 2. ])'
    """
    return np.array_repr(_concrete_for_printing(arr, "array_repr"), max_line_width, precision, suppress_small)


def array_str(a, max_line_width=None, precision=None, suppress_small=None):
    """The string of an array's values, without the ``array(...)`` wrapper (``numpy.array_str``).

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.array_str(jnp.array([1, 2, 3]))
    '[1 2 3]'
    """
    return np.array_str(_concrete_for_printing(a, "array_str"), max_line_width, precision, suppress_small)


def broadcast_shapes(*shapes):
    """The shape that ``shapes`` broadcast to (a tuple of ints).

    Integers stand for 1-d shapes, as in NumPy.

    Examples
    --------
    >>> import tracejit.numpy as jnp
    >>> jnp.broadcast_shapes((2, 1), (3,))
    (2, 3)
    """
    if not shapes:
        return ()
    norm = [(int(s),) if np.ndim(s) == 0 else tuple(int(d) for d in s) for s in shapes]
    return _broadcast_shapes(*norm)


for _fn in (isdtype, iscomplexobj, isrealobj, isscalar, iterable, array_repr, array_str, broadcast_shapes):
    _fn._keeps_python_scalars = True  # Python bools / strings / tuples, as NumPy and JAX return
del _fn
