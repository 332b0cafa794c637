"""Traces: who interprets a primitive application right now.

There is one *current trace* in a context variable (per thread, per async
task). Each trace holds its parent, as in JAX's current core: there is no
level stack. ``EvalTrace`` (the root) runs primitives with their NumPy impl
rules; ``StagingTrace`` records them as equations of a :class:`Program`.
Tracers of an enclosing (ancestor) trace that show up in a nested trace are
captured as constants of the nested program, so closures just work.
"""
from __future__ import annotations

import contextlib
import contextvars

import numpy as np

from tracejit.core import dtypes, errors
from tracejit.core.avals import ShapedArray, aval_of_value
from tracejit.core.ir import Eqn, Literal, Program, Var
from tracejit.core.primitive import Primitive, abstract_eval_rules, impl_rules
from tracejit.core.tracer import Tracer


class Trace:
    """Base class: interprets primitive applications."""

    name = "trace"
    parent: "Trace | None" = None
    finished = False

    def process_primitive(self, prim: Primitive, args, params) -> list:
        raise NotImplementedError

    def is_ancestor_of(self, other: "Trace") -> bool:
        t = other.parent
        while t is not None:
            if t is self:
                return True
            t = t.parent
        return False


class EvalTrace(Trace):
    """The root trace: applies each primitive's NumPy reference implementation."""

    name = "eval"

    def process_primitive(self, prim, args, params):
        for a in args:
            if isinstance(a, Tracer):
                raise errors.UnexpectedTracerError(errors.escaped_tracer_message(a))
        try:
            rule = impl_rules[prim]
        except KeyError:
            raise NotImplementedError(f"primitive {prim.name!r} has no NumPy implementation rule") from None
        return rule(*args, **params)


EVAL_TRACE = EvalTrace()
_current_trace: contextvars.ContextVar[Trace] = contextvars.ContextVar("tracejit_trace", default=EVAL_TRACE)


def current_trace() -> Trace:
    return _current_trace.get()


@contextlib.contextmanager
def set_current_trace(trace: Trace):
    token = _current_trace.set(trace)
    try:
        yield trace
    finally:
        _current_trace.reset(token)


def bind(prim: Primitive, args, params) -> list:
    """Apply ``prim`` to ``args`` on the current trace."""
    return _current_trace.get().process_primitive(prim, args, params)


def is_eager() -> bool:
    """True when no transformation is tracing (NumPy may run directly)."""
    return _current_trace.get() is EVAL_TRACE


class StagingTrace(Trace):
    """Records primitive applications into a Program (JAX's DynamicJaxprTrace)."""

    def __init__(self, parent: Trace, name: str = "function"):
        self.parent = parent
        self.name = name
        self.in_vars: list[Var] = []
        self.eqns: list[Eqn] = []
        self.const_vars: list[Var] = []
        self.const_values: list = []
        self._const_index: dict[int, Var] = {}
        self.python_int_ranges: dict[int, set] = {}
        self.finished = False

    def require_int_fits(self, tracer: Tracer, dtype) -> None:
        """The Python int argument behind input ``tracer`` is cast to ``dtype`` (a weak operand)."""
        if tracer._trace is self:
            for i, v in enumerate(self.in_vars):
                if v is tracer._var:
                    self.python_int_ranges.setdefault(i, set()).add(np.dtype(dtype))

    def new_input(self, aval: ShapedArray) -> Tracer:
        v = Var(aval)
        self.in_vars.append(v)
        return Tracer(self, aval, v)

    def _const(self, value, aval: ShapedArray) -> Var:
        key = id(value)
        v = self._const_index.get(key)
        if v is None:
            v = Var(aval)
            self._const_index[key] = v
            self.const_vars.append(v)
            self.const_values.append(value)  # keeps `value` alive, so its id stays unique
        return v

    def to_atom(self, x):
        if isinstance(x, Tracer):
            if x._trace is self:
                return x._var
            if x._trace.finished or not x._trace.is_ancestor_of(self):
                raise errors.UnexpectedTracerError(errors.escaped_tracer_message(x))
            return self._const(x, x.aval)
        if dtypes.is_python_scalar(x):
            return Literal(x, aval_of_value(x))
        if isinstance(x, np.generic) or (isinstance(x, np.ndarray) and x.ndim == 0):
            return Literal(x, ShapedArray((), x.dtype))
        if isinstance(x, np.ndarray):
            return self._const(x, ShapedArray(x.shape, x.dtype))
        raise TypeError(f"{type(x).__name__} is not a valid argument of primitive; "
                        "expected an array, a scalar or a traced array")

    def process_primitive(self, prim, args, params):
        if self.finished:
            raise errors.UnexpectedTracerError(
                f"primitive {prim.name} was applied on a finished trace of {self.name!r}")
        atoms = [self.to_atom(a) for a in args]
        out_avals = abstract_eval_rules[prim](*[a.aval for a in atoms], **params)
        outs = [Var(aval) for aval in out_avals]
        self.eqns.append(Eqn(prim, atoms, outs, params))
        return [Tracer(self, v.aval, v) for v in outs]

    def finish(self, outputs) -> Program:
        """Close the trace; ``outputs`` are the function's flat results."""
        out_atoms = [self.to_atom(x) for x in outputs]
        self.finished = True
        program = Program(self.const_vars, self.const_values, self.in_vars, self.eqns, out_atoms)
        program.python_int_ranges = self.python_int_ranges
        return program


def note_weak_int_cast(tracer: Tracer, dtype) -> None:
    """A weakly typed (Python int) traced value is cast to integer ``dtype``; if it is a traced
    function's input, calls of that function check the argument fits (NumPy's OverflowError)."""
    require = getattr(tracer._trace, "require_int_fits", None)
    if require is not None:
        require(tracer, dtype)


def trace_flat(flat_fun, in_avals, name: str = "function") -> Program:
    """Trace ``flat_fun(*tracers) -> list`` into a Program over ``in_avals``."""
    parent = _current_trace.get()
    trace = StagingTrace(parent, name)
    args = [trace.new_input(a) for a in in_avals]
    try:
        with set_current_trace(trace):
            outs = flat_fun(*args)
        return trace.finish(outs)
    finally:
        trace.finished = True
