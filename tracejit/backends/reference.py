"""The reference backend: interprets a Program with each primitive's NumPy
impl rule. It defines the semantics every other backend is tested against."""
from __future__ import annotations

import numpy as np

from tracejit.core.ir import Literal, Program, Var
from tracejit.core.primitive import impl_rules


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


class ReferenceExecutable:
    """A compiled-program stand-in that runs the reference interpreter."""

    backend = "reference"

    def __init__(self, program: Program, check: bool = False):
        self.program = program
        self.const_values = [np.asarray(c) for c in program.const_values]
        self.check = check
        self.kernels = []

    def __call__(self, *args):
        outs = interpret(self.program, self.const_values, args, self.check)
        return [as_fresh_output(o, args) for o in outs]


def as_fresh_output(value, args) -> np.ndarray:
    """Outputs are new, writeable arrays: never an input, a view, or a scalar."""
    if (isinstance(value, np.ndarray) and value.base is None and value.flags.writeable
            and not any(value is a for a in args)):
        return value
    return np.array(value)


class ReferenceBackend:
    name = "reference"

    def compile(self, program: Program, *, name: str = "function", donate_argnums=()):
        from tracejit.config import config
        return ReferenceExecutable(program, check=config.enable_checks)


BACKEND = ReferenceBackend()


def _register():
    from tracejit.backends import register_backend
    register_backend("reference", BACKEND)


_register()
