"""Dead-code elimination: drop equations whose outputs nobody uses (never one with a side
effect: a debug callback, or a loop or ``cond`` whose body holds one)."""
from __future__ import annotations

from tracejit.core.ir import Var, has_effects


def dce(program):
    live = {id(a) for a in program.outputs if isinstance(a, Var)}
    kept = []
    for eqn in reversed(program.eqns):
        if any(id(v) in live for v in eqn.outputs) or has_effects(eqn):
            kept.append(eqn)
            live.update(id(a) for a in eqn.inputs if isinstance(a, Var))
    kept.reverse()
    used_consts = [(v, c) for v, c in zip(program.const_vars, program.const_values) if id(v) in live]
    if len(kept) == len(program.eqns) and len(used_consts) == len(program.const_vars):
        return program
    return program.replace(eqns=kept, const_vars=[v for v, _ in used_consts],
                           const_values=[c for _, c in used_consts])
