"""How a Python value is seen as an abstract value.

``get_aval`` answers for anything an operation accepts (a tracer, an array, a scalar);
``leaf_aval`` for a user's argument to a transformation (``jit``, ``grad``, ``vmap``...),
with an error naming the argument when it is not an array; ``ShapeDtypeStruct`` is the
shape-and-dtype stand-in JAX users pass instead of an array.
"""
from __future__ import annotations

import numpy as np

from tracejit.core import dtypes
from tracejit.core.avals import ShapedArray, aval_of_value
from tracejit.core.tracer import Tracer


def get_aval(x) -> ShapedArray:
    """The abstract value of an operand: a tracer's own, or that of a concrete value.

    Examples
    --------
    >>> get_aval(np.zeros((2, 3), np.float32))
    ShapedArray(f32[2,3])
    """
    if isinstance(x, Tracer):
        return x.aval
    return aval_of_value(x)


class ShapeDtypeStruct:
    """A shape and dtype standing in for an array (``jax.ShapeDtypeStruct``).

    Examples
    --------
    >>> ShapeDtypeStruct((2, 3), np.float32)
    ShapeDtypeStruct(shape=(2, 3), dtype=float32)
    """

    __slots__ = ("shape", "dtype", "weak_type")

    def __init__(self, shape, dtype, weak_type=False):
        self.shape = tuple(shape)
        self.dtype = dtypes.canonical(dtype)
        self.weak_type = weak_type

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        return int(np.prod(self.shape, dtype=np.int64))

    def __eq__(self, other):
        return (isinstance(other, ShapeDtypeStruct) and self.shape == other.shape
                and self.dtype == other.dtype)

    def __hash__(self):
        return hash((self.shape, self.dtype))

    def __repr__(self):
        return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name})"


def leaf_aval(leaf, where: str) -> ShapedArray:
    """The abstract value of a user's argument ``leaf`` to a transformation; ``where`` names
    the argument in the error raised for a value that is not an array.

    Examples
    --------
    >>> leaf_aval(2.0, "argument 0")
    ShapedArray(f64[]{weak})
    """
    if isinstance(leaf, Tracer):
        return leaf.aval
    # (with enable_x64 off, 64-bit arguments are taken as their 32-bit types, as in JAX)
    if isinstance(leaf, np.ndarray):
        return ShapedArray(leaf.shape, dtypes.narrow(leaf.dtype))
    if isinstance(leaf, (ShapeDtypeStruct, ShapedArray)):
        return ShapedArray(leaf.shape, dtypes.narrow(np.dtype(leaf.dtype)), getattr(leaf, "weak_type", False))
    if dtypes.is_python_scalar(leaf):
        return ShapedArray((), dtypes.python_scalar_dtype(leaf), weak_type=True)
    if isinstance(leaf, np.generic):
        return ShapedArray((), dtypes.narrow(leaf.dtype))
    if isinstance(leaf, (list, tuple)) or hasattr(leaf, "__array__"):
        arr = np.asarray(leaf)
        if arr.dtype != object:
            return ShapedArray(arr.shape, dtypes.narrow(arr.dtype))
    raise TypeError(f"{where} is a {type(leaf).__name__}, which is not a valid array argument. "
                    "Pass arrays or scalars, or mark the argument static with static_argnums / "
                    "static_argnames if it configures the computation.")
