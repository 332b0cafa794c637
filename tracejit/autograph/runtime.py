"""Run-time halves of converted statements: each decides, with the values in hand, whether the
loop or ``if`` runs as Python or becomes ``lax.fori_loop`` / ``lax.scan`` / ``lax.while_loop`` /
``lax.cond``.

Converted code passes the statement's state (the variables it carries, in a tuple) and its
body as functions ``body(item, state) -> state``; see :mod:`tracejit.autograph.transformer`.
A variable whose value is static (not a tracer) stays a Python value inside the compiled body
as long as the body gives it back unchanged; otherwise it is carried as an array.

Examples
--------
>>> from tracejit.autograph import runtime
>>> runtime.for_range(range, (3,), lambda i, s: (s[0] + i,), (0,), ("t",), 1, None)
(3,)
"""
from __future__ import annotations

import builtins
import operator

import numpy as np

from tracejit import lax
from tracejit import numpy as jnp
from tracejit.core.pytree import tree_leaves
from tracejit.core.trace import current_trace, trace_flat
from tracejit.core.tracer import NO_VALUE, Tracer
from tracejit.functionalize import state as _fstate
from tracejit.functionalize.refs import Ref
from tracejit.autograph import masked as _masked

# A static-bound loop of at most this many iterations runs as Python (unrolled when traced), as
# without autograph: a short unrolled loop compiles to less than a loop would.
STATIC_TRIP_MAX = 16
# A loop whose body cannot be compiled as one loop body (shapes that depend on the index) is
# unrolled in Python up to this many iterations; above it, an error names the line.
UNROLL_CAP = 1000
# Slices whose length depends on the loop index (``L[i, :i]``) run as masked windows inside the
# compiled loop (tracejit/autograph/masked.py); False unrolls such loops as before (tests compare both).
MASKED_SLICES = True


class AutographError(TypeError):
    """A converted loop or ``if`` that cannot run as written; the message names the line and the fix."""


class Undefined:
    """The value of a variable a converted statement may leave unassigned; using it raises.

    Examples
    --------
    >>> u = Undefined("t", 12, "it is assigned only inside the loop")
    >>> u + 1
    Traceback (most recent call last):
    ...
    tracejit.autograph.runtime.AutographError: variable 't' (line 12) is used but has no value: it is assigned only inside the loop
    """

    __slots__ = ("name", "lineno", "why")

    def __init__(self, name, lineno, why="it is not assigned before this point"):
        self.name, self.lineno, self.why = name, lineno, why

    def _raise(self, *_, **__):
        raise AutographError(f"variable {self.name!r} (line {self.lineno}) is used but has no value: {self.why}")

    __getattr__ = __call__ = __getitem__ = __iter__ = __len__ = __bool__ = __array__ = _raise
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _raise
    __floordiv__ = __mod__ = __pow__ = __matmul__ = __neg__ = __lt__ = __le__ = __gt__ = __ge__ = _raise
    __and__ = __or__ = __xor__ = __invert__ = __float__ = __int__ = __index__ = _raise

    def __repr__(self):
        return f"<undefined {self.name}>"


class _NotInvariant(Exception):
    """A static variable the traced body changed: retry with it carried (internal)."""

    def __init__(self, index):
        super().__init__(index)
        self.index = index


def _err(lineno, what, fix, cause=None):
    msg = f"line {lineno}: {what}. Fix: {fix}."
    if cause is not None:
        msg += f" (cause: {type(cause).__name__}: {cause})"
    return AutographError(msg)


def is_traced(x) -> bool:
    """True for a tracer whose value is unknown (inside ``jit``).

    Examples
    --------
    >>> is_traced(1.0)
    False
    """
    return isinstance(x, Tracer) and x._trace.concrete_value_of(x._var) is NO_VALUE


def _has_tracer(v) -> bool:
    return any(is_traced(x) for x in tree_leaves(v))


def _same(a, b) -> bool:
    """Whether a static value came back unchanged from a traced body."""
    if a is b:
        return True
    if isinstance(a, Tracer) or isinstance(b, Tracer) or type(a) is not type(b):
        return False
    if isinstance(a, np.ndarray):
        return a.shape == b.shape and a.dtype == b.dtype and bool(np.array_equal(a, b))
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, (int, float, complex, bool, str, bytes, np.generic, type(None))):
        return bool(a == b)
    return False


