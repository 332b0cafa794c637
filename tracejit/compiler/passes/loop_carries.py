"""Loop carries the body passes through unchanged are the loop's operands.

A ``scan`` or ``while`` body that returns carry ``k`` exactly as it received it
(a matrix threaded through a loop only to be read) leaves that carry equal to
its initial value after any number of iterations, so later uses of the loop's
result ``k`` read the operand instead. A loop none of whose results is used any
more (one that changes nothing the program reads) is then removed by ``dce``:
even a ``while`` whose condition would never turn false, as JAX's dead-code
elimination does -- unless its body has a side effect (a debug callback:
``core.ir.has_effects``), which ``dce`` keeps, so the loop still runs every
iteration; only reads of its unchanged carries are redirected here.
Bodies are programs of their own; the driver runs this pass on them when it
compiles them.
"""
from __future__ import annotations

from tracejit.core.ir import Literal, Program


def _pass_through(eqn) -> dict[int, object]:
    """Result position -> operand it always equals, for one loop equation."""
    p = eqn.params
    if eqn.primitive.name == "scan":
        body, first, n = p["program"], p["num_consts"], p["num_carry"]
    elif eqn.primitive.name == "while":
        body, first = p["body_program"], p["body_nconsts"]
        n = len(body.outputs)
    else:
        return {}
    out = {}
    for k in range(n):
        if body.outputs[k] is body.in_vars[first + k]:
            operand_pos = (first if eqn.primitive.name == "scan" else p["cond_nconsts"] + first) + k
            out[k] = eqn.inputs[operand_pos]
    return out


def forward_unchanged_carries(program: Program) -> Program:
    rename: dict[int, object] = {}
    eqns = []
    changed = False
    for eqn in program.eqns:
        inputs = [a if isinstance(a, Literal) else rename.get(id(a), a) for a in eqn.inputs]
        if any(x is not y for x, y in zip(inputs, eqn.inputs)):
            eqn = eqn.replace(inputs=inputs)
            changed = True
        for k, operand in _pass_through(eqn).items():
            rename[id(eqn.outputs[k])] = operand
            changed = True
        eqns.append(eqn)
    if not changed:
        return program
    outputs = [a if isinstance(a, Literal) else rename.get(id(a), a) for a in program.outputs]
    return program.replace(eqns=eqns, outputs=outputs)
