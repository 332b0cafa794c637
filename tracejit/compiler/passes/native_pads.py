"""Pads with interior padding or negative edges written as concatenations, reshapes and slices.

The CPU backend copies a pad natively when it only adds edges (a fill and one block copy).
Interior padding -- the transpose of a strided slice, so every max-pool's and strided
convolution's gradient -- and negative edges (crops) ran as NumPy steps on the host. Per padded
axis of ``n`` elements with ``k`` interior elements, ``x`` widened to ``(n, 1)`` and joined with
a ``(n, k)`` block of the padding value along the new axis is ``(n, 1 + k)``; merged back it is
the interior-padded axis plus ``k`` trailing values, which a slice drops. Positive edges are the
native pad, negative ones a slice after it. The result is the same array, element for element (only
data moves), so this holds for every dtype.
"""
from __future__ import annotations

from tracejit.ops.binders import broadcast_in_dim, concatenate, pad, reshape, slice
from tracejit.ops.structural import pad_p
from tracejit.compiler.fused_pads import pad_as_load
from tracejit.compiler.passes.retrace import retrace


def _needs_rewrite(eqn) -> bool:
    return eqn.primitive is pad_p and not pad_as_load(eqn) and any(
        lo < 0 or hi < 0 or interior > 0 for lo, hi, interior in eqn.params["padding_config"])


def _as_native_ops(eqn, ins):
    x, value = ins
    config = eqn.params["padding_config"]
    shape = list(eqn.inputs[0].aval.shape)
    for axis, (_, _, interior) in enumerate(config):
        n = shape[axis]
        if interior == 0 or n < 2:
            continue
        widened = reshape(x, tuple(shape[:axis + 1] + [1] + shape[axis + 1:]))
        fill = broadcast_in_dim(value, tuple(shape[:axis + 1] + [interior] + shape[axis + 1:]), ())
        merged = reshape(concatenate([widened, fill], axis + 1),
                         tuple(shape[:axis] + [n * (1 + interior)] + shape[axis + 1:]))
        shape[axis] = (n - 1) * (1 + interior) + 1
        x = slice(merged, [0] * len(shape), list(shape))
    # Positive edges first, then the crops: a negative edge may cut into the other side's padding
    # (size 3 with lo=-5, hi=4 is two padding values).
    edges = [(max(lo, 0), max(hi, 0), 0) for lo, hi, _ in config]
    if any(e != (0, 0, 0) for e in edges):
        x = pad(x, value, edges)
        shape = [s + lo + hi for s, (lo, hi, _) in zip(shape, edges)]
    start = [max(-lo, 0) for lo, _, _ in config]
    limit = [s - max(-hi, 0) for s, (_, hi, _) in zip(shape, config)]
    if any(start) or limit != shape:
        x = slice(x, start, limit)
    return [x]


def pads_as_native_ops(program):
    """Rewrite every ``pad`` with interior padding or a negative edge into native operations."""
    if not any(_needs_rewrite(e) for e in program.eqns):
        return program
    return retrace(program, lambda eqn, ins: _as_native_ops(eqn, ins) if _needs_rewrite(eqn) else None,
                   "native_pads")
