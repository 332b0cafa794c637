"""Type aliases for annotations (``jax.typing``).

``ArrayLike`` is what tracejit functions accept as arrays: NumPy arrays and
scalars, Python scalars and traced arrays. ``DTypeLike`` is anything
``numpy.dtype`` accepts. ``Array`` is the type of tracejit's results,
``tracejit.Array`` (a read-only ``numpy.ndarray`` subclass).

Examples
--------
>>> import numpy as np
>>> from tracejit.typing import ArrayLike, DTypeLike
>>> def scale(x: ArrayLike, dtype: DTypeLike = np.float64) -> np.ndarray:
...     return np.asarray(x, dtype) * 2
>>> scale(1)
np.float64(2.0)
"""
from __future__ import annotations

from typing import Union

import numpy as np

from tracejit.array import Array
from tracejit.core.tracer import Tracer

ArrayLike = Union[np.ndarray, np.bool_, np.number, bool, int, float, complex, Tracer]
"""Arrays, NumPy/Python scalars and traced arrays (not lists or tuples, as in JAX)."""

DTypeLike = Union[str, type, np.dtype]
"""A dtype, a scalar type, or a dtype name."""

__all__ = ["Array", "ArrayLike", "DTypeLike"]
