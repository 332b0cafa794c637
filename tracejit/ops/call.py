"""``call``: apply a sub-program (a nested ``jit(..., inline=False)``)."""
from __future__ import annotations

from tracejit.core.primitive import Primitive, def_rules
from tracejit.core.interpret import interpret


def _call_abstract_eval(*in_avals, program, name):
    expected = [v.aval.strip_weak() for v in program.const_vars + program.in_vars]
    got = [a.strip_weak() for a in in_avals]
    if got != expected:
        raise TypeError(f"call of {name}: expected operands {[a.str_short() for a in expected]}, "
                        f"got {[a.str_short() for a in got]}")
    return program.out_avals


def _call_impl(*args, program, name):
    n = len(program.const_vars)
    return interpret(program, args[:n], args[n:])


call_p = def_rules(Primitive("call", multiple_results=True), abstract_eval=_call_abstract_eval,
                   impl=_call_impl)
