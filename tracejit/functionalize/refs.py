"""Mutable array references (``jax.new_ref``, ``jax.Ref``, ``jax.freeze``; public as ``tracejit.ref``).

A :class:`Ref` holds an array that ``ref[idx] = v`` (and ``ref[idx] += v``) change in place;
``ref[idx]`` reads a snapshot. How it works at each level:

- **Eagerly** the Ref owns a NumPy buffer, written in place.
- **Passed to a jitted function** a Ref is a pytree node whose leaf is that buffer: inside the
  trace it follows NumPy's in-place semantics (``tracejit/functionalize``), so the compiled program
  returns the final value and the call writes it back into the buffer (as for a mutated NumPy
  argument, docs/inplace.md). It compiles once per shape and dtype.
- **Made inside a traced function** (``jit``, ``grad``, ``vmap``, loop bodies) a Ref holds the
  current traced value; a write replaces it with ``value.at[idx].set(v)``, so every transformation
  (derivatives included) sees an ordinary functional program.

A Ref made outside ``jit`` and closed over by the jitted function (instead of passed to it) raises
a TypeError: the compiled program would keep the value it had when traced. Under eager ``grad`` a
closed-over Ref may be read and written with values not being differentiated. Autograph's compiled
loops carry a Ref written in the loop and store the final value into it (``store``).
"""
from __future__ import annotations

import numpy as np

from tracejit.array import as_array_result
from tracejit.core.avals import ShapedArray
from tracejit.core.pytree import register_pytree_node
from tracejit.core.trace import EVAL_TRACE, current_trace, is_concrete_context
from tracejit.core.tracer import Tracer
from tracejit.core.values import get_aval
from tracejit.functionalize import state
from tracejit.transforms.vjp_accumulators import REF_ACCUMULATORS
from tracejit.numpy import array, asarray, dynamic_slices


class AbstractRef:
    """The abstract value of a :class:`Ref`: the ``inner_aval`` of the array it holds.

    Examples
    --------
    >>> AbstractRef(ShapedArray((3,), np.float32))
    AbstractRef(ShapedArray(f32[3]))
    """

    def __init__(self, inner_aval, memory_space=None, kind=None):
        self.inner_aval, self.memory_space, self.kind = inner_aval, memory_space, kind

    shape = property(lambda self: self.inner_aval.shape)
    dtype = property(lambda self: self.inner_aval.dtype)
    ndim = property(lambda self: len(self.inner_aval.shape))

    def __repr__(self):
        return f"AbstractRef({self.inner_aval!r})"

    def __eq__(self, other):
        return isinstance(other, AbstractRef) and other.inner_aval == self.inner_aval

    def __hash__(self):
        return hash(("AbstractRef", self.inner_aval))


