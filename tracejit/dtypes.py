"""Dtype utilities (``jax.dtypes``), for tracejit's dtypes: NumPy's, with NumPy 2 promotion.

tracejit computes in JAX's x64 mode, so :func:`canonicalize_dtype` keeps 64-bit
types, and ``bfloat16`` (ml_dtypes'), which computes in float32; :class:`prng_key` exists for
``issubdtype`` checks, but tracejit's keys are raw ``uint32`` arrays, so no
array has that dtype.

Examples
--------
>>> import numpy as np
>>> from tracejit import dtypes
>>> dtypes.canonicalize_dtype(np.float64)
dtype('float64')
>>> dtypes.result_type(np.float32, 1.0)
dtype('float32')
"""
from __future__ import annotations

import numpy as np

from tracejit.core import dtypes as _core
from tracejit.transforms.ad import float0

bfloat16 = _core.bfloat16.type if _core.bfloat16 is not None else None

__all__ = ["TypePromotionError", "bfloat16", "canonicalize_dtype", "extended", "finfo", "float0", "iinfo", "issubdtype",
           "itemsize_bits", "prng_key", "result_type", "scalar_type_of"]


class TypePromotionError(ValueError):
    """Implicit promotion between two dtypes is not defined (``jax.dtypes.TypePromotionError``)."""


class extended(np.generic):
    """Abstract base of JAX's extended dtypes (typed PRNG keys); tracejit has none.

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import dtypes
    >>> dtypes.issubdtype(np.uint32, dtypes.extended)
    False
    """


class prng_key(extended):
    """Abstract scalar type of typed PRNG key arrays (``jax.dtypes.prng_key``).

    tracejit's keys are raw ``uint32[2]`` arrays (typed keys are not implemented),
    so ``issubdtype(key.dtype, prng_key)`` is False, as for JAX's raw keys.

    Examples
    --------
    >>> import tracejit
    >>> from tracejit import dtypes
    >>> dtypes.issubdtype(tracejit.random.key(0).dtype, dtypes.prng_key)
    False
    """


def canonicalize_dtype(dtype, allow_extended_dtype: bool = False) -> np.dtype:
    """The dtype tracejit computes ``dtype`` in (``jax.dtypes.canonicalize_dtype``).

    With JAX's x64 mode (tracejit's only mode) this is ``np.dtype(dtype)``;
    Python ``float``/``int``/``complex``/``bool`` give float64/int64/complex128/bool.

    Parameters
    ----------
    dtype : dtype-like
    allow_extended_dtype : bool
        Accepted for JAX compatibility; tracejit has no extended dtypes.

    Raises
    ------
    TypeError
        For a dtype tracejit does not support (strings, objects, ``float128``, ...).

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import dtypes
    >>> dtypes.canonicalize_dtype(float), dtypes.canonicalize_dtype("int32")
    (dtype('float64'), dtype('int32'))
    """
    if isinstance(dtype, type) and issubclass(dtype, extended):
        raise TypeError(f"tracejit has no extended dtypes; {dtype.__name__} cannot be canonicalized")
    if isinstance(dtype, np.dtype) and dtype == float0:
        return dtype
    return _core.canonical(dtype)


def issubdtype(a, b) -> bool:
    """Whether dtype ``a`` is a subtype of ``b`` (``jax.dtypes.issubdtype``; NumPy's hierarchy).

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import dtypes
    >>> dtypes.issubdtype(np.float32, np.floating), dtypes.issubdtype(np.int8, np.unsignedinteger)
    (True, False)
    >>> dtypes.issubdtype(dtypes.float0, np.floating)
    False
    """
    if a is None or b is None:
        return False
    if isinstance(a, type) and issubclass(a, extended):
        return isinstance(b, type) and issubclass(a, b)
    return _core.issubdtype(a, b)


def _operand(x):
    """``(dtype, weak)`` of one result_type operand."""
    if x is None:
        return _core.float64, True      # JAX: None stands for the default float type
    if _core.is_python_scalar(x):
        return _core.python_scalar_dtype(x), True
    if isinstance(x, type) and x in (float, int, complex, bool):
        return _core.canonical(x), True
    if hasattr(x, "dtype") and not isinstance(x, type):
        return np.dtype(x.dtype), bool(getattr(getattr(x, "aval", x), "weak_type", False))
    return np.dtype(x), False


def result_type(*args, return_weak_type_flag: bool = False):
    """The dtype of an operation on ``args`` (``jax.dtypes.result_type``; NumPy 2 / NEP 50 rules).

    Python scalars and the Python types ``float``/``int``/``complex``/``bool`` are weak:
    they do not widen an array's dtype. Where JAX's promotion lattice and NumPy's differ,
    tracejit (and so this function) follows NumPy: ``int32`` with ``float32`` is float64
    (JAX: float32), and the result is weak only when every operand is weak (JAX: an
    integer array with a Python float gives a weak float).

    Parameters
    ----------
    *args : arrays, scalars, dtypes or Python types
    return_weak_type_flag : bool
        Also return whether the result is weakly typed.

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import dtypes
    >>> dtypes.result_type(np.int32, np.float32)
    dtype('float64')
    >>> dtypes.result_type(np.ones(2, np.float32), 2.0, return_weak_type_flag=True)
    (dtype('float32'), False)
    >>> dtypes.result_type(1, 2.0, return_weak_type_flag=True)
    (dtype('float64'), True)
    """
    if not args:
        raise ValueError("at least one array or dtype is required")
    try:
        dtype, weak = _core.result_type(*(_operand(a) for a in args))
    except np.exceptions.DTypePromotionError as e:
        raise TypePromotionError(str(e)) from None
    return (dtype, weak) if return_weak_type_flag else dtype


def scalar_type_of(x) -> type:
    """The Python scalar type of ``x``'s dtype: bool, int, float or complex (``jax.dtypes.scalar_type_of``).

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import dtypes
    >>> dtypes.scalar_type_of(np.float32(1)), dtypes.scalar_type_of(np.ones(2, np.uint8))
    (<class 'float'>, <class 'int'>)
    """
    dtype = _operand(x)[0]
    kind = _core.kind(dtype)
    if kind == "b":
        return bool
    if kind in "iu":
        return int
    if kind == "f":
        return float
    if kind == "c":
        return complex
    raise TypeError(f"Invalid scalar value {x!r}")


def itemsize_bits(dtype) -> int:
    """Bits one element of ``dtype`` occupies: ``8 * itemsize`` (8 for bool) (``jax.dtypes.itemsize_bits``).

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import dtypes
    >>> dtypes.itemsize_bits(np.float32), dtypes.itemsize_bits(np.bool_)
    (32, 8)
    """
    if dtype is None:
        raise ValueError("dtype cannot be None.")
    return np.dtype(dtype).itemsize * 8


def finfo(dtype):
    """Machine limits of a floating dtype (``jax.dtypes.finfo``; ``numpy.finfo``).

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import dtypes
    >>> float(dtypes.finfo(np.float32).eps)
    1.1920928955078125e-07
    """
    return np.finfo(dtype)


def iinfo(dtype):
    """Machine limits of an integer dtype (``jax.dtypes.iinfo``; ``numpy.iinfo``).

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit import dtypes
    >>> int(dtypes.iinfo(np.int8).max)
    127
    """
    return np.iinfo(dtype)
