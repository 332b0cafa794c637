"""Evaluating a Program by re-applying its equations on the current trace.

Under the root trace this computes values with NumPy; under a staging trace
it copies (inlines) the program into the program being built. This is the
one interpreter loop that inlining, nested jit and transforms reuse.
"""
from __future__ import annotations

from tracejit.core.ir import Literal, Program, Var
from tracejit.core.trace import bind


def eval_program(program: Program, const_values, args) -> list:
    """Apply ``program`` to ``args`` with ``const_values`` bound to its constants."""
    env: dict[Var, object] = {}

    def read(atom):
        return atom.val if type(atom) is Literal else env[atom]

    for v, val in zip(program.const_vars, const_values):
        env[v] = val
    if len(args) != len(program.in_vars):
        raise TypeError(f"program takes {len(program.in_vars)} arguments, got {len(args)}")
    for v, val in zip(program.in_vars, args):
        env[v] = val
    for eqn in program.eqns:
        outs = bind(eqn.primitive, [read(a) for a in eqn.inputs], eqn.params)
        for v, val in zip(eqn.outputs, outs):
            env[v] = val
    return [read(a) for a in program.outputs]
