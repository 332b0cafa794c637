"""Evaluating a Program: on the current trace (:func:`eval_program`), or with each primitive's
NumPy impl rule (:func:`interpret`, the reference semantics).

Under the root trace ``eval_program`` computes values with NumPy; under a staging trace
it copies (inlines) the program into the program being built. This is the
one interpreter loop that inlining, nested jit and transforms reuse.
``interpret`` is what the reference backend runs and what control-flow impl rules
use for their sub-programs.
"""
from __future__ import annotations

import numpy as np

from tracejit.core.ir import Literal, Program, Var
from tracejit.core.primitive import impl_rules
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


def interpret(program: Program, const_values, args, check: bool = False) -> list:
    """Evaluate ``program`` on NumPy values.

    With ``check`` every intermediate is compared with its variable's
    abstract value, so a rule whose impl and abstract eval disagree is caught.
    """
    env: dict[Var, object] = {}

    def read(atom):
        return atom.val if type(atom) is Literal else env[atom]

    for v, val in zip(program.const_vars, const_values):
        env[v] = val
    for v, val in zip(program.in_vars, args):
        env[v] = val
    for eqn in program.eqns:
        try:
            rule = impl_rules[eqn.primitive]
        except KeyError:
            raise NotImplementedError(f"primitive {eqn.primitive.name!r} has no NumPy rule") from None
        outs = rule(*[read(a) for a in eqn.inputs], **eqn.params)
        for v, val in zip(eqn.outputs, outs):
            if check:
                _check_value(eqn, v, val)
            env[v] = val
    return [read(a) for a in program.outputs]


def _check_value(eqn, var, val):
    shape, dtype = np.shape(val), np.asarray(val).dtype
    if shape != var.aval.shape or dtype != var.aval.dtype:
        raise AssertionError(f"{eqn.primitive.name}: impl produced {dtype}{list(shape)} but abstract "
                             f"eval promised {var.aval.str_short()}")
