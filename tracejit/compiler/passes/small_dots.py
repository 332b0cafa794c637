"""Small contractions written as a broadcast product and a sum, so fusion compiles them.

A matrix-vector, vector-matrix or inner product, an outer product, or any contraction
with few multiply-adds, costs more to hand to BLAS (a call from Python, operands
materialized) than to compute. As ``reduce_sum(mul(broadcast(a), broadcast(b)))`` it
becomes one native row kernel that also fuses whatever produced its operands (a masked
row, ``L[i] * mask``), and a loop body made only of such kernels runs as a native loop.
Products with two large free dimensions keep ``dot_general`` (BLAS: blocked for cache
and registers). Booleans (NumPy's bool product is an "any") and float16 keep it too.
"""
from __future__ import annotations

import math

from tracejit.core import dtypes
from tracejit.ops.dot import dot_general_p
from tracejit.ops.elementwise import binary_prims
from tracejit.ops.reductions import reduce_prims
from tracejit.ops.structural import broadcast_in_dim_p, transpose_p
from tracejit.compiler.passes.retrace import retrace

# A contraction with at most this many multiply-adds is always a kernel.
SMALL_DOT_MACS = 1 << 12
# Matrix-vector shapes (at most this many rows or columns on one side) are kernels at any size:
# they are memory-bound, where a vectorized row kernel reads as fast as BLAS's gemv.
VECTOR_SIDE = 1


def _as_kernel(eqn) -> bool:
    lhs, rhs = (a.aval for a in eqn.inputs)
    d = lhs.dtype
    if d == dtypes.bool_ or d == dtypes.float16 or d.kind not in "iufc":
        return False
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    free_l = math.prod(s for i, s in enumerate(lhs.shape) if i not in lc and i not in lb)
    free_r = math.prod(s for i, s in enumerate(rhs.shape) if i not in rc and i not in rb)
    contracted = math.prod(lhs.shape[i] for i in lc)
    batch = math.prod(lhs.shape[i] for i in lb)
    macs = batch * free_l * free_r * contracted
    return macs <= SMALL_DOT_MACS or min(free_l, free_r) <= VECTOR_SIDE


def _transposed(x, permutation):
    # No identity transposes: fusion looks through the broadcast to the value itself.
    return x if permutation == tuple(range(len(permutation))) else transpose_p.bind(x, permutation=permutation)


def _rewrite(eqn, ins):
    lhs, rhs = ins
    la, ra = (a.aval for a in eqn.inputs)
    (lc, rc), (lb, rb) = eqn.params["dimension_numbers"]
    lf = [i for i in range(la.ndim) if i not in lc and i not in lb]
    rf = [i for i in range(ra.ndim) if i not in rc and i not in rb]
    nb, nl, nr, nc = len(lb), len(lf), len(rf), len(lc)
    # Iteration space: batch, lhs free, rhs free, contracted (summed away last).
    shape = ([la.shape[i] for i in lb] + [la.shape[i] for i in lf] + [ra.shape[i] for i in rf]
             + [la.shape[i] for i in lc])
    l_t = _transposed(lhs, tuple(list(lb) + lf + list(lc)))
    r_t = _transposed(rhs, tuple(list(rb) + rf + list(rc)))
    batch_dims = list(range(nb))
    contract_dims = list(range(nb + nl + nr, nb + nl + nr + nc))
    l_b = broadcast_in_dim_p.bind(l_t, shape=tuple(shape),
                                  broadcast_dimensions=tuple(batch_dims + list(range(nb, nb + nl)) + contract_dims))
    r_b = broadcast_in_dim_p.bind(r_t, shape=tuple(shape),
                                  broadcast_dimensions=tuple(batch_dims + list(range(nb + nl, nb + nl + nr))
                                                             + contract_dims))
    product = binary_prims["mul"].bind(l_b, r_b)
    if not contract_dims:
        return [product]
    return [reduce_prims["reduce_sum"].bind(product, axes=tuple(contract_dims))]


def small_dots_as_kernels(program):
    """Rewrite every small or matrix-vector ``dot_general`` as a broadcast product and a sum."""
    if not any(e.primitive is dot_general_p and _as_kernel(e) for e in program.eqns):
        return program
    return retrace(program, lambda eqn, ins: _rewrite(eqn, ins)
                   if eqn.primitive is dot_general_p and _as_kernel(eqn) else None, "small_dots")
