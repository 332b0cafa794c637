"""Sums over one short axis written as additions of its slices, so fusion makes them map kernels.

A row kernel vectorizes along its rows; rows of 2 to 4 elements (the coordinates of points:
``sum(d * d, axis=-1)`` for pairwise distances in 3-D) fill a fraction of a vector and leave
everything that uses the sum, often a transcendental, to scalar per-row code. As
``((0 + x[..., 0]) + x[..., 1]) + x[..., 2]`` the sum is elementwise over the other axes: it
fuses into its users and vectorizes across them. The additions run in NumPy's order (it adds
along the axis from an identity of +0.0, so a sum of negative zeros is +0.0), so results are
bit-identical to the reduction's.
"""
from __future__ import annotations

from tracejit.ops.elementwise import binary_prims
from tracejit.ops.reductions import reduce_sum_p
from tracejit.ops.structural import slice_p, squeeze_p
from tracejit.compiler.passes.retrace import retrace

# Axes of at most this many elements are unrolled; the other axes must hold at least
# MIN_OTHER_ELEMENTS elements (a tiny output is one short row kernel anyway).
SHORT_AXIS = 4
MIN_OTHER_ELEMENTS = 16


def _is_short_sum(eqn) -> bool:
    if eqn.primitive is not reduce_sum_p or len(eqn.params["axes"]) != 1:
        return False
    x = eqn.inputs[0].aval
    n = x.shape[eqn.params["axes"][0]]
    return x.dtype.kind in "iufc" and 1 < n <= SHORT_AXIS and x.size >= n * MIN_OTHER_ELEMENTS


def _unrolled(eqn, ins):
    (x,), (axis,) = ins, eqn.params["axes"]
    aval = eqn.inputs[0].aval
    total = None
    for k in range(aval.shape[axis]):
        start = [0] * aval.ndim
        limit = list(aval.shape)
        start[axis], limit[axis] = k, k + 1
        part = squeeze_p.bind(slice_p.bind(x, start_indices=tuple(start), limit_indices=tuple(limit),
                                           strides=(1,) * aval.ndim), dimensions=(axis,))
        total = part if total is None else binary_prims["add"].bind(total, part)
    if aval.dtype.kind in "fc":
        total = binary_prims["add"].bind(total, aval.dtype.type(0))   # -0.0 + ... + -0.0 is +0.0
    return [total]


def short_sums_as_additions(program):
    """Rewrite every ``reduce_sum`` over one axis of 2 to 4 elements as additions of its slices."""
    if not any(_is_short_sum(e) for e in program.eqns):
        return program
    return retrace(program, lambda eqn, ins: _unrolled(eqn, ins) if _is_short_sum(eqn) else None, "short_sums")
