"""Sums of zero-padded pieces that do not overlap, written as one concatenation.

Reverse-mode autodiff of slicing pads each piece's cotangent back to the sliced array's shape and
adds the pads: the gradient of ``q, k, v = qkv[..., :d], qkv[..., d:2 * d], qkv[..., 2 * d:]`` is
``pad(gq) + pad(gk) + pad(gv)``. Each pad writes the whole array, mostly zeros, and the additions
read them all back (in a GPT-2 layer's backward, three 4.7 MB pads and a 14 MB read). When every
term of such a sum is a zero pad of one axis, and the pieces' places along that axis do not
overlap, the sum is the pieces side by side, with zero blocks in the gaps: a concatenation, which
the fusion pass builds in place (each piece written once, into its slab).

The rewritten sum is the same array element for element: each element is its piece's value plus
zero, and a piece's ``-0.0`` becomes ``+0.0`` as the addition made it, because floating pieces are
added to ``0.0`` (a fused map, free).
"""
from __future__ import annotations

import numpy as np

from tracejit.core import dtypes
from tracejit.core.ir import Literal
from tracejit.compiler.passes.retrace import retrace, uses_and_producers
from tracejit.ops.binders import add, broadcast_in_dim, concatenate
from tracejit.ops.elementwise import binary_prims
from tracejit.ops.structural import pad_p

_ADD = binary_prims["add"]


def _zero_literal(v) -> bool:
    return type(v) is Literal and np.ndim(v.val) == 0 and v.val == 0


def _padded_axis(eqn):
    """``(axis, start, stop)`` of a pad's input along the one axis it pads with zeros; else None."""
    if eqn.primitive is not pad_p or not _zero_literal(eqn.inputs[1]):
        return None
    padded = [(ax, lo, hi, interior) for ax, (lo, hi, interior) in enumerate(eqn.params["padding_config"])
              if (lo, hi, interior) != (0, 0, 0)]
    if len(padded) != 1:
        return None
    ax, lo, hi, interior = padded[0]
    if lo < 0 or hi < 0 or interior:
        return None
    return ax, lo, eqn.outputs[0].aval.shape[ax] - hi


def summed_pads_as_concatenations(program):
    """Rewrite each sum (a tree of single-use ``add``s) of non-overlapping zero pads of one axis."""
    uses, producer = uses_and_producers(program)

    def inner_add(v):
        e = producer.get(id(v))
        return e if e is not None and e.primitive is _ADD and uses.get(id(v)) == 1 else None

    # The zero pads each add sums, through the single-use adds below it, or None when a term is
    # something else: built in program order from the operands' entries, so a chain of thousands
    # of additions costs one step each (no recursion).
    pad_terms: dict[int, list | None] = {}
    for e in program.eqns:
        if e.primitive is not _ADD:
            continue
        found: list | None = []
        for a in e.inputs:
            inner = inner_add(a)
            if inner is not None:
                sub = pad_terms[id(inner)]
            else:
                p = producer.get(id(a))
                sub = [p] if p is not None and uses.get(id(a)) == 1 and _padded_axis(p) is not None else None
            if sub is None:
                found = None
                break
            found = found + sub
        pad_terms[id(e)] = found

    rewrites: dict[int, list] = {}       # add -> [((axis, start, stop), pad equation)] sorted by start
    for e in program.eqns:
        pads = pad_terms.get(id(e))
        if not pads:
            continue
        places = [_padded_axis(p) for p in pads]
        if len({p[0] for p in places}) != 1 or any(p.outputs[0].aval != e.outputs[0].aval for p in pads):
            continue
        order = sorted(range(len(pads)), key=lambda i: places[i][1])
        spans = [places[i][1:] for i in order]
        if any(spans[i][1] > spans[i + 1][0] for i in range(len(spans) - 1)):
            continue
        rewrites[id(e)] = [(places[i], pads[i]) for i in order]
    # Only roots: an add whose result feeds another rewritten add is part of that tree.
    for e in program.eqns:
        if id(e) in rewrites:
            for a in e.inputs:
                inner = inner_add(a)
                if inner is not None:
                    rewrites.pop(id(inner), None)
    if not rewrites:
        return program

    values: dict[int, object] = {}

    def replace(eqn, ins):
        for v, x in zip(eqn.inputs, ins):
            values[id(v)] = x
        pieces = rewrites.get(id(eqn))
        if pieces is None:
            return None
        aval = eqn.outputs[0].aval
        axis = pieces[0][0][0]
        floating = dtypes.is_inexact(aval.dtype)
        parts, at = [], 0
        for (_, start, stop), pad_eqn in pieces:
            if start > at:
                parts.append(_zeros(aval, axis, start - at))
            piece = values[id(pad_eqn.inputs[0])]
            parts.append(add(piece, _zeros(aval, axis, stop - start)) if floating else piece)
            at = stop
        if aval.shape[axis] > at:
            parts.append(_zeros(aval, axis, aval.shape[axis] - at))
        return [parts[0] if len(parts) == 1 else concatenate(parts, axis)]
    return retrace(program, replace, "summed_pads")


def _zeros(aval, axis, width):
    shape = tuple(width if d == axis else s for d, s in enumerate(aval.shape))
    return broadcast_in_dim(np.zeros((), aval.dtype), shape, ())
