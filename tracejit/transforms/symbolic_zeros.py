"""Symbolic zeros for custom-derivative rules (``defjvp(symbolic_zeros=True)``,
``defvjp(symbolic_zeros=True)``), as ``jax.custom_derivatives`` defines them.

Inside autodiff a zero (co)tangent is ``None`` (``tracejit/transforms/ad.py``). A rule registered
with ``symbolic_zeros=True`` sees a :class:`SymbolicZero` there instead of an array of zeros, so it
can skip the work for inputs nobody differentiates; it may return one for an output whose
(co)tangent is zero. A ``custom_vjp`` forward rule registered that way receives each argument
leaf as a :class:`CustomVJPPrimal` saying whether that input is differentiated.
"""
from __future__ import annotations

import numpy as np

from tracejit.core import dtypes
from tracejit.core.avals import ShapedArray
from tracejit.core.pytree import tree_map
from tracejit.core.values import get_aval
from tracejit.transforms.ad import float0


def tangent_aval(aval) -> ShapedArray:
    """The tangent space of ``aval``: itself for floats and complex, float0 for the rest."""
    if dtypes.is_inexact(np.dtype(aval.dtype)):
        return ShapedArray(aval.shape, aval.dtype)
    return _Float0Aval(aval.shape)


class _Float0Aval:
    """The abstract value of an integer input's tangent (float0 is not a tracejit array dtype)."""

    def __init__(self, shape):
        self.shape, self.dtype, self.weak_type = tuple(shape), float0, False

    @property
    def ndim(self):
        return len(self.shape)

    def __repr__(self):
        return f"ShapedArray(float0{list(self.shape)})"


class SymbolicZero:
    """A (co)tangent known to be zero, with the abstract value a zero array would have.

    Passed to custom rules registered with ``symbolic_zeros=True`` for inputs that are not
    differentiated (``custom_jvp``) or outputs without cotangent (``custom_vjp``). It is not an
    array: NumPy functions do not accept it; ask ``isinstance(t, SymbolicZero)``, or
    :meth:`instantiate` it.

    Examples
    --------
    >>> import numpy as np
    >>> z = SymbolicZero(ShapedArray((2,), np.float32))
    >>> z.shape, z.dtype, z.instantiate()
    ((2,), dtype('float32'), array([0., 0.], dtype=float32))
    """

    def __init__(self, aval):
        self.aval = aval

    shape = property(lambda self: self.aval.shape)
    dtype = property(lambda self: self.aval.dtype)
    ndim = property(lambda self: len(self.aval.shape))
    size = property(lambda self: int(np.prod(self.aval.shape, dtype=np.int64)))

    def __bool__(self):
        return False

    def __repr__(self):
        return f"SymbolicZero({self.aval})"

    def instantiate(self):
        """An array of zeros of this shape and dtype."""
        return np.zeros(self.shape, self.dtype)

    @staticmethod
    def from_primal_value(value):
        """The symbolic zero tangent of ``value`` (float0 for integers and booleans)."""
        return SymbolicZero(tangent_aval(get_aval(value)))


def zero_from_primal(value, symbolic_zeros: bool = False):
    """Zero tangents for a pytree of primal values (``jax.custom_derivatives.zero_from_primal``).

    Each leaf becomes a :class:`SymbolicZero` of its tangent type when ``symbolic_zeros`` is true,
    else an array of zeros (float0 for integer leaves).

    Examples
    --------
    >>> import numpy as np
    >>> zero_from_primal({"w": np.ones(2)})
    {'w': array([0., 0.])}
    >>> zero_from_primal(np.ones(2), symbolic_zeros=True)
    SymbolicZero(ShapedArray(f64[2]))
    """
    def zero(x):
        z = SymbolicZero.from_primal_value(x)
        return z if symbolic_zeros else z.instantiate()
    return tree_map(zero, value)


class CustomVJPPrimal:
    """An argument leaf of a ``custom_vjp`` forward rule registered with ``symbolic_zeros=True``:
    its ``value`` and whether it is ``perturbed`` (differentiated in this reverse pass). A pytree
    leaf (not a dataclass node, which tracejit's pytrees would flatten).

    Examples
    --------
    >>> CustomVJPPrimal(1.0, perturbed=False)
    CustomVJPPrimal(value=1.0, perturbed=False)
    """
    __slots__ = ("value", "perturbed")

    def __init__(self, value, perturbed: bool):
        self.value, self.perturbed = value, perturbed

    def __repr__(self):
        return f"CustomVJPPrimal(value={self.value!r}, perturbed={self.perturbed!r})"

    def __eq__(self, other):
        return type(other) is CustomVJPPrimal and (self.value, self.perturbed) == (other.value, other.perturbed)

    __hash__ = None


def custom_vjp_primal_tree_values(tree):
    """The values of a pytree of :class:`CustomVJPPrimal` leaves (what a ``symbolic_zeros``
    forward rule receives), as the plain arguments (``jax.custom_derivatives`` of that name).

    Examples
    --------
    >>> custom_vjp_primal_tree_values((CustomVJPPrimal(2.0, True), [CustomVJPPrimal(3, False)]))
    (2.0, [3])
    """
    def value(leaf):
        if type(leaf) is not CustomVJPPrimal:
            raise TypeError(f"custom_vjp_primal_tree_values: expected CustomVJPPrimal leaves, got {type(leaf).__name__}")
        return leaf.value
    return tree_map(value, tree)


def to_none(t):
    """A rule's (co)tangent with a :class:`SymbolicZero` read as autodiff's zero, ``None``."""
    return None if isinstance(t, SymbolicZero) else t


__all__ = ["CustomVJPPrimal", "SymbolicZero", "custom_vjp_primal_tree_values", "tangent_aval", "to_none",
           "zero_from_primal"]
