"""NumPy-semantics traced arrays: buffers, views and functionalized writes.

A NumPy-semantics tracer (``tracer._np is not None``) has an :class:`NpState`: the
:class:`Buffer` it aliases (the base array: its current value, a plain JAX-semantics tracer,
and a version counter bumped by every write) and the chain of view operations that derive
this array from the base (``()`` for the base itself). Writing an array computes its new
value, pushes it back through the inverse of each view operation to a new base value, and
bumps the version; every other tracer of the same buffer re-derives its value the next time
it is read (``Tracer._var`` calls :meth:`NpState.sync`). This is torch's functionalization:
the program stays pure, the Python objects behave like NumPy's aliasing arrays.

View operations: ``("index", idx)`` (basic indexing), ``("transpose", axes)``,
``("reshape", shape)``, and ``("fn", f)`` -- a view NumPy returns that is derived by ``f``
but cannot be written through here (writing it raises).

Memory layout: NumPy decides whether ``reshape`` returns a view from the strides. Each state
carries a *probe*, a zero-byte-backed ``as_strided`` array with the strides this array would
have (in elements) if its base were C-contiguous; view operations are applied to the probe too,
and ``probe.reshape(shape, copy=False)`` answers the question without reading memory.
"""
from __future__ import annotations

import threading

import weakref

import numpy as np

from tracejit.core.trace import current_trace, set_current_trace
from tracejit.core.tracer import Tracer
from tracejit import numpy as jnp
# (a NumPy array made under a trace must still be a traced, writable array: eager autodiff computes
# np.zeros_like(t) at once)
from tracejit.ops.operands import lift  # noqa: F401

# trace -> Session of the jit trace that boxed NumPy arguments (see tracejit.functionalize.args).
SESSIONS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


class Buffer:
    """One NumPy base array: its current value (a plain tracer) and a write counter."""

    __slots__ = ("value", "version", "arg", "reshaped", "__weakref__")

    def __init__(self, value, arg=None):
        self.value = value
        self.version = 0
        self.arg = arg            # the argument position, for a jitted function's np.ndarray argument
        self.reshaped = False     # a reshape view was made of it (its aliasing depends on layout)


def _probe(shape):
    # Strides in elements (itemsize 1) over a one-byte buffer: never read, only its metadata.
    strides = [0] * len(shape)
    acc = 1
    for i in range(len(shape) - 1, -1, -1):
        strides[i] = acc
        acc *= max(shape[i], 1)
    return np.lib.stride_tricks.as_strided(np.zeros(1, np.int8), shape, strides, writeable=False)


class NpState:
    """What makes a tracer a NumPy array: the buffer it aliases and how it is derived from it."""

    __slots__ = ("buf", "chain", "seen", "probe", "readonly")

    def __init__(self, buf, chain, probe, readonly=False):
        self.buf = buf
        self.chain = chain
        self.seen = buf.version
        self.probe = probe
        self.readonly = readonly

    def sync(self, tracer):
        """Re-derive ``tracer``'s value if its buffer was written since it was last derived."""
        if self.seen == self.buf.version:
            return
        self.seen = self.buf.version   # first: the derivation reads the base, not this tracer
        value = self.buf.value
        if self.chain:
            with set_current_trace(tracer._trace):
                for op in self.chain:
                    value = apply_view(op, value)
        tracer._v = value._v
        tracer.aval = value.aval


def plain(t):
    """A JAX-semantics tracer with ``t``'s current value (``t`` itself if it is one)."""
    if isinstance(t, Tracer) and t._np is not None:
        return Tracer(t._trace, t.aval, t._var)
    return t


def is_numpy(x) -> bool:
    return isinstance(x, Tracer) and x._np is not None


def new_base(value, arg=None):
    """A new NumPy base array (a copy, as far as aliasing goes) holding ``value``."""
    value = plain(value)
    buf = Buffer(value, arg)
    return Tracer(value._trace, value.aval, value._v, NpState(buf, (), _probe(value.shape)))


def as_numpy_results(out, trace=None):
    """``out`` (a tracer, or a tuple/list of them) as new NumPy base arrays; with ``trace``,
    constant arrays among them become tracers of it first."""
    def one(o):
        if trace is not None and isinstance(o, np.ndarray) and hasattr(trace, "to_atom"):
            o = lift(o, trace)
        return new_base(o) if isinstance(o, Tracer) else o
    if isinstance(out, (tuple, list)):
        return type(out)(one(o) for o in out)
    return one(out)


# ----------------------------------------------------------------------------- view operations
def apply_view(op, value):
    kind, arg = op
    if kind == "index":
        return value[arg]
    if kind == "transpose":
        return jnp.transpose(value, arg)
    if kind == "reshape":
        return jnp.reshape(value, arg)
    if kind == "ambiguous":
        raise NotImplementedError(
            "this array was made by a reshape/ravel with order other than 'C', which NumPy makes a "
            "view or a copy depending on memory layout, and the array it came from was written "
            "since: its value is ambiguous under jit. Take an explicit .copy() of the reshaped array.")
    return arg(value)


def _invert(op, prev, new):
    """The new value of ``prev`` after its view ``op(prev)`` became ``new``."""
    kind, arg = op
    if kind == "index":
        return prev.at[arg].set(new)
    if kind == "transpose":
        return jnp.transpose(new, tuple(int(i) for i in np.argsort(arg)))
    if kind == "reshape":
        return jnp.reshape(new, prev.shape)
    raise NotImplementedError(
        "writing into this array is not supported under jit: it is a view NumPy returns "
        f"({getattr(arg, '__name__', 'a view function')}) that tracejit can read but not write "
        "through. Write into the original array instead, or take a .copy() first.")


