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
    padded = [(ax, lo, hi) for ax, (lo, hi, interior) in enumerate(eqn.params["padding_config"])
              if (lo, hi, interior) != (0, 0, 0)]
    if len(padded) != 1 or padded[0][1] < 0 or padded[0][2] < 0 or \
            eqn.params["padding_config"][padded[0][0]][2] != 0:
        return None
    ax, lo, hi = padded[0]
    return ax, lo, eqn.outputs[0].aval.shape[ax] - hi


def summed_pads_as_concatenations(program):
    """Rewrite each sum (a tree of single-use ``add``s) of non-overlapping zero pads of one axis."""
    uses, producer = uses_and_producers(program)

    def inner_add(v):
        e = producer.get(id(v))
        return e if e is not None and e.primitive is _ADD and uses.get(id(v)) == 1 else None

    def leaves(eqn):
        out = []
        for a in eqn.inputs:
            e = inner_add(a)
            if e is not None:
                out += leaves(e)
            else:
                out.append(a)
        return out

    rewrites: dict[int, list] = {}       # root add -> [(start, pad equation)] sorted by start
    for e in program.eqns:
        if e.primitive is not _ADD:
            continue
        terms = leaves(e)
        pads = [producer.get(id(t)) if uses.get(id(t)) == 1 else None for t in terms]
        places = [_padded_axis(p) if p is not None else None for p in pads]
        if len(terms) < 2 or any(p is None for p in places) or len({p[0] for p in places}) != 1:
            continue
        if any(p.outputs[0].aval != e.outputs[0].aval for p in pads):
            continue
        order = sorted(range(len(pads)), key=lambda i: places[i][1])
        spans = [places[i][1:] for i in order]
        if any(spans[i][1] > spans[i + 1][0] for i in range(len(spans) - 1)):
            continue
        rewrites[id(e)] = [(places[i], pads[i]) for i in order]
    # Only roots: an add whose result feeds another rewritten add is part of that tree.
    inner = {id(inner_add(a)) for e in program.eqns if id(e) in rewrites for a in e.inputs} - {id(None)}
    for k in inner & set(rewrites):
        del rewrites[k]
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
