"""The typed SSA intermediate representation and its jaxpr-style printer.

A :class:`Program` is data: input variables, constant variables (with their
values held alongside), a list of :class:`Eqn` and output atoms. Names are
given at print time, as in JAX, so variables carry only their abstract value.
"""
from __future__ import annotations

import itertools
from typing import Sequence

import numpy as np

from tracejit.core.avals import ShapedArray


class Var:
    """An SSA variable; identity is the variable (names are assigned when printing)."""

    __slots__ = ("aval",)

    def __init__(self, aval: ShapedArray):
        self.aval = aval

    def __repr__(self):
        return f"Var({self.aval.str_short()})"


class Literal:
    """A scalar constant written inline in the program (``max a 0.0``)."""

    __slots__ = ("val", "aval")

    def __init__(self, val, aval: ShapedArray):
        if aval.shape != ():
            raise ValueError("literals must be scalars; arrays become constants")
        self.val = np.asarray(val, dtype=aval.dtype)[()]
        self.aval = aval

    def __repr__(self):
        return f"Literal({self.val!r})"


Atom = Var | Literal


class Eqn:
    """One primitive application: ``outputs = primitive[params] inputs``."""

    __slots__ = ("primitive", "inputs", "outputs", "params")

    def __init__(self, primitive, inputs: Sequence[Atom], outputs: Sequence[Var], params: dict):
        self.primitive = primitive
        self.inputs = list(inputs)
        self.outputs = list(outputs)
        self.params = dict(params)

    def replace(self, **changes) -> "Eqn":
        fields = dict(primitive=self.primitive, inputs=self.inputs, outputs=self.outputs,
                      params=self.params)
        fields.update(changes)
        return Eqn(**fields)

    def __repr__(self):
        return f"Eqn({self.primitive.name}, {len(self.inputs)} in, {len(self.outputs)} out)"


class Program:
    """A closed program: ``{ lambda consts ; inputs. let eqns in (outputs) }``.

    ``const_values`` holds the value bound to each constant variable (arrays
    captured by the traced function, or tracers of an enclosing trace).
    """

    __slots__ = ("const_vars", "const_values", "in_vars", "eqns", "outputs", "python_int_ranges",
                 "concrete_values", "__weakref__")

    def __init__(self, const_vars, const_values, in_vars, eqns, outputs):
        # Input position -> integer dtypes its Python int argument is implicitly cast to (NumPy
        # raises OverflowError if it does not fit; the caller checks, see tracejit.api). Only the
        # traced program carries it; passes make programs without it.
        self.python_int_ranges: dict[int, set] = {}
        # Var -> concrete value, for a program traced eagerly by an autodiff transformation (see
        # tracejit.core.trace.trace_flat); None otherwise. Passes make programs without it.
        self.concrete_values = None
        self.const_vars = list(const_vars)
        self.const_values = list(const_values)
        self.in_vars = list(in_vars)
        self.eqns = list(eqns)
        self.outputs = list(outputs)
        if len(self.const_vars) != len(self.const_values):
            raise ValueError("each constant variable needs exactly one value")

    @property
    def in_avals(self) -> list[ShapedArray]:
        return [v.aval for v in self.in_vars]

    @property
    def out_avals(self) -> list[ShapedArray]:
        return [a.aval for a in self.outputs]

    def replace(self, **changes) -> "Program":
        fields = dict(const_vars=self.const_vars, const_values=self.const_values,
                      in_vars=self.in_vars, eqns=self.eqns, outputs=self.outputs)
        fields.update(changes)
        return Program(**fields)

    def __str__(self):
        return pp_program(self)

    def pretty(self, names=None) -> str:
        return pp_program(self, names)

    __repr__ = __str__


# --------------------------------------------------------------------------- printing

def _var_names():
    letters = "abcdefghijklmnopqrstuvwxyz"
    for length in itertools.count(1):
        for combo in itertools.product(letters, repeat=length):
            # JAX skips names that start with 'a' beyond one letter, giving ba, bb, ...
            if length > 1 and combo[0] == "a":
                continue
            yield "".join(combo)


