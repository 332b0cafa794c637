"""``dot_general``: batched tensor contraction (lax semantics).

``dimension_numbers = ((lhs_contract, rhs_contract), (lhs_batch, rhs_batch))``.
The output axes are: batch dims, then lhs free dims, then rhs free dims.
"""
from __future__ import annotations

import math

import numpy as np

from tracejit.core.avals import ShapedArray
from tracejit.core.primitive import Primitive, def_rules


def _free_dims(ndim, contract, batch):
    return [d for d in range(ndim) if d not in contract and d not in batch]


def _dot_general_abstract_eval(lhs, rhs, *, dimension_numbers):
    (lc, rc), (lb, rb) = dimension_numbers
    if lhs.dtype != rhs.dtype:
        raise TypeError(f"dot_general requires operands of one dtype, got {lhs.dtype.name} and {rhs.dtype.name}")
    if len(lc) != len(rc) or len(lb) != len(rb):
        raise TypeError(f"dot_general dimension_numbers {dimension_numbers} pair unequal numbers of axes")
    for a, b in list(zip(lc, rc)) + list(zip(lb, rb)):
        if not (0 <= a < lhs.ndim and 0 <= b < rhs.ndim) or lhs.shape[a] != rhs.shape[b]:
            raise TypeError(f"dot_general: incompatible shapes {lhs.shape} and {rhs.shape} for "
                            f"dimension_numbers {dimension_numbers}")
    shape = ([lhs.shape[d] for d in lb] + [lhs.shape[d] for d in _free_dims(lhs.ndim, lc, lb)]
             + [rhs.shape[d] for d in _free_dims(rhs.ndim, rc, rb)])
    return [ShapedArray(shape, lhs.dtype, lhs.weak_type and rhs.weak_type)]


def _dot_general_impl(lhs, rhs, *, dimension_numbers):
    (lc, rc), (lb, rb) = dimension_numbers
    lf, rf = _free_dims(lhs.ndim, lc, lb), _free_dims(rhs.ndim, rc, rb)
    batch = [lhs.shape[d] for d in lb]
    m = math.prod(lhs.shape[d] for d in lf)
    n = math.prod(rhs.shape[d] for d in rf)
    k = math.prod(lhs.shape[d] for d in lc)
    b = math.prod(batch)
    a3 = np.transpose(lhs, list(lb) + lf + list(lc)).reshape(b, m, k)
    b3 = np.transpose(rhs, list(rb) + list(rc) + rf).reshape(b, k, n)
    # Booleans multiply with NumPy's own bool loop (any of the ands): a count in a narrow integer
    # type would wrap (k = 256 ones summed in int8 is 0).
    out = np.matmul(a3, b3)
    shape = batch + [lhs.shape[d] for d in lf] + [rhs.shape[d] for d in rf]
    return [np.asarray(out.reshape(shape), dtype=lhs.dtype)]


def _dot_cost(in_avals, out_avals, *, dimension_numbers):
    (lc, _), _ = dimension_numbers
    k = math.prod(in_avals[0].shape[d] for d in lc)
    return {"flops": 2 * out_avals[0].size * k, "transcendentals": 0}


dot_general_p = def_rules(Primitive("dot_general"), abstract_eval=_dot_general_abstract_eval,
                          impl=_dot_general_impl, cost=_dot_cost)
