"""Inline ``call`` equations and expand primitives that have a decomposition
(``decomposition_rules``) into it: every target compiles the decomposed form."""
from __future__ import annotations

from tracejit.core.interpret import eval_program
from tracejit.core.primitive import decomposition_rules
from tracejit.ops.call import call_p
from tracejit.compiler.passes.retrace import retrace


def _needs_work(program) -> bool:
    return any(eqn.primitive is call_p or eqn.primitive in decomposition_rules for eqn in program.eqns)


def inline(program):
    if not _needs_work(program):
        return program

    def replace(eqn, ins):
        if eqn.primitive is call_p:
            sub = eqn.params["program"]
            n = len(sub.const_vars)
            return eval_program(sub, ins[:n], ins[n:])
        rule = decomposition_rules.get(eqn.primitive)
        if rule is not None:
            return list(rule(*ins, **eqn.params))
        return None

    # Inlined bodies may contain calls or decomposable primitives themselves.
    for _ in range(16):
        program = retrace(program, replace, "inline")
        if not _needs_work(program):
            break
    return program
