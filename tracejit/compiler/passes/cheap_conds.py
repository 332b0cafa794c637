"""A ``cond`` whose branches are a few scalar operations becomes both branches and a ``select_n``.

``if seq[i] + seq[j] == 3: best = max(best, t[i + 1, j - 1] + 1)`` in a loop body (autograph
makes it a ``cond``) costs a branch and a kernel call per side on every iteration, and splits
the body's kernels around it, while computing both sides is a handful of instructions that fuse
with their neighbours into one kernel. Evaluating the untaken side is safe when it cannot fail
or write: elementwise operations (integer division has a guarded divisor in compiled code,
float operations raise no traps), clamped reads (``dynamic_slice``, ``gather`` in ``clip`` or
``fill`` mode) and shape operations; anything else (loops, scatters, callbacks, products) keeps
the ``cond``. Values are identical: ``select_n`` picks the taken side's results.
"""
from __future__ import annotations

import numpy as np

from tracejit.core.interpret import eval_program
from tracejit.core.primitive import ELEMENTWISE
from tracejit.ops.control_flow import cond_p
from tracejit.ops.elementwise import binary_prims, convert_element_type_p, select_n_p
from tracejit.ops.indexing import dynamic_slice_p, gather_p
from tracejit.ops.structural import broadcast_in_dim_p, reshape_p, slice_p, squeeze_p
from tracejit.compiler.passes.retrace import retrace

# At most this many equations per branch, and this many elements per value: a branch larger
# than that may cost more than the branch it saves.
MAX_EQNS = 24
MAX_ELEMENTS = 16
_SHAPE_OPS = {broadcast_in_dim_p, reshape_p, slice_p, squeeze_p, dynamic_slice_p, gather_p,
              convert_element_type_p, select_n_p}


def _cheap(program) -> bool:
    if len(program.eqns) > MAX_EQNS or program.const_vars:
        return False
    for eqn in program.eqns:
        if eqn.primitive not in ELEMENTWISE and eqn.primitive not in _SHAPE_OPS:
            return False
        if any(v.aval.size > MAX_ELEMENTS for v in eqn.outputs):
            return False
    return True


def _is_cheap_cond(eqn) -> bool:
    return (eqn.primitive is cond_p and len(eqn.params["branches"]) == 2
            and all(_cheap(b) for b in eqn.params["branches"]))


def _both_sides(eqn, ins):
    index, operands = ins[0], ins[1:]
    branches = eqn.params["branches"]
    if not hasattr(index, "aval"):                   # a constant index: one side only
        return eval_program(branches[min(max(int(index), 0), 1)], [], operands)
    # cond clamps its index into [0, 1]: branch 1 for every index >= 1.
    taken = binary_prims["ge"].bind(index, index.aval.dtype.type(1))
    sides = [eval_program(b, [], operands) for b in branches]
    outs = []
    for v, a, b in zip(eqn.outputs, *sides):
        if a is b:
            outs.append(a)
            continue
        a, b = (x if hasattr(x, "aval") else np.asarray(x, v.aval.dtype) for x in (a, b))
        outs.append(select_n_p.bind(taken, a, b))
    return outs


def cheap_conds_as_selects(program):
    """Rewrite every two-branch ``cond`` whose branches are a few safe scalar operations as
    both branches followed by ``select_n``."""
    if not any(_is_cheap_cond(e) for e in program.eqns):
        return program
    return retrace(program, lambda eqn, ins: _both_sides(eqn, ins) if _is_cheap_cond(eqn) else None,
                   "cheap_conds")
