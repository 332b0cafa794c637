"""NumPy's in-place semantics for traced arrays, functionalized (issue 16; docs/inplace.md).

Two semantics, chosen by where an array comes from. ``np.ndarray`` arguments of a jitted
function and the results of ``np.*`` calls (ufuncs, ``np.zeros_like``, ``np.copy``...) and of
operators and methods on such arrays are *NumPy arrays*: mutable, basic slices / transposes /
reshapes are views that alias their base, ``x += y`` updates in place. ``jnp.*`` results,
``tracejit.Array`` arguments and ``lax`` results are *JAX arrays*: immutable, ``x[i] = v``
raises JAX's TypeError, ``x += y`` rebinds the name.

The program stays pure: a write computes a new value for the array's base (``.at[].set``,
``where``...), and every tracer aliasing that base re-derives its value when next read
(:mod:`tracejit.functionalize.state`). A jitted function's argument that was written is an
extra output of its program, copied back into the caller's array after the call
(:mod:`tracejit.functionalize.args`, used by ``tracejit.api``).

Examples
--------
>>> import numpy as np, tracejit
>>> @tracejit.jit
... def step(u):
...     u[1:-1] += 0.5 * (u[:-2] - 2 * u[1:-1] + u[2:])
...     return u.sum()
>>> u = np.array([0.0, 1.0, 0.0, 0.0])
>>> float(step(u)), u.tolist()
(0.5, [0.0, 0.0, 0.5, 0.0])
"""
from __future__ import annotations

from tracejit.functionalize import attach as _attach
from tracejit.functionalize.args import box_arguments, check_call, is_numpy_leaf, mutated, write_back
from tracejit.functionalize.state import writes

_attach.attach()

__all__ = ["box_arguments", "check_call", "is_numpy_leaf", "mutated", "write_back", "writes"]
