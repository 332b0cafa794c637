"""Storage-only dtypes: bfloat16 values are stored as bfloat16 and computed on in float32.

No primitive has a bfloat16 rule of its own. When a primitive is applied to a bfloat16
operand, :func:`bind_in_float32` widens each bfloat16 operand to float32 (exact), applies
the primitive, and rounds each float32 result back to bfloat16 (round to nearest even).
Every operation thus rounds once, as XLA's CPU backend and ml_dtypes' NumPy loops do, and
the programs tracejit records hold bfloat16 only in conversions and in the primitives of
:data:`STORAGE_TRANSPARENT`, which move or select elements without computing on them.
Reductions accumulate in float32 (JAX's ``jnp.sum`` of bfloat16 does too).

Primitives that hold sub-programs or Python functions (loops, ``cond``, custom derivatives,
callbacks) are applied as they are: their bodies see bfloat16 values and are traced with
this same rule.

Examples
--------
>>> import numpy as np, tracejit.numpy as jnp
>>> x = jnp.asarray(np.array([1.0, 2.0], dtype=jnp.bfloat16))
>>> (x / 3).dtype
dtype(bfloat16)
"""
from __future__ import annotations

from typing import Callable

from tracejit.core import dtypes
from tracejit.core.ir import Program
from tracejit.core.primitive import Primitive

# Primitives that only move, select or re-type elements: applied to bfloat16 as they are.
# Each registers itself next to its definition (ops/*.py), as ELEMENTWISE members do.
STORAGE_TRANSPARENT: set[Primitive] = set()
_convert: list[Primitive] = []   # convert_element_type, registered by ops/elementwise.py


def register_convert(prim: Primitive) -> None:
    """Name the conversion primitive (``convert_element_type``) that widens and rounds."""
    _convert[:] = [prim]
    STORAGE_TRANSPARENT.add(prim)


def has_storage_operand(args) -> bool:
    """Whether an operand of a primitive application is bfloat16."""
    bf16 = dtypes.bfloat16
    for a in args:
        d = getattr(a, "dtype", None)
        if d is not None and d.kind == "V" and d == bf16:
            return True
    return False


def _holds_code(value) -> bool:
    if isinstance(value, Program) or callable(value):
        return True
    return isinstance(value, (tuple, list)) and any(_holds_code(v) for v in value)


def bind_in_float32(prim: Primitive, args, params: dict, apply: Callable) -> list:
    """Apply ``prim`` (through ``apply(prim, args, params)``) to operands some of which are
    bfloat16: widened to float32, results rounded back to bfloat16."""
    if any(_holds_code(v) for v in params.values()):
        return apply(prim, args, params)
    convert = _convert[0]
    bf16, f32 = dtypes.bfloat16, dtypes.float32
    in_dtypes = [getattr(a, "dtype", None) for a in args]
    wide = [convert.bind(a, new_dtype=f32, weak_type=False) if d == bf16 else a
            for a, d in zip(args, in_dtypes)]
    outs = apply(prim, wide, params)
    if any(d == f32 for d in in_dtypes):
        # A float32 operand beside bfloat16 ones: which result is which is known only when
        # results match operands one to one (sort's keys and payloads).
        if not (prim.multiple_results and len(outs) == len(args)):
            raise NotImplementedError(
                f"primitive {prim.name!r} applied to both bfloat16 and float32 operands: convert "
                f"them to one dtype first")
        round_back = [d == bf16 for d in in_dtypes]
    else:
        round_back = [True] * len(outs)
    return [convert.bind(o, new_dtype=bf16, weak_type=False) if r and getattr(o, "dtype", None) == f32 else o
            for o, r in zip(outs, round_back)]