def ld(scope: dict, names, lineno):
    """The current values of ``names`` (from ``locals()``), ``Undefined`` for unassigned ones.

    Examples
    --------
    >>> ld({"a": 1}, ("a", "b"), 3)
    (1, <undefined b>)
    """
    return tuple(scope[n] if n in scope else Undefined(n, lineno, "it is assigned only inside a converted "
                                                       f"statement at line {lineno} that did not assign it")
                 for n in names)


def _split_run(run, state, lineno):
    """``run(dyn)`` with ``dyn`` the indices of ``state`` carried as arrays, grown on _NotInvariant."""
    dyn = {i for i, v in enumerate(state) if _has_tracer(v)}
    while True:
        try:
            return run(frozenset(dyn))
        except _NotInvariant as e:
            if e.index in dyn:
                raise
            dyn.add(e.index)


def _wrapped(fn, state, dyn, ignore=frozenset()):
    """(to_full, check, finish): rebuild a full state from carried values (inside a compiled body);
    keep only carried outputs; the full state after the compiled statement.

    A carried NumPy-semantics array (an ``np.ndarray`` argument, ``np.zeros_like(x)``...) is a
    NumPy array inside the body too (a base of its own, so ``u[1:-1] = ...`` works there). When
    every traced body gave back that same array (it was only written in place, never rebound),
    the statement's result is written into the original array, so its views and aliases see it
    as in NumPy; a rebound one (``d = np.minimum(d, ...)``) becomes a new NumPy array.
    """
    idx = sorted(dyn)
    boxed = {}                  # position -> the NumPy array the current body trace got
    rebound, written = set(), set()

    bufs = [state[i]._np.buf for i in idx if _fstate.is_numpy(state[i])]
    if len({id(b) for b in bufs}) != len(bufs):
        # Two carried arrays are views of one base: separate carries would lose the aliasing.
        raise TypeError("two variables carried by the statement are views of the same NumPy array")

    def to_full(vals):
        full = list(state)
        boxed.clear()
        for j, i in enumerate(idx):
            v = vals[j]
            if _fstate.is_numpy(state[i]):
                v = boxed[i] = _fstate.new_base(v)
            elif isinstance(state[i], Ref):
                boxed[i] = v            # the body's Ref (the carry's leaves unflattened)
            full[i] = v
        return tuple(full)

    def check(out):
        for i, (o, s) in enumerate(zip(out, state)):
            if i not in dyn and i not in ignore and not _same(o, s):
                raise _NotInvariant(i)
        for i in idx:
            if i in boxed:
                if out[i] is not boxed[i]:
                    rebound.add(i)
                elif isinstance(out[i], Ref) or boxed[i]._np.buf.version:
                    written.add(i)
        return tuple(_fstate.plain(out[i]) for i in idx)

    def finish(vals):
        full = list(state)
        for j, i in enumerate(idx):
            v = vals[j]
            if isinstance(state[i], Ref) and i not in rebound:
                # A Ref only written through (never rebound) keeps its identity: the caller's
                # Ref, or the jit argument's buffer behind it, gets the loop's final value.
                state[i].store(v.get())
                v = state[i]
            elif _fstate.is_numpy(state[i]) and i not in rebound:
                if i in written:
                    _fstate.write(state[i], v)
                v = state[i]
            elif _fstate.is_numpy(state[i]):
                v = _fstate.new_base(v)
            full[i] = v
        return tuple(full)
    def guarded(run, *args):
        """``run(*args)`` (the lax statement) with the carried arrays' buffers unreadable: a view
        or alias of one read inside the body (not carried) would show the value before the
        statement, so the body fails to compile and the loop is unrolled instead."""
        args = tuple(tuple(_fstate.plain(a) for a in arg) if isinstance(arg, tuple) else arg for arg in args)
        saved = [(b, b.value, b.version) for b in bufs]
        for b in bufs:
            b.value, b.version = _Poison(), b.version + 1
        try:
            return run(*args)
        finally:
            for b, value, version in saved:
                b.value, b.version = value, version
    return to_full, check, finish, guarded


class _Poison:
    """The value of a carried NumPy array's buffer while its statement's body is traced."""

    def __getattr__(self, name):
        raise TypeError("a view or alias of a NumPy array carried by the statement is read inside its "
                        "compiled body")


def _scalar_int(x, what, lineno):
    if is_traced(x):
        if x.shape != () or x.dtype.kind not in "iu":
            raise _err(lineno, f"range() {what} is a traced {x.aval.str_short()}", "pass integer scalars")
        return x
    return operator.index(x)


