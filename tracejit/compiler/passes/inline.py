"""Inline ``call`` equations and expand primitives the backend cannot lower
directly into their decompositions (``decomposition_rules``)."""
from __future__ import annotations

from tracejit.core.interpret import eval_program
from tracejit.core.primitive import decomposition_rules
from tracejit.ops.call import call_p
from tracejit.compiler.passes.retrace import retrace


def _needs_work(program, supports) -> bool:
    for eqn in program.eqns:
        if eqn.primitive is call_p:
            return True
        if eqn.primitive in decomposition_rules and not (supports and supports(eqn.primitive)):
            return True
    return False


def inline(program, supports=None):
    if not _needs_work(program, supports):
        return program

    def replace(eqn, ins):
        if eqn.primitive is call_p:
            sub = eqn.params["program"]
            n = len(sub.const_vars)
            return eval_program(sub, ins[:n], ins[n:])
        rule = decomposition_rules.get(eqn.primitive)
        if rule is not None and not (supports and supports(eqn.primitive)):
            return list(rule(*ins, **eqn.params))
        return None

    # Inlined bodies may contain calls or decomposable primitives themselves.
    for _ in range(16):
        program = retrace(program, replace, "inline")
        if not _needs_work(program, supports):
            break
    return program
