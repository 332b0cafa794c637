"""Host callbacks: the ``pure_callback`` and ``debug_callback`` primitives.

Both call a Python function on the host with NumPy arrays (copies: a callback may keep
them). Compiled, each is a NumPy step of the plan (``fusion.Planner.kind`` gives "numpy"),
run at its place in program order; a loop whose body holds one runs as a host loop.

* ``pure_callback[callback, result_avals, vmap_method, sharding]`` returns arrays of
  ``result_avals`` (checked at run time). It is pure: ``dce`` may drop it when its results
  are unused and ``cse`` may merge two equal ones.
* ``io_callback[callback, result_avals, ordered, sharding]`` returns arrays like a pure callback
  but is in ``EFFECTFUL`` (below): it runs exactly as often as the program says, in order. It
  has no derivative (JVP and transpose raise, as in JAX); ``vmap`` calls it once per example,
  and refuses an ordered one.
* ``debug_callback[callback, ordered, partitioned]`` returns nothing. It is in
  ``EFFECTFUL``: never dropped, merged or moved, and a loop or ``cond`` holding one is kept
  (``core.ir.has_effects``). Its JVP applies it to the primals only and its transpose does
  nothing, so a derivative never runs it again; under ``vmap`` it is called once per example.

The user-facing functions are ``tracejit.pure_callback`` (``api_callback.py``) and
``tracejit.debug`` (``debug.py``).
"""
from __future__ import annotations

import numpy as np

from tracejit.core import dtypes
from tracejit.core.errors import JaxRuntimeError
from tracejit.core.ir import Program, subprograms
from tracejit.core.primitive import (EFFECTFUL, Primitive, def_rules, jvp_rules,
                                     transpose_rules)
from tracejit.core.pytree import tree_leaves, tree_unflatten
from tracejit.core.trace import EVAL_TRACE, set_current_trace
from tracejit.core.tracer import Tracer

VMAP_METHODS = ["sequential", "sequential_unrolled", "expand_dims", "broadcast_all", "legacy_vectorized", None]


def is_array_leaf(x) -> bool:
    """A leaf passed to a callback as an array (traced under ``jit``); other leaves are static."""
    return isinstance(x, (Tracer, np.ndarray, np.generic)) or dtypes.is_python_scalar(x)


class FlatCallback:
    """A Python function called with flat array arguments (JAX's ``_FlatCallback``).

    ``in_tree`` is the structure of ``(args, kwargs)``; ``static`` holds ``(position, value)`` of
    the leaves that are not arrays (strings, ``None`` ...), passed as they are. Two are equal when
    they call the same function with the same structure and static leaves, so equal pure
    callbacks may be merged and different functions are never confused (a cache key holding one
    compares the function itself, by identity).

    Examples
    --------
    >>> import numpy as np
    >>> from tracejit.core.pytree import tree_flatten
    >>> leaves, tree = tree_flatten(((np.ones(2), "a"), {}))
    >>> f = FlatCallback(lambda x, s: f"{s}{x.sum()}", tree, ((1, "a"),))
    >>> f(np.ones(2))
    'a2.0'
    """

    __slots__ = ("fun", "in_tree", "static", "label", "__weakref__")

    def __init__(self, fun, in_tree, static=(), label=None):
        self.fun = fun
        self.in_tree = in_tree
        self.static = tuple(static)
        self.label = label          # how programs print it (not part of equality)

    def __call__(self, *dynamic):
        leaves, it, static = [], iter(dynamic), dict(self.static)
        for i in range(len(dynamic) + len(static)):
            leaves.append(static[i] if i in static else next(it))
        args, kwargs = tree_unflatten(self.in_tree, leaves)
        return self.fun(*args, **kwargs)

    def _key(self):
        return (self.fun, self.in_tree, self.static)

    def __eq__(self, other):
        return type(other) is FlatCallback and self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    @property
    def name(self) -> str:
        return self.label or getattr(self.fun, "__qualname__", None) or type(self.fun).__name__

    def __repr__(self):
        return self.name


def split_callback_args(args, kwargs):
    """``(in_tree, array leaves, static (position, value) pairs)`` of a callback's arguments."""
    from tracejit.core.pytree import tree_flatten
    flat, in_tree = tree_flatten((tuple(args), dict(kwargs)))
    dynamic = [x for x in flat if is_array_leaf(x)]
    static = tuple((i, x) for i, x in enumerate(flat) if not is_array_leaf(x))
    return in_tree, dynamic, static


def _host_value(x) -> np.ndarray:
    """What a callback receives: a plain NumPy array of its own (plan buffers are reused later)."""
    return np.array(x, copy=True)


def _cost(in_avals, out_avals, **_):
    return {"flops": 0, "transcendentals": 0}


