"""Rebuild a program by re-applying its equations on a fresh staging trace,
letting a pass replace some of them. Types are re-derived by the rules."""
from __future__ import annotations

from tracejit.core.ir import Literal, Program
from tracejit.core.trace import StagingTrace, set_current_trace, bind, EVAL_TRACE


def retrace(program: Program, replace=None, name: str = "pass") -> Program:
    """``replace(eqn, in_values) -> list | None``; None keeps the equation as is."""
    trace = StagingTrace(EVAL_TRACE, name)
    n_const = len(program.const_vars)
    inputs = [trace.new_input(v.aval) for v in program.const_vars + program.in_vars]
    env = {}

    def read(a):
        return a.val if type(a) is Literal else env[a]

    for v, t in zip(program.const_vars + program.in_vars, inputs):
        env[v] = t
    with set_current_trace(trace):
        for eqn in program.eqns:
            ins = [read(a) for a in eqn.inputs]
            outs = replace(eqn, ins) if replace is not None else None
            if outs is None:
                outs = bind(eqn.primitive, ins, eqn.params)
            for v, o in zip(eqn.outputs, outs):
                env[v] = o
        outs = [read(a) for a in program.outputs]
    new = trace.finish(outs)
    # The first n inputs were the old constants: make them constants again.
    const_vars = new.in_vars[:n_const] + new.const_vars
    const_values = list(program.const_values) + new.const_values
    return Program(const_vars, const_values, new.in_vars[n_const:], new.eqns, new.outputs)


def uses_and_producers(program: Program) -> tuple[dict, dict]:
    """``({id(var): number of reads, outputs included}, {id(var): the equation producing it})``."""
    uses: dict[int, int] = {}
    for e in program.eqns:
        for a in e.inputs:
            uses[id(a)] = uses.get(id(a), 0) + 1
    for a in program.outputs:
        uses[id(a)] = uses.get(id(a), 0) + 1
    return uses, {id(v): e for e in program.eqns for v in e.outputs}
