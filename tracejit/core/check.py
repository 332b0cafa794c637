"""The program checker: re-derives every equation's types from its rules.

Run after tracing and after every compiler pass (``config.enable_checks``),
so a pass that breaks typing is caught at the pass that broke it.
"""
from __future__ import annotations

from tracejit.core.errors import ProgramTypeError
from tracejit.core.ir import Literal, Program, Var, pp_eqn, Namer, subprograms
from tracejit.core.primitive import abstract_eval_rules


def check_program(program: Program) -> None:
    """Raise :class:`ProgramTypeError` if ``program`` is not well typed.

    Checks: every variable is defined exactly once before use, literals are
    scalars, each equation's output types equal what its abstract-eval rule
    derives from its input types, and sub-programs are themselves well typed.
    """
    defined: set[int] = set()
    namer = Namer()

    def define(v, where):
        if not isinstance(v, Var):
            raise ProgramTypeError(f"{where}: binder {v!r} is not a Var")
        if id(v) in defined:
            raise ProgramTypeError(f"{where}: variable {namer(v)} is defined twice")
        defined.add(id(v))

    def use(a, where):
        if isinstance(a, Literal):
            if a.aval.shape != ():
                raise ProgramTypeError(f"{where}: non-scalar literal")
            return
        if not isinstance(a, Var):
            raise ProgramTypeError(f"{where}: operand {a!r} is neither a Var nor a Literal")
        if id(a) not in defined:
            raise ProgramTypeError(f"{where}: variable {namer(a)} is used before it is defined")

    for v in program.const_vars:
        define(v, "constants")
    for v in program.in_vars:
        define(v, "inputs")
    for i, eqn in enumerate(program.eqns):
        where = f"equation {i} ({eqn.primitive.name})"
        for a in eqn.inputs:
            use(a, where)
        rule = abstract_eval_rules.get(eqn.primitive)
        if rule is None:
            raise ProgramTypeError(f"{where}: primitive has no abstract-eval rule")
        try:
            derived = rule(*[a.aval for a in eqn.inputs], **eqn.params)
        except Exception as e:
            raise ProgramTypeError(f"{where}: rule rejected the operands: {e}\n  {pp_eqn(eqn, namer)}") from e
        if len(derived) != len(eqn.outputs):
            raise ProgramTypeError(f"{where}: rule gives {len(derived)} outputs, equation binds "
                                   f"{len(eqn.outputs)}")
        for out, aval in zip(eqn.outputs, derived):
            if out.aval.strip_weak() != aval.strip_weak():
                raise ProgramTypeError(f"{where}: output typed {out.aval.str_short()} but the rule "
                                       f"derives {aval.str_short()}\n  {pp_eqn(eqn, namer)}")
            define(out, where)
        for sub in subprograms(eqn):
            check_program(sub)
    for a in program.outputs:
        use(a, "outputs")
