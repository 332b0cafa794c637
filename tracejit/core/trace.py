"""Traces: who interprets a primitive application right now.

There is one *current trace* in a context variable (per thread, per async
task). Each trace holds its parent, as in JAX's current core: there is no
level stack. ``EvalTrace`` (the root) runs primitives with their NumPy impl
rules; ``StagingTrace`` records them as equations of a :class:`Program`.
Tracers of an enclosing (ancestor) trace that show up in a nested trace are
captured as constants of the nested program, so closures just work.

Eager autodiff: autodiff transformations applied outside ``jit`` / ``vmap`` trace with a
*concrete* StagingTrace (``trace_flat(..., eager_args=...)``), which knows the values of its
inputs. When Python code needs a value (``bool(t)``, ``int(t)``, ``float(t)``, ``t.item()``),
the trace evaluates the equations recorded so far with the NumPy impl rules
(:meth:`StagingTrace.concrete_value_of`), so ``if x > 0:`` inside ``grad(f)(x)`` works as in JAX
and the program records the path taken. Values are computed only when asked for: functions
without such control flow pay nothing.
"""
from __future__ import annotations

import contextlib
import contextvars

import numpy as np

from tracejit.core import dtypes, errors
from tracejit.core.avals import ShapedArray, aval_of_value
from tracejit.core.ir import Eqn, Literal, Program, Var
from tracejit.core.storage_dtypes import STORAGE_TRANSPARENT, bind_in_float32, has_storage_operand
from tracejit.core.primitive import EFFECTFUL, NAMED_AXIS, Primitive, abstract_eval_rules, impl_rules
from tracejit.core.tracer import NO_VALUE, Tracer


class Trace:
    """Base class: interprets primitive applications."""

    name = "trace"
    parent: "Trace | None" = None
    finished = False
    concrete = False  # knows concrete values (a StagingTrace of an eager transformation)

    def process_primitive(self, prim: Primitive, args, params) -> list:
        raise NotImplementedError

    def concrete_value_of(self, var):
        """The concrete value of ``var`` (a variable of this trace), or ``NO_VALUE``."""
        return NO_VALUE

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
        _check_operands(prim, args, params)
        return rule(*args, **params)


def _check_operands(prim: Primitive, args, params) -> None:
    """Run ``prim``'s abstract rule on concrete operands, so an application JAX rejects raises the
    same TypeError eagerly as under ``jit`` (``lax.add`` of shapes (1, 3) and (2, 3): NumPy's
    implementation would broadcast and return a result)."""
    check = abstract_eval_rules.get(prim)
    if check is None:
        return
    try:
        avals = [aval_of_value(a) for a in args]
    except TypeError:
        return          # an operand the implementation converts itself (a list): its rule decides
    check(*avals, **params)


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
    """Apply ``prim`` to ``args`` on the current trace (bfloat16 operands compute in float32:
    core/storage_dtypes.py)."""
    if prim not in STORAGE_TRANSPARENT and has_storage_operand(args):
        return bind_in_float32(prim, args, params, _apply)
    return _current_trace.get().process_primitive(prim, args, params)


def _apply(prim: Primitive, args, params) -> list:
    return _current_trace.get().process_primitive(prim, args, params)


def is_eager() -> bool:
    """True when no transformation is tracing (NumPy may run directly)."""
    return _current_trace.get() is EVAL_TRACE


def concrete_value(x):
    """The concrete value behind an argument ``x``: ``x`` itself for an array or scalar, the
    value a tracer stands for when its trace knows it, else ``NO_VALUE``."""
    return x._trace.concrete_value_of(x._var) if isinstance(x, Tracer) else x


def is_concrete_context(trace: Trace) -> bool:
    """True when a transformation applied under ``trace`` runs eagerly: ``trace`` is the root
    or a concrete trace (an eager transformation, possibly nested in another). Under ``jit``,
    ``vmap`` or a ``lax`` control-flow body it is False: values stay abstract, as in JAX."""
    return trace is EVAL_TRACE or trace.concrete


