"""Primitives and their rule tables (one table per concern, keyed by primitive).

A primitive's file registers its rules right after defining it::

    sin_p = Primitive("sin")
    abstract_eval_rules[sin_p] = unary_float_abstract_eval
    impl_rules[sin_p] = lambda x: [np.sin(x)]

Every rule returns a list, so multi-output primitives need no special case.
"""
from __future__ import annotations

from typing import Callable


class Primitive:
    """A named operation of the IR. Rules for it live in the tables below."""

    __slots__ = ("name", "multiple_results", "pp_params", "__weakref__")

    def __init__(self, name: str, multiple_results: bool = False,
                 pp_params: Callable[[dict], dict] | None = None):
        self.name = name
        self.multiple_results = multiple_results
        # Optional filter that decides which params are shown when printing.
        self.pp_params = pp_params

    def bind(self, *args, **params):
        from tracejit.core.trace import bind
        outs = bind(self, args, params)
        return outs if self.multiple_results else outs[0]

    def __repr__(self):
        return self.name


# abstract_eval_rules[p](*in_avals, **params) -> list[ShapedArray]
abstract_eval_rules: dict[Primitive, Callable] = {}
# impl_rules[p](*numpy_arrays, **params) -> list[np.ndarray]   (the reference semantics)
impl_rules: dict[Primitive, Callable] = {}
# jvp_rules[p](primals, tangents, **params) -> (primals_out, tangents_out)
jvp_rules: dict[Primitive, Callable] = {}
# transpose_rules[p](cotangents_out, *inputs, **params) -> list of input cotangents
transpose_rules: dict[Primitive, Callable] = {}
# batching_rules[p](args, batch_dims, batch_size, **params) -> (outs, out_dims): a batch dim is an
# axis of the value, or None when it is the same for every example (transforms/batching.py)
batching_rules: dict[Primitive, Callable] = {}
# decomposition_rules[p](*args, **params) -> list: the same computation written with
# simpler primitives (binds them on the current trace). The compiler expands a
# primitive this way when its backend has no direct lowering for it.
decomposition_rules: dict[Primitive, Callable] = {}
# cost_rules[p](in_avals, out_avals, **params) -> dict(flops=, transcendentals=)
cost_rules: dict[Primitive, Callable] = {}

# Primitives whose output elements depend only on the same-index input elements
# (scalars broadcast); the fusion pass groups these into one loop.
ELEMENTWISE: set[Primitive] = set()
# Primitives with side effects (debug callbacks): never removed when unused, merged or reordered
# (dce, cse); an equation whose sub-programs hold one counts too (core.ir.has_effects).
EFFECTFUL: set[Primitive] = set()
# Collectives over named axes (ops/collectives.py): their value depends on the vmap that binds the
# name, so they are never computed early on concrete operands (eager autodiff's shortcut).
NAMED_AXIS: set[Primitive] = set()
# Primitives a backend may run as one call into a C library (MPI's collectives, ops/mpi_collectives.py),
# each with a predicate on the equation: whether this one can (the library's ABI, its dtype, its size).
# The compiler gives such an equation its own step with arena buffers instead of a NumPy step.
NATIVE_CALL: dict = {}


def def_rules(prim: Primitive, *, abstract_eval=None, impl=None, cost=None) -> Primitive:
    """Register the core rules of ``prim`` in one call; returns ``prim``."""
    if abstract_eval is not None:
        abstract_eval_rules[prim] = abstract_eval
    if impl is not None:
        impl_rules[prim] = impl
    if cost is not None:
        cost_rules[prim] = cost
    return prim