class Ref:
    """A mutable array reference (``jax.Ref``); make one with :func:`new_ref`.

    Examples
    --------
    >>> import numpy as np
    >>> r = new_ref(np.zeros(3))
    >>> r[1] += 2.0
    >>> r
    Ref([0., 2., 0.], dtype=float64)
    >>> r[1:]
    Array([2., 0.])
    """

    __slots__ = ("_value", "_buffer", "_trace", "_dead", "_detached", "kind")

    def __init__(self, value, kind=None, detached=False):
        self._value = value
        # The leaf of a Ref passed into vmap/grad (not jit): writes could not reach the caller's Ref.
        self._detached = detached
        self._trace = current_trace()
        # A NumPy buffer written in place (a Ref made eagerly), else a value replaced functionally
        # on each write (made inside a trace) or written with NumPy semantics (a jit argument's).
        self._buffer = self._trace is EVAL_TRACE and isinstance(value, np.ndarray)
        self._dead = None
        self.kind = kind

    # ------------------------------------------------------------------ what it holds
    def _live(self):
        if self._dead:
            raise ValueError(f"this Ref was {self._dead} and cannot be used any more")
        if self._buffer and not is_concrete_context(current_trace()):
            raise TypeError(
                "a Ref made outside jit (or vmap, or a lax loop body) is read or written inside it "
                "as a closed-over value: the compiled program would keep the value it had when traced. "
                "Pass the Ref as an argument of the jitted function (its buffer is then written back "
                "after each call), or make the Ref inside the function.")
        return self._value

    @property
    def aval(self):
        return AbstractRef(get_aval(self._value).strip_weak())

    shape = property(lambda self: tuple(np.shape(self._value)))
    dtype = property(lambda self: get_aval(self._value).dtype)
    ndim = property(lambda self: len(np.shape(self._value)))
    size = property(lambda self: int(np.prod(np.shape(self._value), dtype=np.int64)))

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of unsized Ref")
        return self.shape[0]

    # ------------------------------------------------------------------ reads and writes
    def __getitem__(self, idx):
        v = self._live()
        if dynamic_slices.has_dynamic_slice(idx):
            return asarray(state.plain(v))[idx]
        if self._buffer:
            return as_array_result(np.array(v[idx]))
        if isinstance(v, Tracer) and v._np is not None:
            return array(v[idx])       # (a NumPy-semantics index would be a view that aliases)
        return asarray(v)[idx]

    def __setitem__(self, idx, value):
        v = self._live()
        if dynamic_slices.has_dynamic_slice(idx):
            # A Ref write through jax.ds: the read's clamped window, written back (JAX's Ref semantics).
            current = asarray(state.plain(v))
            new = dynamic_slices.update(current, idx, lambda w, rest: asarray(w).at[rest].set(value), clamp=True)
            idx, value = ..., new
        if self._buffer:
            if isinstance(value, Tracer):
                raise TypeError("a traced value (being differentiated or batched) cannot be written into a Ref "
                                "made outside the transformation; make the Ref inside the function")
            v[idx] = np.asarray(value)
        elif isinstance(v, Tracer) and v._np is not None:
            v[idx] = value                        # functionalized in-place write, written back by jit
        else:
            if self._detached:
                raise NotImplementedError(
                    "writing a Ref passed as an argument to vmap, grad or another transformation other than "
                    "jit: the write could not reach the caller's Ref. Pass the Ref to a jitted function, or "
                    "return the new value and write it outside the transformation.")
            if current_trace() is not self._trace:
                raise NotImplementedError(
                    "writing a Ref inside a lax control-flow body, a vmap/grad-transformed function or a "
                    "nested jit, when the Ref was made outside it: the update cannot leave that function. "
                    "Carry the value through the loop (or return it) and write the Ref outside, or pass "
                    "the Ref to a nested jit as an argument.")
            self._value = asarray(v).at[idx].set(value)

    def store(self, value):
        """Replace the whole value (after a compiled loop that carried this Ref): a jit argument's
        NumPy-semantics buffer is written (so the caller's Ref gets it back), else rebound."""
        v = self._live()
        if isinstance(v, Tracer) and v._np is not None:
            state.write(v, state.plain(value))
        elif self._buffer:
            v[...] = np.asarray(value)
        else:
            self._value = value

    def get(self, idx=...):
        """``ref[idx]``."""
        return self[idx]

    def set(self, value, idx=...):
        """``ref[idx] = value``."""
        self[idx] = value

    def swap(self, value, idx=...):
        """``ref[idx] = value``, returning the previous ``ref[idx]``."""
        old = self[idx]
        self[idx] = value
        return old

    def addupdate(self, x, idx=...):
        """``ref[idx] += x``."""
        self[idx] = self[idx] + x

    def __repr__(self):
        if self._dead:
            return f"Ref(<{self._dead}>)"
        v = self._value
        if isinstance(v, Tracer):
            return f"Ref({get_aval(v)})"
        body = np.array2string(np.asarray(v), separator=", ", prefix="Ref(")
        return f"Ref({body}, dtype={np.asarray(v).dtype.name})"


def _flatten(ref):
    v = ref._live()
    trace = current_trace()
    if not ref._buffer and not (isinstance(v, Tracer) and v._np is not None) and trace is not EVAL_TRACE:
        # Flattened inside a trace (passed to a nested jit): as a NumPy-semantics array, so the
        # nested call's writes come back into it (functionalize/args.py write_back).
        if not isinstance(v, Tracer) and hasattr(trace, "to_atom"):
            v = state.lift(v, trace)
        if isinstance(v, Tracer):
            v = ref._value = state.new_base(v)
    return [v], (ref.kind, ref._buffer)


