"""Abstract values: what tracing knows about an array (shape, dtype, weak type)."""
from __future__ import annotations

import math

import numpy as np

from tracejit.core import dtypes


class ShapedArray:
    """The abstract value of an array: static shape, dtype and weak-type flag.

    Examples
    --------
    >>> ShapedArray((3,), np.float32)
    ShapedArray(f32[3])
    """

    __slots__ = ("shape", "dtype", "weak_type", "_hash")

    def __init__(self, shape, dtype, weak_type: bool = False):
        self.shape = tuple(int(d) for d in shape)
        if any(d < 0 for d in self.shape):
            raise ValueError(f"negative dimension in shape {self.shape}")
        self.dtype = dtypes.canonical(dtype)
        self.weak_type = bool(weak_type)
        self._hash = hash((self.shape, self.dtype, self.weak_type))

    @classmethod
    def _of_array(cls, x) -> "ShapedArray":
        # An array's shape is already a tuple of non-negative ints: skip __init__'s checks (every
        # eager primitive application builds these for its operands).
        aval = cls.__new__(cls)
        aval.shape, aval.dtype, aval.weak_type = x.shape, dtypes.canonical(x.dtype), False
        aval._hash = hash((aval.shape, aval.dtype, False))
        return aval

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    def update(self, shape=None, dtype=None, weak_type=None) -> "ShapedArray":
        return ShapedArray(self.shape if shape is None else shape,
                           self.dtype if dtype is None else dtype,
                           self.weak_type if weak_type is None else weak_type)

    def strip_weak(self) -> "ShapedArray":
        return self if not self.weak_type else ShapedArray(self.shape, self.dtype, False)

    def str_short(self) -> str:
        return f"{dtypes.short_name(self.dtype)}[{','.join(map(str, self.shape))}]"

    def __eq__(self, other):
        return (isinstance(other, ShapedArray) and self.shape == other.shape
                and self.dtype == other.dtype and self.weak_type == other.weak_type)

    def __hash__(self):
        return self._hash

    def __repr__(self):
        weak = "{weak}" if self.weak_type else ""
        return f"ShapedArray({self.str_short()}{weak})"


def aval_of_value(x) -> ShapedArray:
    """Abstract value of a concrete Python scalar, NumPy scalar or array."""
    if dtypes.is_python_scalar(x):
        return ShapedArray((), dtypes.python_scalar_dtype(x), weak_type=True)
    if isinstance(x, (np.ndarray, np.generic)):
        return ShapedArray._of_array(x)
    raise TypeError(f"{type(x).__name__} is not a valid array value")
