"""The reference backend: interprets a Program with each primitive's NumPy
impl rule. It defines the semantics every other backend is tested against."""
from __future__ import annotations

import numpy as np

from tracejit.core.interpret import interpret  # noqa: F401  (the reference semantics live in core)
from tracejit.core.ir import Program


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
    """Interprets the Program as traced: no compiler stage runs before it, so it checks them all."""

    name = "reference"
    plans = False

    def build(self, optimized, *, name: str = "function"):
        from tracejit.config import config
        return ReferenceExecutable(optimized.program, check=config.enable_checks)


BACKEND = ReferenceBackend()


def _register():
    from tracejit.backends import register_backend
    register_backend("reference", BACKEND)


_register()