class Namer:
    """Assigns a, b, c, ... to variables in order of first appearance."""

    def __init__(self):
        self._names: dict[int, str] = {}
        self._gen = _var_names()

    def __call__(self, v: Var) -> str:
        key = id(v)
        if key not in self._names:
            self._names[key] = next(self._gen)
        return self._names[key]


def pp_literal(lit: Literal) -> str:
    val = lit.val
    if isinstance(val, np.bool_):
        return "True" if val else "False"
    if isinstance(val, np.complexfloating):
        return str(complex(val))
    return str(val)


def pp_atom(a: Atom, namer: Namer) -> str:
    return pp_literal(a) if isinstance(a, Literal) else namer(a)


def pp_binder(v: Var, namer: Namer) -> str:
    return f"{namer(v)}:{v.aval.str_short()}"


def pp_param_value(value, namer: Namer, indent: int) -> str:
    if isinstance(value, Program):
        return pp_program(value, namer, indent + 2)
    if isinstance(value, (tuple, list)) and value and all(isinstance(p, Program) for p in value):
        inner = ("\n" + " " * (indent + 2)).join(pp_program(p, namer, indent + 2) for p in value)
        return f"(\n{' ' * (indent + 2)}{inner}\n{' ' * indent})"
    if isinstance(value, np.dtype):
        return value.name
    if isinstance(value, type) and issubclass(value, np.generic):
        return np.dtype(value).name
    return str(value)


def pp_eqn(eqn: Eqn, namer: Namer, indent: int = 0) -> str:
    outs = " ".join(pp_binder(v, namer) for v in eqn.outputs) or "_"
    rule = eqn.primitive.pp_params
    shown = rule(eqn.params) if rule else eqn.params
    params = ""
    if shown:
        params = "[" + " ".join(f"{k}={pp_param_value(v, namer, indent)}" for k, v in shown.items()) + "]"
    ins = " ".join(pp_atom(a, namer) for a in eqn.inputs)
    return f"{outs} = {eqn.primitive.name}{params}{(' ' + ins) if ins else ''}"


def pp_program(program: Program, namer: Namer | None = None, indent: int = 0) -> str:
    """Render a program in JAX's jaxpr text form."""
    namer = namer or Namer()
    consts = " ".join(pp_binder(v, namer) for v in program.const_vars)
    ins = " ".join(pp_binder(v, namer) for v in program.in_vars)
    head = f"{{ lambda {consts}{' ' if consts else ''}; {ins}. let"
    eqn_lines = [pp_eqn(e, namer, indent + 4) for e in program.eqns]
    outs = ", ".join(pp_atom(a, namer) for a in program.outputs)
    outs = f"({outs},)" if len(program.outputs) == 1 else f"({outs})"
    one_line = f"{head} {'; '.join(eqn_lines)} in {outs} }}" if eqn_lines else f"{head}  in {outs} }}"
    if len(eqn_lines) <= 1 and "\n" not in one_line and len(one_line) + indent <= 80:
        return one_line
    pad = " " * indent
    body = "".join(f"\n{pad}    {line}" for line in eqn_lines)
    return f"{head}{body}\n{pad}  in {outs} }}"


def subprograms(eqn: Eqn):
    """Yield every sub-program held in an equation's params."""
    for value in eqn.params.values():
        if isinstance(value, Program):
            yield value
        elif isinstance(value, (tuple, list)):
            for item in value:
                if isinstance(item, Program):
                    yield item


def has_effects(eqn: Eqn) -> bool:
    """True when ``eqn`` has a side effect: its primitive is in ``EFFECTFUL`` (a debug callback),
    or a sub-program (a loop body, a ``cond`` branch) holds one. Passes never drop, merge or
    reorder such equations."""
    from tracejit.core.primitive import EFFECTFUL
    if eqn.primitive in EFFECTFUL:
        return True
    return any(has_effects(e) for sub in subprograms(eqn) for e in sub.eqns)


def count_eqns(program: Program) -> dict[str, int]:
    """Histogram of primitive names, sub-programs included."""
    counts: dict[str, int] = {}
    for eqn in program.eqns:
        counts[eqn.primitive.name] = counts.get(eqn.primitive.name, 0) + 1
        for sub in subprograms(eqn):
            for k, v in count_eqns(sub).items():
                counts[k] = counts.get(k, 0) + v
    return counts