def _probe_index(probe, idx):
    # Traced integers select one element: which one does not change the strides.
    if isinstance(idx, tuple):
        idx = tuple(0 if isinstance(i, Tracer) else i for i in idx)
    elif isinstance(idx, Tracer):
        idx = 0
    return probe[idx]


def make_view(src, kind, arg, value):
    """The view ``kind(arg)`` of NumPy array ``src``, whose value is ``value`` (a plain tracer),
    or a new base (a copy) where NumPy's ``reshape`` would copy."""
    state = src._np
    if kind == "index":
        probe = _probe_index(state.probe, arg)
    elif kind == "transpose":
        probe = state.probe.transpose(arg)
    elif kind == "reshape":
        state.buf.reshaped = True
        try:
            probe = state.probe.reshape(arg, copy=False)
        except ValueError:        # NumPy copies: the result aliases nothing
            return new_base(value)
    else:
        probe = state.probe
    view = NpState(state.buf, state.chain + ((kind, arg),), probe, readonly=state.readonly)
    view.seen = state.buf.version
    value = plain(value)
    return Tracer(value._trace, value.aval, value._v, view)


def make_fn_view(src, fn, value, readonly=False, ambiguous=False, probe_fn=None):
    """A view NumPy returns (``np.flip``, ``np.diagonal``...) that re-derives from its base
    after writes but cannot be written through. ``ambiguous``: NumPy returns a view or a copy
    depending on memory layout; reading it after its base was written raises. ``probe_fn``: the
    NumPy function making the view, applied to the base's probe so the view's probe has the view's
    shape and strides (later views of it -- ``np.broadcast_to(w, s).T`` -- are checked on it)."""
    state = src._np
    op = ("ambiguous", None) if ambiguous else ("fn", fn)
    probe = state.probe
    if probe_fn is not None:
        try:
            probe = probe_fn(state.probe)
        except (TypeError, ValueError):
            probe = None
    if probe is None or np.shape(probe) != tuple(value.shape):
        # The view's layout is unknown: a reshape of it would be a view or a copy depending on it.
        op, probe = ("ambiguous", None), np.empty(tuple(value.shape), np.int8)
    view = NpState(state.buf, state.chain + (op,), probe, readonly=readonly or state.readonly)
    value = plain(value)
    return Tracer(value._trace, value.aval, value._v, view)


# ------------------------------------------------------------------------------------- writes
def check_writable(t, what="in-place update"):
    if t._np.readonly:
        raise ValueError("assignment destination is read-only")
    # The view's own trace, and its base's: a view made inside a loop body of an array from the
    # enclosing function (``t = A[:, i]; t *= 2``) belongs to the body, its buffer does not.
    if current_trace() is not t._trace or getattr(t._np.buf.value, "_trace", t._trace) is not t._trace:
        raise NotImplementedError(
            f"{what} of a NumPy array created outside the function being traced (inside a lax "
            "control-flow body, a vmap/grad-transformed function or a nested jit with "
            "inline=False, of an array from the enclosing function): the update cannot leave that "
            "function. Pass the array in and return its new value instead.")


_writes = threading.local()


def writes() -> int:
    """In-place writes made by this thread so far: a trace that made none traced the same program
    whichever semantics its arguments had (``tracejit.api`` then shares one compiled entry)."""
    return getattr(_writes, "count", 0)


def write(t, new):
    """Replace the whole value of NumPy array ``t`` by ``new`` (same shape and dtype): the base
    and every alias see it."""
    _writes.count = writes() + 1
    check_writable(t)
    state = t._np
    new = plain(new)
    if not isinstance(new, Tracer) or new.dtype != t.dtype:
        new = jnp.asarray(new).astype(t.dtype)
    if new.shape != t.shape:
        new = jnp.broadcast_to(new, t.shape)
    if not isinstance(new, Tracer):
        # A constant (``x.fill(0)``; computed at once under eager autodiff): make it a value of
        # t's trace, so that the buffer always holds a tracer.
        new = plain(t).at[...].set(new)
    buf = state.buf
    if state.chain:
        values = [buf.value]
        for op in state.chain[:-1]:
            values.append(apply_view(op, values[-1]))
        cur = new
        for op, prev in zip(reversed(state.chain), reversed(values)):
            cur = _invert(op, prev, cur)
        base = cur
    else:
        base = new
    if buf.reshaped:
        session = SESSIONS.get(t._trace)
        if session is not None:
            session.layout_sensitive = True
    buf.value = base
    buf.version += 1
    t._v = new._v
    t.aval = new.aval
    state.seen = buf.version


def assign(t, value, what="assignment"):
    """``t[...] = value``: NumPy's casting (unsafe, as ``ndarray.__setitem__``) and broadcasting."""
    check_writable(t, what)
    value = plain(value)
    v = jnp.asarray(value, dtype=t.dtype) if not isinstance(value, Tracer) else value.astype(t.dtype)
    if v.shape != t.shape:
        try:
            np.broadcast_shapes(v.shape, t.shape)
            if np.broadcast_shapes(v.shape, t.shape) != t.shape:
                raise ValueError
        except ValueError:
            raise ValueError(f"could not broadcast input array from shape {v.shape} into shape {t.shape}") from None
        v = jnp.broadcast_to(v, t.shape)
    write(t, v)