# --------------------------------------------------------------------------- for loops

def for_range(rng, args, body, init, names, lineno, side):
    """``for i in range(*args)`` with ``state = body(i, state)``: a Python loop or a compiled one.

    Python while the bounds are static and the loop is short (at most ``STATIC_TRIP_MAX``
    iterations) or no carried variable is traced; otherwise one ``fori_loop`` (after running
    iterations in Python until the state is traced and every variable has a value). A body
    that cannot be compiled (shapes depend on ``i``) is unrolled up to ``UNROLL_CAP`` iterations.

    Examples
    --------
    >>> for_range(range, (1, 4), lambda i, s: (s[0] * i,), (1,), ("p",), 1, None)
    (6,)
    """
    if rng is not builtins.range:       # the user's own ``range``: not ours to change
        state = init
        for i in rng(*args):
            state = body(i, state)
        return state
    if len(args) == 1:
        start, stop, step = 0, args[0], 1
    else:
        start, stop, step = (tuple(args) + (1,))[:3]
    if any(is_traced(a) for a in (start, stop, step)):
        if is_traced(step):
            raise _err(lineno, "range() with a traced step cannot be compiled", "make the step a Python int")
        start, stop = _scalar_int(start, "start", lineno), _scalar_int(stop, "stop", lineno)
        if side:
            raise _err(lineno, f"the loop has traced bounds but its body has {side[0]} (line {side[1]}), "
                       "a Python side effect a compiled loop would run once", "return values instead of "
                       "mutating Python objects, or make the bounds static")
        step = operator.index(step)
        if step == 0:
            raise ValueError("range() arg 3 must not be zero")
        span = stop - start if step > 0 else start - stop
        n = jnp.maximum((span + abs(step) - 1) // abs(step), 0)
        try:
            init = _define(lambda st: body(start, st), init, names, lineno, "loop")
            return _compiled_range(start, step, 0, n, body, init, lineno, _traced_range(start, stop, step))
        except AutographError:
            raise
        except (TypeError, ValueError) as e:
            raise _err(lineno, "the loop has traced bounds, so it must compile to lax.fori_loop, and its body "
                       "could not be compiled", "keep every carried variable's shape and dtype fixed across "
                       "iterations and assign each one before the loop", e) from e
    r = range(start, stop, step)
    return _static_loop(len(r), r.__getitem__, body, init, lineno, side,
                        lambda k, state: _compiled_range(start, step, k, len(r), body, state, lineno,
                                                         (min(r[k], r[-1]), max(r[k], r[-1]))))


def _traced_range(start, stop, step):
    """The static range [lo, hi] of ``range(start, stop, step)``'s values when its bounds are
    ints or loop indices (``for j in range(i)``), else None."""
    lo_start, lo_stop = _masked.interval_of(start), _masked.interval_of(stop)
    if lo_start is None or lo_stop is None:
        return None
    if step > 0:
        return lo_start[0], lo_stop[1] - 1
    return lo_stop[0] + 1, lo_start[1]


def _compiled_range(start, step, k0, n, body, state, lineno, span=None):
    """``fori_loop`` over k in [k0, n) with ``body(start + k * step, state)``; ``span``: the
    static range of the index's values, which makes the index an affine index (slices whose
    length depends on it become masked windows, see :mod:`tracejit.autograph.masked`)."""
    def index(k):
        i = start + k * step
        if span is None or not MASKED_SLICES or not isinstance(i, Tracer):
            return i
        return _masked.loop_index(i, *span)

    def run(dyn):
        to_full, check, finish, guarded = _wrapped(body, state, dyn)
        out = guarded(lax.fori_loop, k0, n, lambda k, c: check(body(index(k), to_full(c))),
                      tuple(state[i] for i in sorted(dyn)))
        return finish(out)
    return _split_run(run, state, lineno)


def for_iter(iterable, body, init, names, lineno, side):
    """``for x in iterable`` with ``state = body(x, state)``: compiled (``lax.scan`` over the leading
    axis) only when ``iterable`` is a traced array longer than ``STATIC_TRIP_MAX``.

    Lists, tuples, dicts, NumPy arrays and every other Python iterable run as Python.

    Examples
    --------
    >>> for_iter([1, 2, 3], lambda x, s: (s[0] + x,), (0,), ("t",), 1, None)
    (6,)
    """
    if not is_traced(iterable):
        state = init
        for x in iterable:
            state = body(x, state)
        return state
    n = len(iterable)

    def compiled(k, state):
        def run(dyn):
            to_full, check, finish, guarded = _wrapped(body, state, dyn)
            out, _ = guarded(lax.scan, lambda c, x: (check(body(x, to_full(c))), None),
                             tuple(state[i] for i in sorted(dyn)), iterable[k:])
            return finish(out)
        return _split_run(run, state, lineno)
    return _static_loop(n, iterable.__getitem__, body, init, lineno, side, compiled)


def _static_loop(n, item, body, state, lineno, side, compiled):
    if n <= STATIC_TRIP_MAX or side:
        for k in range(n):
            state = body(item(k), state)
        return state
    k = 0
    # Python iterations until the state is traced and fully defined: the first traced
    # iteration fixes the carried types (a Python 0 becomes the body's float32...).
    while k < n and (not _has_tracer(state) or any(isinstance(v, Undefined) for v in state)):
        state = body(item(k), state)
        k += 1
    if k == n:
        return state
    try:
        return compiled(k, state)
    except AutographError:
        raise
    except Exception as e:
        if n > UNROLL_CAP:
            raise _err(lineno, f"the loop body cannot be compiled as one loop body (its shapes or Python "
                       f"values depend on the iteration), and its {n} iterations exceed the unrolling cap "
                       f"tracejit.autograph.runtime.UNROLL_CAP={UNROLL_CAP}",
                       "keep shapes fixed across iterations (lax.fori_loop with a mask, "
                       "lax.dynamic_slice with a fixed size, jnp.where), or raise the cap", e) from e
    for j in range(k, n):           # unroll the rest in Python: the body is traced per iteration
        state = body(item(j), state)
    return state


# --------------------------------------------------------------------------- while loops

def while_stmt(cond, body, init, names, lineno, side):
    """``while cond(state): state = body(state)``: Python while the condition is a Python value,
    one ``lax.while_loop`` from the first iteration whose condition is traced.

    Examples
    --------
    >>> while_stmt(lambda s: s[0] < 10, lambda s: (s[0] * 2,), (1,), ("x",), 1, None)
    (16,)
    """
    state = init
    while True:
        c = cond(state)
        if not is_traced(c):
            if not c:
                return state
            state = body(state)
            continue
        if side:
            raise _err(lineno, f"the while condition is traced but the body has {side[0]} (line {side[1]}), "
                       "a Python side effect a compiled loop would run once", "return values instead of "
                       "mutating Python objects")
        return _compiled_while(cond, body, state, names, lineno)


def _define(run_body, state, names, lineno, what):
    """``state`` with its ``Undefined`` variables (first assigned in a loop body with a traced trip
    count) given zeros of the type the body gives them (traced once, thrown away): their value
    is unused if no iteration runs."""
    undefined = [i for i, v in enumerate(state) if isinstance(v, Undefined)]
    if not undefined:
        return state

    traced = [i for i, v in enumerate(state) if isinstance(v, Tracer)]

    def probe(*args):
        # The state's arrays are inputs of the probe (NumPy arrays stay writable NumPy arrays).
        st = list(state)
        for i, a in zip(traced, args):
            st[i] = _fstate.new_base(a) if _fstate.is_numpy(state[i]) else a
        out = run_body(tuple(st))
        return [jnp.asarray(_fstate.plain(out[i])) for i in undefined]
    try:
        avals = trace_flat(probe, [state[i].aval for i in traced], "autograph probe").out_avals
    except (TypeError, ValueError) as e:
        raise _err(lineno, f"variables {[names[i] for i in undefined]} are assigned in the {what} "
                   "but have no value before it", "assign them before the loop", e) from e
    state = list(state)
    for i, a in zip(undefined, avals):
        state[i] = jnp.zeros(a.shape, a.dtype)
    return tuple(state)


def _compiled_while(cond, body, state, names, lineno):
    state = _define(body, state, names, lineno, "while loop")

    def run(dyn):
        to_full, check, finish, guarded = _wrapped(body, state, dyn)
        c_fn = lambda c: _as_pred(cond(to_full(c)), lineno)
        out = guarded(lax.while_loop, c_fn, lambda c: check(body(to_full(c))),
                      tuple(state[i] for i in sorted(dyn)))
        return finish(out)
    try:
        return _split_run(run, state, lineno)
    except AutographError:
        raise
    except (TypeError, ValueError) as e:     # a user's own error (NameError...) propagates as is
        raise _err(lineno, "the while loop has a traced condition, so it must compile to lax.while_loop, "
                   "and its body could not be compiled", "keep every carried variable's shape and dtype fixed "
                   "across iterations (cast with .astype, pad to a fixed size)", e) from e


def _as_pred(p, lineno):
    p = jnp.asarray(p)
    if p.shape != ():
        raise _err(lineno, f"the condition is a traced array of shape {p.shape}, not a scalar",
                   "reduce it with .any() or .all()")
    return p if p.dtype == np.bool_ else p != 0


# --------------------------------------------------------------------------- if

def if_stmt(pred, then, orelse, init, names, lineno, side, both=()):
    """``if pred: state = then(state) else: state = orelse(state)``: a Python ``if`` for a Python
    predicate, ``lax.cond`` (both branches traced) for a traced one.

    ``both``: indices of the variables both branches assign; a variable with no value before
    the ``if`` that only one branch assigns has no value after a traced one.

    Examples
    --------
    >>> if_stmt(True, lambda s: (1,), lambda s: (2,), (0,), ("y",), 1, None)
    (1,)
    """
    if not is_traced(pred):
        return then(init) if pred else orelse(init)
    if side:
        raise _err(lineno, f"the if has a traced predicate but a branch has {side[0]} (line {side[1]}), "
                   "a Python side effect that lax.cond would run for both branches",
                   "compute values in the branches and apply the side effect after the if")
    p = _as_pred(pred, lineno)
    undefined = {i for i, v in enumerate(init) if isinstance(v, Undefined)}
    dropped = undefined - set(both)
    if dropped:
        raise _err(lineno, f"variables {sorted(names[i] for i in dropped)} are assigned in only one branch of "
                   "this if, whose predicate is traced, and have no value before it (lax.cond needs a value "
                   "from both branches)", "assign them before the if (or in both branches)")
    state = tuple(None if i in undefined else v for i, v in enumerate(init))

    def run(dyn):
        dyn = dyn | (undefined - dropped)
        to_full, check, finish, guarded = _wrapped(None, state, dyn, ignore=dropped)

        def branch(fn):
            def f(*vals):
                full = to_full(vals)
                return check(fn(tuple(init[i] if i in undefined else v for i, v in enumerate(full))))
            return f
        return finish(guarded(lambda *ops: lax.cond(p, branch(then), branch(orelse), *ops),
                              *[_fstate.plain(state[i]) for i in sorted(dyn)]))
    try:
        out = _split_run(run, state, lineno)
    except (AutographError, _NotInvariant):
        raise
    except (TypeError, ValueError) as e:     # a user's own error (NameError...) propagates as is
        raise _err(lineno, "the if has a traced predicate, so it must compile to lax.cond, and its branches "
                   f"could not be compiled (variables {list(names)})", "give every variable the same shape "
                   "and dtype in both branches, or use jnp.where", e) from e
    return tuple(Undefined(names[i], lineno, f"it is assigned in only one branch of the if at line {lineno}, "
                           "whose predicate is traced; assign it before the if")
                 if i in dropped else v for i, v in enumerate(out))


def range_params(rng, args, lineno):
    """``(start, step, trip count)`` of ``range(*args)``, the count traced when a bound is.

    Examples
    --------
    >>> range_params(range, (2, 9, 3), 1)
    (2, 3, 3)
    """
    if rng is not builtins.range:
        raise _err(lineno, "a loop over a user-defined `range` with `break` cannot be converted",
                   "rename the function, or set autograph=False")
    start, stop, step = (0, args[0], 1) if len(args) == 1 else (tuple(args) + (1,))[:3]
    step = operator.index(step)
    if not (is_traced(start) or is_traced(stop)):
        return start, step, len(range(start, stop, step))
    start, stop = _scalar_int(start, "start", lineno), _scalar_int(stop, "stop", lineno)
    span = stop - start if step > 0 else start - stop
    return start, step, jnp.maximum((span + abs(step) - 1) // abs(step), 0)


def static_test(value, lineno, reason):
    """The test of a loop or ``if`` autograph left as Python: unchanged, or a clear error if traced.

    Examples
    --------
    >>> static_test(3, 1, "`return`")
    3
    """
    if is_traced(value):
        try:
            bool(value)
        except TypeError as e:
            # Keep the tracer's own error type (code catches ConcretizationTypeError), with why
            # autograph left this statement as Python.
            note = (f"\n\nautograph (line {lineno}): this statement contains {reason[0]} (line {reason[1]}), "
                    "which cannot be converted to lax control flow. Fix: assign results to variables and "
                    "return after the statement, or use lax.cond / lax.while_loop / jnp.where directly.")
            raise type(e)(f"{e}{note}") from None
    return value


# --------------------------------------------------------------------------- boolean operators

def and_(a, b):
    """Python's ``a() and b()``; ``logical_and`` once either side is traced.

    Examples
    --------
    >>> and_(lambda: 0, lambda: 1)
    0
    """
    x = a()
    if is_traced(x):
        return jnp.logical_and(x, b())
    if not x:
        return x
    return b()


def or_(a, b):
    """Python's ``a() or b()``; ``logical_or`` once either side is traced.

    Examples
    --------
    >>> or_(lambda: 0, lambda: 2)
    2
    """
    x = a()
    if is_traced(x):
        return jnp.logical_or(x, b())
    if x:
        return x
    return b()


def not_(x):
    """Python's ``not x``; ``logical_not`` for a traced ``x``.

    Examples
    --------
    >>> not_(0)
    True
    """
    return jnp.logical_not(x) if is_traced(x) else not x


# --------------------------------------------------------------------------- builtins on traced scalars

def _scalar_tracers(args):
    return any(is_traced(a) for a in args) and all(np.ndim(a) == 0 for a in args)


def _fold(args, better):
    cur = args[0]
    for x in args[1:]:
        # Python keeps the first of equal values and replaces only when the new one is strictly
        # better, which also decides NaN: max(nan, 1) is nan, max(1, nan) is 1.
        cur = jnp.where(better(x, cur), x, cur)
    return cur


def py_max(*args, **kwargs):
    """Python's ``max``; on traced scalars (``max(a, b)``), a ``where`` with Python's tie and NaN rule.

    Examples
    --------
    >>> py_max(1, 3, 2)
    3
    """
    if len(args) >= 2 and not kwargs and _scalar_tracers(args):
        return _fold(args, operator.gt)
    return builtins.max(*args, **kwargs)


def py_min(*args, **kwargs):
    """Python's ``min``; on traced scalars, a ``where`` with Python's tie and NaN rule.

    Examples
    --------
    >>> py_min(1, 3, 2)
    1
    """
    if len(args) >= 2 and not kwargs and _scalar_tracers(args):
        return _fold(args, operator.lt)
    return builtins.min(*args, **kwargs)


def py_int(*args, **kwargs):
    """Python's ``int``; a traced scalar becomes a traced int64 (truncated toward zero, as ``int``).

    Examples
    --------
    >>> py_int(2.7), py_int("12")
    (2, 12)
    """
    if len(args) == 1 and not kwargs and is_traced(args[0]) and np.ndim(args[0]) == 0:
        return jnp.asarray(args[0]).astype(np.int64)
    return builtins.int(*args, **kwargs)


def py_float(*args, **kwargs):
    """Python's ``float``; a traced scalar becomes a traced float64.

    Examples
    --------
    >>> py_float(2)
    2.0
    """
    if len(args) == 1 and not kwargs and is_traced(args[0]) and np.ndim(args[0]) == 0:
        return jnp.asarray(args[0]).astype(np.float64)
    return builtins.float(*args, **kwargs)


# --------------------------------------------------------------------------- arrays made by np.zeros(...)

def new_array(value, kind):
    """``a = np.zeros(...)`` (any NumPy creation function) for an ``a`` the function writes in place:
    under a trace, a traced NumPy array (mutable, NumPy semantics) with the same contents, so that
    traced values can be written into it; otherwise ``value`` itself.

    An ``np.empty`` array is given zeros (its contents are undefined in NumPy).

    Examples
    --------
    >>> new_array(np.zeros(2), "zeros")
    array([0., 0.])
    """
    if type(value) is not np.ndarray:
        return value
    trace = current_trace()
    if not hasattr(trace, "to_atom"):
        return value
    if kind in ("empty", "empty_like") or (value.size and not value.any()):
        traced = jnp.zeros(value.shape, value.dtype)
    elif value.size and (value == value.reshape(-1)[0]).all():
        traced = jnp.full(value.shape, value.reshape(-1)[0], value.dtype)
    else:
        traced = _fstate.lift(value, trace)
    if not isinstance(traced, Tracer):
        traced = _fstate.lift(np.asarray(traced), trace)
    return _fstate.new_base(traced)