def _unflatten(aux, children):
    kind, from_buffer = aux
    v = children[0]
    if current_trace() is EVAL_TRACE and not isinstance(v, Tracer):
        v = np.array(v)           # a Ref rebuilt eagerly (tree_map over Refs) owns a writable buffer
    # A caller's Ref whose leaf arrives as a JAX-semantics value: a vmap/grad argument (jit makes
    # NumPy-argument leaves NumPy-semantics arrays, whose writes come back).
    detached = from_buffer and isinstance(v, Tracer) and v._np is None
    return Ref(v, kind, detached)


register_pytree_node(Ref, _flatten, _unflatten)
# vjp(...).with_refs(ref, ...) adds an input's cotangent into a Ref (transforms/vjp_accumulators.py).
REF_ACCUMULATORS.append((lambda x: isinstance(x, Ref), lambda ref: ref.aval.inner_aval,
                         lambda ref, ct: ref.addupdate(ct)))


def new_ref(init_val, *, memory_space=None, kind=None) -> Ref:
    """A mutable array reference holding a copy of ``init_val`` (``jax.new_ref``).

    Parameters
    ----------
    init_val : array_like
        The initial value (copied).
    memory_space, kind
        Accepted for JAX compatibility; there is one memory space here, and ``kind`` only
        labels the Ref.

    Examples
    --------
    >>> import numpy as np, tracejit
    >>> r = new_ref(np.arange(3.0))
    >>> def step(r):
    ...     r[0] += 10.0
    >>> _ = tracejit.jit(step)(r); _ = tracejit.jit(step)(r)
    >>> r
    Ref([20.,  1.,  2.], dtype=float64)
    """
    value = array(init_val)
    return Ref(np.array(value) if current_trace() is EVAL_TRACE else value, kind)


def empty_ref(ty, *, memory_space=None) -> Ref:
    """A Ref of ``ty``'s shape and dtype (a ShapeDtypeStruct, ShapedArray or array); its
    contents are zeros (never uninitialized memory).

    Examples
    --------
    >>> empty_ref(ShapedArray((2,), np.int32))
    Ref([0, 0], dtype=int32)
    """
    aval = ty.inner_aval if isinstance(ty, AbstractRef) else ty
    return new_ref(np.zeros(tuple(aval.shape), np.dtype(aval.dtype)))


def freeze(ref: Ref):
    """The final value of ``ref``, which can no longer be used (``jax.freeze``).

    Examples
    --------
    >>> import numpy as np
    >>> r = new_ref(np.ones(2)); r[0] = 3.0
    >>> freeze(r)
    Array([3., 1.])
    """
    value = get(ref)
    ref._dead = "frozen"
    return value


def free_ref(ref: Ref) -> None:
    """Release ``ref``; using it afterwards raises (``jax.free_ref``)."""
    ref._live()
    ref._dead = "freed"
    ref._value = None


def get(ref: Ref, idx=None):
    """``ref[idx]`` (``jax.ref.get``; ``None`` reads all of it)."""
    return ref[... if idx is None else idx]


def set(ref: Ref, idx, value) -> None:   # noqa: A001 - JAX's name
    """``ref[idx] = value`` (``jax.ref.set``)."""
    ref[... if idx is None else idx] = value


def swap(ref: Ref, idx, value):
    """``ref[idx] = value``, returning the previous value (``jax.ref.swap``)."""
    return ref.swap(value, ... if idx is None else idx)


def addupdate(ref: Ref, idx, x) -> None:
    """``ref[idx] += x`` (``jax.ref.addupdate``)."""
    ref.addupdate(x, ... if idx is None else idx)


__all__ = ["AbstractRef", "Ref", "addupdate", "empty_ref", "free_ref", "freeze", "get", "new_ref", "set", "swap"]
