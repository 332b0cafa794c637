"""Autograph: Python loops and ``if`` statements over traced values become compiled control flow.

``jit`` (and ``make_jaxpr``) run the function's source through :func:`convert` when
``config.autograph`` is on (default; ``TRACEJIT_AUTOGRAPH=0`` turns it off) or
``jit(f, autograph=True)``. ``for i in range(...)``, ``for x in traced_array`` and ``while``
loops become ``lax.fori_loop`` / ``lax.scan`` / ``lax.while_loop`` when their state or bounds
are traced; ``if`` on a traced predicate becomes ``lax.cond``. Python values keep Python
semantics. See ``docs/autograph.md`` for the rules and limits.

Examples
--------
>>> import numpy as np, tracejit
>>> from tracejit import autograph
>>> autograph.STATIC_TRIP_MAX, autograph.UNROLL_CAP
(16, 1000)
"""
from tracejit.autograph.convert import convert, converted_call, is_user_code
from tracejit.autograph.runtime import STATIC_TRIP_MAX, UNROLL_CAP, AutographError, Undefined, is_traced

__all__ = ["convert", "converted_call", "is_user_code", "AutographError", "Undefined", "is_traced",
           "STATIC_TRIP_MAX", "UNROLL_CAP"]
