"""Batching and reverse-mode rules of the callback primitives (``tracejit/ops/callback.py``).

They live in ``transforms`` because they are written with the batching machinery (and a ``scan``
for the sequential ``vmap_method``); the primitives' own rules (abstract eval, impl, JVP,
transpose) stay beside their definitions.
"""
from __future__ import annotations

from tracejit.core.primitive import batching_rules
from tracejit.ops.callback import (debug_callback_p, io_callback_jvp, io_callback_p, pure_callback_jvp,
                                   pure_callback_p)
from tracejit.ops.control_flow_functions import scan
from tracejit.transforms import batching
from tracejit.transforms.ad import def_vjp


def _pure_callback_vjp(needed, *args, **params):
    pure_callback_jvp(args, None)


def _pure_callback_batch(args, dims, size, *, callback, result_avals, vmap_method, sharding):
    """JAX's ``ffi_batching_rule``: ``vmap_method`` says how the batch reaches the callback."""
    params = dict(callback=callback, vmap_method=vmap_method, sharding=sharding)
    if vmap_method not in ("sequential", "sequential_unrolled", "expand_dims", "broadcast_all",
                           "legacy_vectorized"):
        raise NotImplementedError(
            "vmap is only supported for the pure_callback primitive when vmap_method is one of "
            "'sequential', 'sequential_unrolled', 'expand_dims', 'broadcast_all', or 'legacy_vectorized'. "
            f"Got vmap_method={vmap_method!r}.")
    front = [batching.to_front(x, d) for x, d in zip(args, dims)]
    batched = tuple(a.update(shape=(size,) + a.shape) for a in result_avals)
    if vmap_method == "legacy_vectorized":       # unbatched operands as they are
        outs = pure_callback_p.bind(*front, result_avals=batched, **params)
    elif vmap_method in ("expand_dims", "broadcast_all"):
        n = size if vmap_method == "broadcast_all" else 1
        ins = [x if d is not None else batching.with_batch(x, None, n) for x, d in zip(front, dims)]
        outs = pure_callback_p.bind(*ins, result_avals=batched, **params)
    elif vmap_method == "sequential_unrolled":   # one call per example, unrolled
        return batching._one_example_at_a_time(pure_callback_p, args, dims, size,
                                               dict(params, result_avals=result_avals))
    else:                                        # one call per example, in a scan
        outs = _in_a_scan(pure_callback_p, front, dims, dict(params, result_avals=result_avals))
    return outs, [0] * len(outs)


def _in_a_scan(prim, front, dims, params):
    """``prim`` bound once per example of the batched operands (at the front), in a ``scan``."""
    at = [i for i, d in enumerate(dims) if d is not None]

    def body(carry, xs):
        ins = list(front)
        for i, x in zip(at, xs):
            ins[i] = x
        return carry, tuple(prim.bind(*ins, **params))
    _, outs = scan(body, (), tuple(front[i] for i in at))
    return list(outs)


def _io_callback_batch(args, dims, size, *, callback, result_avals, ordered, sharding):
    """Once per example, in order, in a scan (JAX's rule for an unordered IO callback)."""
    if ordered:
        raise ValueError("Cannot `vmap` ordered IO callback.")
    params = dict(callback=callback, result_avals=result_avals, ordered=ordered, sharding=sharding)
    front = [batching.to_front(x, d) for x, d in zip(args, dims)]
    return _in_a_scan(io_callback_p, front, dims, params), [0] * len(result_avals)


def _debug_callback_batch(args, dims, size, **params):
    """Once per example, in order (JAX unrolls debug callbacks over the batch the same way)."""
    for i in range(size):
        debug_callback_p.bind(*[x if d is None else batching._example(x, d, i) for x, d in zip(args, dims)], **params)
    return [], []


# Reverse mode of ``pure_callback`` raises at once (JAX raises while linearizing), not only when
# the backward pass runs.
def_vjp(pure_callback_p, _pure_callback_vjp)
def_vjp(io_callback_p, lambda needed, *args, **params: io_callback_jvp(args, None))
batching_rules[io_callback_p] = _io_callback_batch
batching_rules[pure_callback_p] = _pure_callback_batch
batching_rules[debug_callback_p] = _debug_callback_batch
