"""Structural operations as affine index maps, and the dtypes kernels load and store.

Fusion reads a transpose, broadcast, slice, reversal, squeeze or unit reshape of a value as a
change of its load's :class:`~tracejit.compiler.kernel_ir.IndexMap` (no data moves):
:func:`structural_terms` gives that map for one such equation.
"""
from __future__ import annotations

from tracejit.core import dtypes
from tracejit.ops.structural import broadcast_in_dim_p, reshape_p, rev_p, slice_p, squeeze_p, transpose_p


def native_storage(d) -> bool:
    """Whether kernels load and store elements of dtype ``d`` (not float16)."""
    return (d.kind in "biufc" and d != dtypes.float16) or d == dtypes.bfloat16


def structural_terms(eqn) -> tuple | None:
    """For an affine structural eqn: input index as a function of output index."""
    p, prm = eqn.primitive, eqn.params
    in_aval, out_aval = eqn.inputs[0].aval, eqn.outputs[0].aval
    if p is broadcast_in_dim_p:
        return tuple((d, 1, 0) if s != 1 or out_aval.shape[d] == 1 else (-1, 0, 0)
                     for s, d in zip(in_aval.shape, prm["broadcast_dimensions"]))
    if p is transpose_p:
        terms = [None] * in_aval.ndim
        for out_dim, in_dim in enumerate(prm["permutation"]):
            terms[in_dim] = (out_dim, 1, 0)
        return tuple(terms)
    if p is slice_p:
        return tuple((j, st, lo) for j, (lo, st) in enumerate(zip(prm["start_indices"], prm["strides"])))
    if p is rev_p:
        dims = set(prm["dimensions"])
        return tuple((j, -1, n - 1) if j in dims else (j, 1, 0) for j, n in enumerate(in_aval.shape))
    if p is squeeze_p:
        dims = set(prm["dimensions"])
        out_j = 0
        terms = []
        for j in range(in_aval.ndim):
            if j in dims:
                terms.append((-1, 0, 0))
            else:
                terms.append((out_j, 1, 0))
                out_j += 1
        return tuple(terms)
    if p is reshape_p:
        # Affine only when it just inserts/removes size-1 axes.
        src = [i for i, s in enumerate(out_aval.shape) if s != 1]
        if [s for s in in_aval.shape if s != 1] != [out_aval.shape[i] for i in src]:
            return None
        it = iter(src)
        return tuple((-1, 0, 0) if s == 1 else (next(it), 1, 0) for s in in_aval.shape)
    return None


STRUCTURAL = {broadcast_in_dim_p, transpose_p, slice_p, rev_p, squeeze_p, reshape_p}