class StagingTrace(Trace):
    """Records primitive applications into a Program (JAX's DynamicJaxprTrace).

    A *concrete* trace (``concrete=True``, made by :func:`trace_flat` for eager autodiff)
    also knows where its inputs' values come from (``sources``: Var -> array, tracer of an
    enclosing trace, or ``NO_VALUE``) and computes values on demand
    (:meth:`concrete_value_of`). Applications to no tracer at all are computed at once, as
    the root trace would, instead of being recorded (JAX's eager transformations do the same).
    """

    concrete = False
    # A concrete trace runs side effects on known values at once (see process_primitive), unless
    # what it traces may not run as traced (a custom_vjp / custom_jvp primal: its rules may run instead).
    effects_now = True

    def __init__(self, parent: Trace, name: str = "function", concrete: bool = False):
        self.parent = parent
        self.name = name
        if concrete:
            self.concrete = True
            self.sources: dict[Var, object] = {}   # inputs and constants -> where their value is
            self.known: dict[Var, object] = {}     # Var -> concrete value, computed so far
            self.n_evaluated = 0                   # eqns[:n_evaluated] have been evaluated
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

    def new_input(self, aval: ShapedArray, source=NO_VALUE) -> Tracer:
        v = Var(aval)
        self.in_vars.append(v)
        if self.concrete:
            if isinstance(source, (list, tuple)):
                source = np.asarray(source, aval.dtype)
            self.sources[v] = source
        return Tracer(self, aval, v)

    def _const(self, value, aval: ShapedArray) -> Var:
        key = id(value)
        v = self._const_index.get(key)
        if v is None:
            v = Var(aval)
            self._const_index[key] = v
            self.const_vars.append(v)
            self.const_values.append(value)  # keeps `value` alive, so its id stays unique
            if self.concrete:
                self.sources[v] = value
        return v

    def concrete_value_of(self, var):
        """Eager autodiff: the value of ``var``, computed by evaluating (once) the equations
        recorded so far on the known input values; ``NO_VALUE`` if it depends on an unknown
        one (or if this trace is not concrete)."""
        if not self.concrete or self.finished:
            return NO_VALUE
        known = self.known
        if var in known:
            return known[var]
        sources = self.sources

        def read(atom):
            if type(atom) is Literal:
                return atom.val
            val = known.get(atom, NO_VALUE)
            if val is NO_VALUE and atom in sources:
                val = concrete_value(sources[atom])  # may evaluate an enclosing concrete trace
                if val is not NO_VALUE:
                    known[atom] = val
            return val

        if var in sources:
            return read(var)
        eqns = self.eqns
        while self.n_evaluated < len(eqns):
            eqn = eqns[self.n_evaluated]
            self.n_evaluated += 1
            ins = [read(a) for a in eqn.inputs]
            impl = impl_rules.get(eqn.primitive)
            if impl is not None and not any(v is NO_VALUE for v in ins):
                known.update(zip(eqn.outputs, impl(*ins, **eqn.params)))
        return known.get(var, NO_VALUE)

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
        if self.concrete and prim not in NAMED_AXIS:
            for a in args:
                if isinstance(a, Tracer):
                    break
            else:
                # Eager autodiff: nothing traced goes in, so nothing to differentiate: compute it now.
                return EVAL_TRACE.process_primitive(prim, args, params)
            if prim in EFFECTFUL and self.effects_now:
                # A side effect (a debug callback) on known values runs now, once, as in JAX's eager
                # transformations; not recorded, so the derivative never runs it again. One with
                # results (io_callback) is recorded: its derivative rule raises, as JAX's does.
                values = [concrete_value(a) for a in args]
                if not any(v is NO_VALUE for v in values) and not abstract_eval_rules[prim](
                        *[aval_of_value(v) for v in values], **params):
                    return EVAL_TRACE.process_primitive(prim, values, params)
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
        if self.concrete:
            program.concrete_values = self.known
        return program


def note_weak_int_cast(tracer: Tracer, dtype) -> None:
    """A weakly typed (Python int) traced value is cast to integer ``dtype``; if it is a traced
    function's input, calls of that function check the argument fits (NumPy's OverflowError)."""
    require = getattr(tracer._trace, "require_int_fits", None)
    if require is not None:
        require(tracer, dtype)


def trace_flat(flat_fun, in_avals, name: str = "function", eager_args=None, effects_now: bool = True) -> Program:
    """Trace ``flat_fun(*tracers) -> list`` into a Program over ``in_avals``.

    ``eager_args`` (autodiff transformations pass it): the actual arguments (arrays, tracers
    of an enclosing trace, or ``NO_VALUE`` for an unknown one). When no ``jit`` / ``vmap``
    trace encloses this one (:func:`is_concrete_context`) the trace is concrete: Python code
    in ``flat_fun`` may ask for values (``bool(t)``, ``float(t)``...), and the program's
    ``concrete_values`` maps variables to the values computed. Such a program holds the
    Python path taken for these arguments: it must not be cached. With ``effects_now=False`` a
    concrete trace records side effects (debug callbacks) instead of running them at once.
    """
    parent = _current_trace.get()
    concrete = eager_args is not None and is_concrete_context(parent)
    trace = StagingTrace(parent, name, concrete)
    trace.effects_now = effects_now
    if concrete:
        args = [trace.new_input(a, x) for a, x in zip(in_avals, eager_args)]
    else:
        args = [trace.new_input(a) for a in in_avals]
    try:
        with set_current_trace(trace):
            outs = flat_fun(*args)
        return trace.finish(outs)
    finally:
        trace.finished = True
