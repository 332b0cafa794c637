"""Transposed products computed in the transposed layout: ``(A B)^T = B^T A^T``.

Reverse-mode autodiff of ``x @ W`` produces ``transpose(dot_general(dy, x))``
for the weight gradient (as JAX's transpose rule does). Materializing the
product and then transposing it costs a strided copy of the whole matrix;
swapping the operands of the product gives the transposed result directly,
and BLAS takes the operands' transposes as flags. Only products whose result
is used by nothing but that transpose are rewritten (otherwise both layouts
would be needed). The sums are the same; BLAS may add them in another order.
"""
from __future__ import annotations

from tracejit.compiler.passes.retrace import retrace, uses_and_producers
from tracejit.ops.dot import _free_dims, dot_general_p
from tracejit.ops.structural import transpose_p


def swapped_permutation(lhs_ndim, rhs_ndim, dimension_numbers) -> tuple:
    """The transpose of a dot_general's result that equals the product with operands swapped."""
    (lc, rc), (lb, rb) = dimension_numbers
    nb = len(lb)
    nl, nr = len(_free_dims(lhs_ndim, lc, lb)), len(_free_dims(rhs_ndim, rc, rb))
    return tuple(range(nb)) + tuple(nb + nl + j for j in range(nr)) + tuple(nb + i for i in range(nl))


def transpose_dots(program):
    uses, producer = uses_and_producers(program)
    candidates = set()
    for e in program.eqns:
        if e.primitive is not transpose_p:
            continue
        d = producer.get(id(e.inputs[0]))
        if d is None or d.primitive is not dot_general_p or uses.get(id(e.inputs[0])) != 1:
            continue
        lhs, rhs = d.inputs
        perm = swapped_permutation(lhs.aval.ndim, rhs.aval.ndim, d.params["dimension_numbers"])
        if tuple(e.params["permutation"]) == perm and perm != tuple(range(len(perm))):
            candidates.add(id(e))
    if not candidates:
        return program
    dot_operands: dict[int, tuple] = {}

    def replace(eqn, ins):
        if eqn.primitive is dot_general_p:
            dot_operands[id(eqn.outputs[0])] = (ins, eqn.params["dimension_numbers"])
            return None
        if id(eqn) in candidates:
            (lhs, rhs), ((lc, rc), (lb, rb)) = dot_operands[id(eqn.inputs[0])]
            return [dot_general_p.bind(rhs, lhs, dimension_numbers=((rc, lc), (rb, lb)))]
        return None
    return retrace(program, replace, "dot_layout")