# --------------------------------------------------------------------------- pure_callback

def _pure_callback_abstract_eval(*in_avals, callback, result_avals, vmap_method, sharding):
    return list(result_avals)


def _pure_callback_impl(*args, callback, result_avals, vmap_method, sharding):
    return _call_checked("pure_callback", args, callback, result_avals)


def _call_checked(kind, args, callback, result_avals):
    """Call ``callback`` on copies of ``args``; its result leaves, checked against ``result_avals``."""
    with set_current_trace(EVAL_TRACE):     # the callback may use tracejit eagerly
        out = callback(*[_host_value(a) for a in args])
    leaves = tree_leaves(out)
    where = f"{kind} of {callback.name!r}"
    if len(leaves) != len(result_avals):
        raise JaxRuntimeError(f"Mismatched number of outputs from callback. Expected: {len(result_avals)}, "
                              f"Actual: {len(leaves)} ({where})")
    results = []
    for i, (r, a) in enumerate(zip(leaves, result_avals)):
        r = np.asarray(r)
        if r.shape != a.shape:
            raise JaxRuntimeError(f"Incorrect output shape for return value #{i}: Expected: {a.shape}, "
                                  f"Actual: {r.shape} ({where})")
        if r.dtype != a.dtype:
            raise JaxRuntimeError(f"Incorrect output dtype for return value #{i}: Expected: {a.dtype.name}, "
                                  f"Actual: {r.dtype.name} ({where})")
        results.append(r)
    return results


pure_callback_p = def_rules(Primitive("pure_callback", multiple_results=True),
                            abstract_eval=_pure_callback_abstract_eval, impl=_pure_callback_impl, cost=_cost)


def pure_callback_jvp(primals, tangents, **params):
    raise ValueError("Pure callbacks do not support JVP. "
                     "Please use `jax.custom_jvp` to use callbacks while taking gradients.")


def _pure_callback_transpose(cts, *args, **params):
    raise ValueError("Pure callbacks do not support transpose. "
                     "Please use `jax.custom_vjp` to use callbacks while taking gradients.")


jvp_rules[pure_callback_p] = pure_callback_jvp
transpose_rules[pure_callback_p] = _pure_callback_transpose


# --------------------------------------------------------------------------- io_callback

def _io_callback_abstract_eval(*in_avals, callback, result_avals, ordered, sharding):
    return list(result_avals)


def _io_callback_impl(*args, callback, result_avals, ordered, sharding):
    return _call_checked("io_callback", args, callback, result_avals)


io_callback_p = def_rules(Primitive("io_callback", multiple_results=True),
                          abstract_eval=_io_callback_abstract_eval, impl=_io_callback_impl, cost=_cost)
EFFECTFUL.add(io_callback_p)


def io_callback_jvp(primals, tangents, **params):
    raise ValueError("IO callbacks do not support JVP.")


def _io_callback_transpose(cts, *args, **params):
    raise ValueError("IO callbacks do not support transpose.")


jvp_rules[io_callback_p] = io_callback_jvp
transpose_rules[io_callback_p] = _io_callback_transpose


# --------------------------------------------------------------------------- debug_callback

def _debug_callback_abstract_eval(*in_avals, callback, ordered, partitioned):
    return []


def _debug_callback_impl(*args, callback, ordered, partitioned):
    with set_current_trace(EVAL_TRACE):
        callback(*[_host_value(a) for a in args])
    return []


debug_callback_p = def_rules(Primitive("debug_callback", multiple_results=True),
                             abstract_eval=_debug_callback_abstract_eval, impl=_debug_callback_impl, cost=_cost)
EFFECTFUL.add(debug_callback_p)


def _debug_callback_jvp(primals, tangents, **params):
    # The callback sees the primal values; tangents carry nothing to it (JAX's rule).
    return debug_callback_p.bind(*primals, **params), []


def _debug_callback_transpose(cts, *args, **params):
    return [None] * len(args)


jvp_rules[debug_callback_p] = _debug_callback_jvp
transpose_rules[debug_callback_p] = _debug_callback_transpose

CALLBACK_PRIMITIVES = frozenset({pure_callback_p, io_callback_p, debug_callback_p})


def holds_callbacks(program: Program) -> bool:
    """True when ``program`` or one of its sub-programs calls back into Python.

    Examples
    --------
    >>> import numpy as np, tracejit
    >>> p = tracejit.make_jaxpr(lambda x: tracejit.debug.print("{}", x))(np.ones(2))
    >>> holds_callbacks(p), holds_callbacks(tracejit.make_jaxpr(np.sin)(np.ones(2)))
    (True, False)
    """
    return any(e.primitive in CALLBACK_PRIMITIVES or any(holds_callbacks(s) for s in subprograms(e))
               for e in program.eqns)
